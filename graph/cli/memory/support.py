"""What the `engram memory` commands share: opening the data, finding a memory, printing.

The CLI works on the same data as the graph: by default the embedded folder
(`$ENGRAM_DATA_DIR`, else `./.engram`: `chroma/` and `checkpoints.sqlite`), or a Chroma
server when `$ENGRAM_CHROMA_URL` is set; `--data DIR` or `--data http://host:port` choose
another. Errors are `CliError`s, printed in one line with their exit code (1: not found or
nothing done, 2: bad input; `engram.graph.cli.commands.MEMORY_HELP` lists them).
"""

from __future__ import annotations

import gc
import json
import os
import re
import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from rich import box
from rich.markup import escape as markup_escape
from rich.table import Table
from rich.text import Text

from engram.graph.cli.output import CommandConsole
from engram.graph.extras import MissingExtraError
from engram.stores.paths import default_checkpoint_path, default_data_dir, postgres_url_from_env
from engram.stores.text import counted

# The store and the memory model are imported inside the functions that use them: help
# (`engram --help`, `engram memory --help`) then loads neither chromadb nor langgraph.
if TYPE_CHECKING:
    from langgraph.store.base import BaseStore, IndexConfig
    from pydantic import ValidationError

    from engram.graph.checkpoint import ThreadedSqliteSaver
    from engram.graph.postgres import ThreadedPostgresSaver
    from engram.stores.chroma.store import ChromaStore
    from engram.stores.maintenance.types import MaintenanceReport
    from engram.stores.memory.types import Memory
    from engram.stores.memory.users import UserStats

CHROMA_URL_ENV = "ENGRAM_CHROMA_URL"
DEFAULT_USER = "default"
"""The user of a command run without `--user`: the graph's own default (`Context.user_id`)."""
USER_ENV = "ENGRAM_USER"
"""What `--user` defaults to."""
SHORT_ID = 8
"""Characters of an id shown in tables; commands accept any unique prefix."""
STORED_KINDS = {
    "memories": "memories",
    "memory_hashes": "duplicate fingerprints",
    "episodes": "episodes (archived messages)",
    "memory_maintenance": "maintenance records",
    "threads": "thread records",
    "memory_jobs": "pending memory jobs",
}
"""What each of a user's namespaces holds, as the commands name it (`engram.stores.namespaces`)."""
STORED_KIND = {
    "memories": "memory",
    "memory_hashes": "duplicate fingerprint",
    "episodes": "episode (archived message)",
    "memory_maintenance": "maintenance record",
    "threads": "thread record",
    "memory_jobs": "pending memory job",
}
"""One of each `STORED_KINDS`, for a count of 1."""

out = CommandConsole(soft_wrap=False)
err = CommandConsole(stderr=True)

_process_ends_with_command = False
"""Set by `ends_with_command` (the `engram` console script), not when the app runs in-process."""


def ends_with_command() -> None:
    """Declare that this process ends when the command does, as the `engram` console script's
    does: what a command loads (chromadb, langgraph, the store) then lives until the end, so
    once the store is open the cyclic collector stops scanning it (`gc.freeze`), sparing the
    command, and its exit, full passes over those objects. A process that runs the app
    in-process (tests, `CliRunner`) keeps its collector as it is."""
    global _process_ends_with_command
    _process_ends_with_command = True


class CliError(Exception):
    """A command failed in a way the person can fix; `code` is the exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Backend:
    """The store the commands work on, and where its graph keeps its threads.

    A context manager: leaving it closes what it opened (the store's lexical index, the
    checkpointer's connection).
    """

    store: ChromaStore
    where: str
    """The data folder or server URL, for messages."""
    checkpoints: Path
    """The graph's SQLite checkpointer file (threads and running summaries)."""
    _saver: ThreadedSqliteSaver | ThreadedPostgresSaver | None = field(
        default=None, init=False, repr=False
    )
    _close_saver: Callable[[], None] | None = field(default=None, init=False, repr=False)

    def checkpointer(self) -> ThreadedSqliteSaver | ThreadedPostgresSaver | None:
        """The graph's checkpointer, opened on first use: PostgreSQL when
        `$ENGRAM_POSTGRES_URL` is set, else the SQLite file (None when there is no such file)."""
        if self._saver is None and (url := postgres_url_from_env()):
            from engram.graph.postgres import ThreadedPostgresSaver

            self._saver = ThreadedPostgresSaver.from_url(url)
            self._close_saver = self._saver.close
        elif self._saver is None and self.checkpoints.is_file():
            from engram.graph.checkpoint import ThreadedSqliteSaver

            self._saver = ThreadedSqliteSaver.from_path(self.checkpoints)
            self._close_saver = self._saver.close
        return self._saver

    def close(self) -> None:
        """Close the store and, if it was opened, the checkpointer."""
        self.store.close()
        if self._close_saver is not None:
            self._close_saver()
        self._saver = self._close_saver = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def cli_error(exc: Exception) -> CliError | None:
    """`exc` as an error the person can fix (printed in one line), or None for a bug: a
    `CliError`, or a missing embedding model (`EmbeddingModelNotFoundError`, whose message says
    where it looked and what to do; exit 1). That error is looked up among the loaded modules:
    importing the embeddings module for it would load numpy and langchain into every command,
    and an error of that module cannot have been raised before it loaded."""
    if isinstance(exc, CliError):
        return exc
    if isinstance(exc, MissingExtraError):
        return CliError(str(exc))
    embeddings = sys.modules.get("engram.stores.embeddings")
    if embeddings is not None and isinstance(exc, embeddings.EmbeddingModelNotFoundError):
        return CliError(str(exc))
    if isinstance(exc, _data_errors()):
        return CliError(
            f"could not use the engram data ({type(exc).__name__}: {exc}); nothing was read "
            "or answered from it: try again"
        )
    return None


def _data_errors() -> tuple[type[BaseException], ...]:
    """What the store raises when it cannot read or write the data (so a command cannot answer
    at all, which is never an empty answer): the data folder's lock timing out, SQLite, the
    lexical index, Chroma. Looked up among the loaded modules, as in `cli_error`."""
    errors: list[type[BaseException]] = [TimeoutError]
    for module, name in (
        ("sqlite3", "Error"),
        ("engram.stores.chroma.mirror", "LexicalIndexError"),
        ("chromadb.errors", "ChromaError"),
    ):
        if (found := getattr(sys.modules.get(module), name, None)) is not None:
            errors.append(found)
    return tuple(errors)


def open_backend(
    data: str | None, *, create: bool = False, embeds_few: bool = False, query: str | None = None
) -> Backend:
    """The store at `data` (a folder or `http(s)://host:port`), or the graph's default one; use
    it in a `with` block, which closes it. A command that embeds a text or two (`search`,
    `add`) passes `embeds_few`: its embedding model then starts without re-laying out its
    weights and runs on one thread (`LocalEmbeddings(prepack_weights=False, threads=1)`), so it
    starts sooner. A search also passes its `query`, which the model then loads for and embeds
    while Chroma loads (`LocalEmbeddings.preload`): on a second core the query's vector is ready
    when the store is. (`add` does not: a duplicate, which it finds without embedding, would pay
    for the load.)

    Raises:
        CliError: The folder does not exist (unless `create`), or no server answers (exit 1);
            `data` is not a folder or a server URL (exit 2).
    """
    url = data if data and data.lower().startswith(("http://", "https://")) else None
    if data and url is None and (scheme := _URL_SCHEME.match(data)):
        raise CliError(
            f"--data {data}: unknown URL scheme {scheme[1]!r}; give a data folder, or a Chroma "
            "server as http://host:port or https://host:port",
            code=2,
        )
    if data is None:
        url = os.environ.get(CHROMA_URL_ENV) or None
    folder = Path(data) if data else default_data_dir()
    if not url and not create and not (folder / "chroma").is_dir():
        raise CliError(
            f"no engram data in {folder}/ (nothing has been stored there yet); pass --data DIR "
            "or set ENGRAM_DATA_DIR to the folder the graph uses"
        )
    index = _index(embeds_few, query)
    from engram.stores.chroma.store import ChromaStore

    if url:
        try:
            store = ChromaStore.from_url(url, index=index)
        except (ConnectionError, ValueError) as exc:
            raise CliError(str(exc), code=2 if isinstance(exc, ValueError) else 1) from exc
        return _loaded(Backend(store, url, default_checkpoint_path()))
    return _loaded(
        Backend(
            ChromaStore(path=folder / "chroma", index=index),
            f"{folder}/",
            folder / "checkpoints.sqlite",
        )
    )


def stored_counts(counts: dict[str, int]) -> str:
    """Counts per namespace root in words, e.g. "2 memories, 1 duplicate fingerprint"; a root
    an app added is named as it is."""
    return ", ".join(
        counted(n, STORED_KIND.get(root, root), STORED_KINDS.get(root, root))
        for root, n in counts.items()
    )


def read_stdin_text(what: str) -> str:
    """All of stdin, decoded as UTF-8 (a BOM is skipped).

    Raises:
        CliError: Stdin is not UTF-8 (exit 2).
    """
    return decode_utf8(sys.stdin.buffer.read(), f"{what} on stdin")


def decode_utf8(data: bytes, where: str) -> str:
    """`data` as UTF-8 text, a leading BOM skipped.

    Raises:
        CliError: The bytes are not UTF-8 (exit 2); the message says where and how to fix it.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CliError(
            f"{where} is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}): "
            "save it as UTF-8 and try again",
            code=2,
        ) from None


def validation_message(exc: ValidationError) -> str:
    """What a pydantic model refused, in a line per field, without pydantic's decoration."""
    return "; ".join(str(error["msg"]).removeprefix("Value error, ") for error in exc.errors())


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Characters that steer a terminal or reorder text (escape sequences, NUL, bidi overrides); a
tab and a line break are left as they are."""


def shown(text: str) -> str:
    r"""`text` with every control character written out (`\x1b` for ESC): what people
    stored is printed, never obeyed by the terminal.

    Example:
        >>> shown("red\x1b[31m alert\x00")
        'red\\x1b[31m alert\\x00'
    """
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def esc(text: str) -> str:
    """`text` to put in rich markup: control characters written out (`shown`), markup
    escaped."""
    return markup_escape(shown(text))


def known_users(store: BaseStore) -> list[str]:
    """Users with memories."""
    from engram.stores.memory.users import users_steps
    from engram.stores.steps import run_steps

    return run_steps(store, users_steps())


def all_memories(backend: Backend, user_id: str) -> list[Memory]:
    """Every memory of a user (any state). No memories is an answer only when the store also
    lists no memories namespace for the user: a read that found none while the namespace is
    there is read again, and is an error if it still finds none (never an empty answer).

    Raises:
        CliError: The user has nothing stored at all, or the memories could not be read
            consistently (exit 1).
    """
    from engram.stores.memory.users import readable_memories_steps
    from engram.stores.namespaces import memory_namespace
    from engram.stores.steps import run_steps

    memories, unreadable = run_steps(backend.store, readable_memories_steps(user_id))
    if (
        not memories
        and not unreadable
        and memory_namespace(user_id) in _stored_namespaces(backend, user_id)
    ):
        memories, unreadable = run_steps(backend.store, readable_memories_steps(user_id))
        if not memories and not unreadable:
            raise CliError(
                f"the memories of {user_id!r} in {backend.where} could not be read: the store "
                "lists them, yet reading them found none; nothing was answered: try again"
            )
    if unreadable:
        err.print(
            f"warning: {len(unreadable)} items of {user_id!r}'s memories are not memories (put "
            "there by something other than engram) and were skipped: "
            + shown(", ".join(unreadable[:5])),
            markup=False,
            highlight=False,
        )
    return memories


def ensure_user(backend: Backend, user_id: str) -> str:
    """The user id, when something is stored for that user.

    Raises:
        CliError: Nothing is stored for the user (exit 1).
    """
    _stored_namespaces(backend, user_id)
    return user_id


def _stored_namespaces(backend: Backend, user_id: str) -> list[tuple[str, ...]]:
    """The user's namespaces that hold something.

    Raises:
        CliError: None does: nothing is stored for the user (exit 1).
    """
    from engram.stores.memory.users import user_namespaces_steps
    from engram.stores.steps import run_steps

    namespaces = run_steps(backend.store, user_namespaces_steps(user_id))
    if not namespaces:
        raise unknown_user(backend, user_id)
    return namespaces


def unknown_user(backend: Backend, user_id: str) -> CliError:
    """The error for a user with nothing stored, naming the users that have memories."""
    users = known_users(backend.store)
    others = f"users with memories: {', '.join(users)}" if users else "no user has memories yet"
    return CliError(f"nothing is stored for user {user_id!r} in {backend.where} ({others})")


def given_user(user: str | None) -> str | None:
    """The user `--user` (or `$ENGRAM_USER`) names, None when neither is given.

    Raises:
        CliError: The id given is not a user id (exit 2, `user_id_problem`): empty or only
            whitespace (it never stands for the default user), or with whitespace at its start
            or end (never stripped: "alice " is not taken for "alice").
    """
    from engram.stores.namespaces import user_id_problem

    if user is None and os.environ.get(USER_ENV) == "":  # click reads it as unset
        user = ""
    if user is None or (problem := user_id_problem(user)) is None:
        return user
    if user.strip():
        fix = f"pass it without that whitespace (--user {shown(shlex.quote(user.strip()))})"
    else:
        fix = (
            f"pass the id of the user whose memories you mean (--user alice, or "
            f"{USER_ENV}=alice), or leave out both for the default user {DEFAULT_USER!r}"
        )
    raise CliError(f"--user (or ${USER_ENV}) {user!r} {problem}: {fix}", code=2)


def user_or_default(user: str | None) -> str:
    """The user `--user` (or `$ENGRAM_USER`) names, else the default user.

    Raises:
        CliError: The id given is empty or only whitespace (exit 2).
    """
    return given_user(user) or DEFAULT_USER


def resolve_id(backend: Backend, user_id: str, given: str) -> Memory:
    """The memory whose id is `given` or starts with it.

    Raises:
        CliError: No such memory (exit 1), or the prefix matches several (exit 2).
    """
    from engram.stores.memory.ids import AmbiguousIdError, memory_with_prefix
    from engram.stores.memory.long_term import LongTermMemory

    memory = LongTermMemory(backend.store).get(user_id, given)
    if memory is not None:
        return memory
    try:
        memory = memory_with_prefix(all_memories(backend, user_id), given)
    except AmbiguousIdError as exc:
        raise CliError(str(exc), code=2) from None
    if memory is not None:
        return memory
    raise CliError(
        f"no memory {given!r} for user {user_id!r}; "
        f"`engram memory list --user {shown(shlex.quote(user_id))} --all` "
        "shows the ids"
    )


_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


# -- printing -------------------------------------------------------------------------------------


def print_json(data: Any) -> None:
    """JSON on stdout (no colours, no wrapping)."""
    print(json.dumps(data, ensure_ascii=False, indent=2))


def memory_table(
    memories: list[Memory],
    *,
    title: str | None = None,
    scores: list[float] | None = None,
    show_state: bool = True,
) -> Table:
    """One row per memory: short id, category, importance, content, state, recalls, and the
    update date when the terminal is wide enough."""
    from engram.stores.memory.markdown.format import status_of

    table = Table(  # a title naming a user id or a query shows it as written, never as markup
        title=Text(title) if title is not None else None, box=box.SIMPLE_HEAD, pad_edge=False
    )
    table.add_column("id", style="cyan", no_wrap=True)
    if scores is not None:
        table.add_column("score", justify="right", no_wrap=True)
    table.add_column("category", no_wrap=True)
    table.add_column("imp.", justify="right", no_wrap=True)
    table.add_column("content", overflow="fold", ratio=1, min_width=20)
    if show_state:
        table.add_column("state", no_wrap=True)
    table.add_column("recalls", justify="right", no_wrap=True)
    dated = out.width >= 100  # a narrow terminal keeps the room for the content
    if dated:
        table.add_column("updated", no_wrap=True)
    for n, memory in enumerate(memories):
        row: list[str | Text] = [memory.id[:SHORT_ID]]
        if scores is not None:
            row.append(f"{scores[n]:.3f}")
        row += [memory.category, f"{memory.importance:.2f}", Text(shown(memory.content))]
        if show_state:
            row.append(status_of(memory))
        row.append(str(memory.access_count))
        if dated:
            row.append(memory.updated_at[:10])
        table.add_row(*row, style="dim" if status_of(memory) != "current" else None)
    return table


def stats_table(found: list[UserStats], where: str) -> Table:
    """One user: a field per row; several: one row per user."""
    table = Table(title=Text(f"memories in {where}"), box=box.SIMPLE_HEAD, pad_edge=False)
    if len(found) == 1:
        [s] = found
        table.add_column(Text(shown(s.user_id)), style="bold")
        table.add_column("", overflow="fold")
        mean = f"{s.mean_importance:.2f}" if s.mean_importance is not None else "-"
        rows = [
            ("active", str(s.active)),
            ("by category", ", ".join(f"{c} {n}" for c, n in s.by_category.items()) or "-"),
            ("forgotten", str(s.forgotten)),
            ("superseded", str(s.superseded)),
            ("mean importance", mean),
            ("never recalled", str(s.never_recalled)),
            ("oldest / newest", f"{(s.oldest or '-')[:10]} / {(s.newest or '-')[:10]}"),
            *(
                (STORED_KINDS.get(root, root), str(n))
                for root, n in s.namespaces.items()
                if root != "memories"
            ),
        ]
        for name, value in rows:
            table.add_row(name, Text(value))
        return table
    table.add_column("user", style="cyan", overflow="fold")
    for column in ("active", "forgotten", "superseded", "episodes", "threads"):
        table.add_column(column, justify="right", no_wrap=True)
    for s in found:
        table.add_row(
            Text(shown(s.user_id)),
            str(s.active),
            str(s.forgotten),
            str(s.superseded),
            str(s.namespaces.get("episodes", 0)),
            str(s.namespaces.get("threads", 0)),
        )
    return table


def maintenance_table(report: MaintenanceReport) -> Table:
    """What a maintenance run changed, per action."""
    verb = "would change" if report.dry_run else "changed"
    table = Table(
        box=box.SIMPLE_HEAD,
        title=Text(
            f"maintenance of {report.user_id!r}: {counted(report.changed, 'memory', 'memories')} "
            f"{verb} "
            f"(of {report.active_before} active)"
        ),
    )
    table.add_column("action")
    table.add_column("count", justify="right")
    table.add_column("ids", overflow="fold", max_width=80)
    rows = [
        ("expired (TTL)", report.expired),
        ("forgotten (relevance < 0.1)", report.forgotten),
        ("importance lowered (< 0.3)", [x.memory_id for x in report.lowered]),
        ("compressed (originals)", [i for c in report.compressed for i in c.sources]),
        ("compressed (new)", [i for c in report.compressed for i in c.created]),
        ("capped", report.capped),
        ("skipped (written meanwhile)", report.skipped),
        ("archived messages deleted (oldest above the cap)", report.episodes_deleted),
    ]
    for action, ids in rows:
        table.add_row(action, str(len(ids)), " ".join(i[:SHORT_ID] for i in ids))
    return table


def _loaded(backend: Backend) -> Backend:
    """The backend, once what opening it loaded is spared the collector (`ends_with_command`)."""
    if _process_ends_with_command:
        gc.freeze()
    return backend


def _index(embeds_few: bool, query: str | None) -> IndexConfig:
    """The graph's index (`default_index`) with an embedder that loads on first use (listing
    or exporting memories needs no model), or at once for a search's `query`."""
    from engram.stores.embeddings import LocalEmbeddings

    if embeds_few or query is not None:
        embeddings = LocalEmbeddings(prepack_weights=False, threads=1)
    else:
        embeddings = LocalEmbeddings()
    if query is not None:
        embeddings.preload([query])  # chromadb, imported next, takes longer than the model
    from engram.stores.chroma.store import default_index

    return default_index(embeddings)
