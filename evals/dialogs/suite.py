"""Eval dialogs: the pydantic schema of a dialog file and its YAML loader.

A dialog is data: sessions of scripted user/assistant turns, the long-term memories they must
produce, what must never be stored, probes (a query after a session and the memories it must
recall) and conflicts (a later memory superseding an earlier one). `evals/README.md` documents
the format with a complete example.

Example:
    >>> from engram.evals.dialogs.suite import bundled_suite_path, load_suite
    >>> dialogs = load_suite(bundled_suite_path())
    >>> len(dialogs) >= 24
    True
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from engram.evals.dialogs.metrics import normalize

Category = Literal["preference", "fact", "project", "lesson", "skill", "goal"]
"""The long-term memory categories (`engram.stores.memory.categories.CATEGORIES`)."""

ForbiddenKind = Literal["secret", "chitchat", "incognito"]

_SLUG = r"^[A-Za-z0-9][A-Za-z0-9_.-]*$"
_TAG = r"^[a-z0-9][a-z0-9-]*$"


class DialogFileError(ValueError):
    """A dialog file could not be read or does not validate; the message names file and field."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)


class _Loader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans (only true/false): a turn saying `yes` or `no` stays text."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)


class Turn(_Model):
    """One message of a session, replayed as is (assistant turns are the scripted replies)."""

    role: Literal["user", "assistant"]
    content: str = Field(min_length=1)


class Session(_Model):
    """One conversation thread; sessions of a dialog are replayed in order, each as a new thread."""

    id: str = Field(pattern=_SLUG)
    date: dt.datetime | dt.date
    """When the session took place (ISO date or datetime); sessions are in chronological order."""
    incognito: bool = False
    """A temporary chat: nothing said in it may be stored, and nothing may be recalled in it."""
    chitchat: bool = False
    """Nothing in this session is worth remembering: any memory taken from it is a chit-chat memory."""
    turns: list[Turn] = Field(min_length=2)
    """Alternating user and assistant turns, starting with the user, ending with the assistant."""

    @model_validator(mode="after")
    def _alternates(self) -> Session:
        for index, turn in enumerate(self.turns):
            wanted = "user" if index % 2 == 0 else "assistant"
            if turn.role != wanted:
                raise ValueError(
                    f"turns.{index}.role: expected '{wanted}': turns alternate user/assistant, "
                    "starting with the user (merge consecutive messages of one speaker)"
                )
        if len(self.turns) % 2:
            raise ValueError(
                "turns: the last turn must be the assistant's reply to the last user turn"
            )
        return self

    def exchanges(self) -> list[tuple[str, str]]:
        """The session as (user message, scripted assistant reply) pairs, in order."""
        return [
            (self.turns[i].content, self.turns[i + 1].content) for i in range(0, len(self.turns), 2)
        ]

    @property
    def user_turns(self) -> int:
        """How many user messages the session has."""
        return len(self.turns) // 2


class ExpectedMemory(_Model):
    """A long-term memory the dialog must produce, as a careful annotator states it."""

    id: str = Field(pattern=_SLUG)
    category: Category
    content: str = Field(min_length=1)
    """The memory in the annotator's words (for reports; matching uses `details`)."""
    details: list[str] = Field(min_length=1)
    """Key details that must survive verbatim in the stored memory: names, versions, numbers, paths.
    Each must occur in a turn of a non-incognito session."""
    key: str | None = Field(default=None, pattern=_SLUG)
    """Optional subject/attribute slug, e.g. `preference.frontend_framework`."""
    after_session: str | None = None
    """Id of the session after which the memory must exist. When omitted, the loader fills in the
    first session by whose end every detail has been said."""


class ForbiddenText(_Model):
    """A literal string that must never appear in any stored memory."""

    text: str = Field(min_length=1)
    kind: ForbiddenKind
    """`secret` (keys, passwords, card numbers: said in a user turn), `chitchat` (small talk),
    `incognito` (said only in incognito sessions)."""


class Probe(_Model):
    """A recall check: after `after_session`, `query` must recall the `expect`ed memories in the top k."""

    id: str = Field(pattern=_SLUG)
    after_session: str
    query: str = Field(min_length=1)
    expect: list[str] = Field(min_length=1)
    """Ids of expected memories, each current (not superseded) by the end of `after_session`."""


class Conflict(_Model):
    """A later memory superseding an earlier one: `old` must no longer be current once `new` exists."""

    old: str
    new: str


class Dialog(_Model):
    """One eval dialog: sessions to replay and everything to check after each of them."""

    id: str = Field(pattern=_SLUG)
    language: Literal["en", "zh"]
    description: str = Field(min_length=1)
    tags: list[Annotated[str, Field(pattern=_TAG)]] = Field(default_factory=list)
    """Lowercase slugs saying what the dialog exercises (see evals/README.md for the bundled ones)."""
    sessions: list[Session] = Field(min_length=1)
    memories: list[ExpectedMemory] = Field(default_factory=list)
    must_not_store: list[ForbiddenText] = Field(default_factory=list)
    probes: list[Probe] = Field(default_factory=list)
    conflicts: list[Conflict] = Field(default_factory=list)

    @model_validator(mode="after")
    def _cross_references(self) -> Dialog:
        errors = list(_check(self))
        if errors:
            raise ValueError("\n".join(f"{path}: {message}" for path, message in errors))
        return self

    @property
    def user_turns(self) -> int:
        """User messages over all sessions."""
        return sum(session.user_turns for session in self.sessions)

    def session(self, session_id: str) -> Session:
        """The session with this id (KeyError if none)."""
        for session in self.sessions:
            if session.id == session_id:
                return session
        raise KeyError(session_id)

    def memory(self, memory_id: str) -> ExpectedMemory:
        """The expected memory with this id (KeyError if none)."""
        for memory in self.memories:
            if memory.id == memory_id:
                return memory
        raise KeyError(memory_id)

    def expected_after(self, session_id: str) -> list[ExpectedMemory]:
        """Expected memories that must exist once `session_id` has ended (superseded ones included)."""
        limit = self._index(session_id)
        return [m for m in self.memories if self._index(m.after_session or "") <= limit]

    def conflicts_after(self, session_id: str) -> list[Conflict]:
        """Conflicts whose new memory must exist once `session_id` has ended."""
        limit = self._index(session_id)
        return [
            c
            for c in self.conflicts
            if self._index(self.memory(c.new).after_session or "") <= limit
        ]

    def probes_after(self, session_id: str) -> list[Probe]:
        """Probes to run right after `session_id` ends."""
        return [p for p in self.probes if p.after_session == session_id]

    def _index(self, session_id: str) -> int:
        return [s.id for s in self.sessions].index(session_id)


def load_dialog(path: str | Path) -> Dialog:
    """Read and validate one YAML dialog file.

    Raises:
        DialogFileError: the file is unreadable, not YAML, or invalid; one line per problem,
            each `<file>: <field path>: <what is wrong>`.
    """
    path = Path(path)
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except OSError as exc:
        raise DialogFileError(f"{path}: cannot read the dialog file: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise DialogFileError(f"{path}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise DialogFileError(
            f"{path}: a dialog file must hold one mapping (id, language, sessions, ...)"
        )
    try:
        return Dialog.model_validate(data)
    except ValidationError as exc:
        raise DialogFileError("\n".join(_format_errors(path, exc))) from exc


def load_suite(path: str | Path) -> list[Dialog]:
    """Load a dialog file, or every `*.yaml` / `*.yml` under a folder (recursively, sorted by path).

    Raises:
        DialogFileError: a file is invalid, two dialogs share an id, or the folder has no dialogs.
    """
    path = Path(path)
    files = [path] if path.is_file() else sorted(_dialog_files(path))
    if not files:
        raise DialogFileError(
            f"{path}: no dialog files (*.yaml, *.yml) found: pass a file or a folder of them"
        )
    dialogs: list[Dialog] = []
    seen: dict[str, Path] = {}
    for file in files:
        dialog = load_dialog(file)
        if dialog.id in seen:
            raise DialogFileError(
                f"{file}: id: dialog id '{dialog.id}' is already used by {seen[dialog.id]}"
            )
        seen[dialog.id] = file
        dialogs.append(dialog)
    return dialogs


def bundled_suite_path() -> Path:
    """The folder of the dialog suites shipped with engram."""
    return Path(__file__).resolve().parents[1] / "suites"


def _dialog_files(folder: Path) -> Iterator[Path]:
    if not folder.is_dir():
        raise DialogFileError(f"{folder}: no such file or folder")
    for pattern in ("*.yaml", "*.yml"):
        yield from folder.rglob(pattern)


def _format_errors(path: Path, exc: ValidationError) -> list[str]:
    lines = []
    for error in exc.errors(include_url=False):
        loc = ".".join(str(part) for part in error["loc"])
        if error["type"] != "value_error":
            lines.append(f"{path}: {loc}: {error['msg']}")
            continue
        # Our validators report "<path relative to the validated model>: <problem>" per line.
        for line in error["msg"].removeprefix("Value error, ").splitlines():
            lines.append(f"{path}: {loc}.{line}" if loc else f"{path}: {line}")
    return lines


def _check(dialog: Dialog) -> Iterator[tuple[str, str]]:
    """Cross-field checks, as (field path, problem) pairs; fills in derived `after_session`s."""
    yield from _unique(dialog)
    yield from _chronology(dialog)
    said = [[normalize(t.content) for t in s.turns] for s in dialog.sessions]
    due: dict[str, int] = {}
    yield from _memories(dialog, said, due)
    yield from _forbidden(dialog, said)
    superseded: dict[str, int] = {}
    yield from _conflicts(dialog, due, superseded)
    yield from _probes(dialog, due, superseded)


def _unique(dialog: Dialog) -> Iterator[tuple[str, str]]:
    groups = (
        ("sessions", dialog.sessions),
        ("memories", dialog.memories),
        ("probes", dialog.probes),
    )
    for field, items in groups:
        seen: set[str] = set()
        for i, item in enumerate(items):
            if item.id in seen:
                yield f"{field}.{i}.id", f"duplicate id '{item.id}'"
            seen.add(item.id)
    if len(set(dialog.tags)) != len(dialog.tags):
        yield "tags", "duplicate tag"


def _chronology(dialog: Dialog) -> Iterator[tuple[str, str]]:
    def instant(value: dt.datetime | dt.date) -> dt.datetime:
        if isinstance(value, dt.datetime):
            return value.replace(tzinfo=None)
        return dt.datetime.combine(value, dt.time())

    for i in range(1, len(dialog.sessions)):
        if instant(dialog.sessions[i].date) < instant(dialog.sessions[i - 1].date):
            yield f"sessions.{i}.date", "sessions must be in chronological order"


def _memories(
    dialog: Dialog, said: list[list[str]], due: dict[str, int]
) -> Iterator[tuple[str, str]]:
    """Details are said in non-incognito sessions; fills `due` (memory id -> session index)."""
    index = {s.id: i for i, s in enumerate(dialog.sessions)}
    for m, memory in enumerate(dialog.memories):
        pending = {normalize(d) for d in memory.details}
        first = None
        for i, session in enumerate(dialog.sessions):
            if not session.incognito:
                pending = {d for d in pending if not _in(d, said[i])}
                if not pending:
                    first = i
                    break
        if first is None:
            missing = [d for d in memory.details if normalize(d) in pending]
            yield (
                f"memories.{m}.details",
                (
                    f"{missing} never said in a non-incognito session: details must be verbatim "
                    "from the turns"
                ),
            )
            continue
        if memory.after_session is None:
            memory.after_session = dialog.sessions[first].id
        elif memory.after_session not in index:
            yield f"memories.{m}.after_session", f"unknown session id '{memory.after_session}'"
            continue
        elif index[memory.after_session] < first:
            yield (
                f"memories.{m}.after_session",
                (
                    f"'{memory.after_session}' ends before every detail has been said "
                    f"(first possible: '{dialog.sessions[first].id}')"
                ),
            )
            continue
        due[memory.id] = index[memory.after_session]
        if dialog.sessions[first].chitchat:
            yield f"memories.{m}", f"first said in chit-chat session '{dialog.sessions[first].id}'"


def _forbidden(dialog: Dialog, said: list[list[str]]) -> Iterator[tuple[str, str]]:
    users = [[normalize(t.content) for t in s.turns if t.role == "user"] for s in dialog.sessions]
    for f, item in enumerate(dialog.must_not_store):
        text = normalize(item.text)
        path = f"must_not_store.{f}.text"
        if item.kind == "secret" and not any(_in(text, u) for u in users):
            yield path, "a secret must be said verbatim in a user turn"
        elif item.kind == "chitchat" and not any(_in(text, s) for s in said):
            yield path, "never said in the dialog: chit-chat phrases are verbatim from the turns"
        elif item.kind == "incognito":
            where = {s.incognito for s, turns in zip(dialog.sessions, said) if _in(text, turns)}
            if True not in where:
                yield path, "never said in an incognito session"
            elif False in where:
                yield path, "also said in a non-incognito session, where storing it is allowed"
        for m, memory in enumerate(dialog.memories):
            if any(text in normalize(d) for d in memory.details):
                yield path, f"contained in a required detail of memories.{m}: the two contradict"


def _conflicts(
    dialog: Dialog, due: dict[str, int], superseded: dict[str, int]
) -> Iterator[tuple[str, str]]:
    """Conflicts reference valid memories in time order; fills `superseded` (old id -> index)."""
    known = {m.id for m in dialog.memories}
    for c, conflict in enumerate(dialog.conflicts):
        unknown = [f for f in ("old", "new") if getattr(conflict, f) not in known]
        for field in unknown:
            yield (
                f"conflicts.{c}.{field}",
                f"unknown expected memory id '{getattr(conflict, field)}'",
            )
        if unknown or conflict.old not in due or conflict.new not in due:
            continue
        old, new = dialog.memory(conflict.old), dialog.memory(conflict.new)
        if old.id == new.id:
            yield f"conflicts.{c}", "a memory cannot supersede itself"
        elif due[new.id] < due[old.id]:
            yield f"conflicts.{c}.new", f"'{new.id}' is due before the memory it supersedes"
        elif old.key and new.key and old.key != new.key:
            yield (
                f"conflicts.{c}",
                (f"keys differ ('{old.key}' vs '{new.key}'): a conflict is about one subject"),
            )
        else:
            superseded[old.id] = due[new.id]


def _probes(
    dialog: Dialog, due: dict[str, int], superseded: dict[str, int]
) -> Iterator[tuple[str, str]]:
    index = {s.id: i for i, s in enumerate(dialog.sessions)}
    known = {m.id for m in dialog.memories}
    for p, probe in enumerate(dialog.probes):
        if probe.after_session not in index:
            yield f"probes.{p}.after_session", f"unknown session id '{probe.after_session}'"
            continue
        at = index[probe.after_session]
        if dialog.sessions[at].incognito:
            yield f"probes.{p}.after_session", "probes run after non-incognito sessions"
        for e, memory_id in enumerate(probe.expect):
            if memory_id not in known:
                yield f"probes.{p}.expect.{e}", f"unknown expected memory id '{memory_id}'"
            elif memory_id in due and due[memory_id] > at:
                yield (
                    f"probes.{p}.expect.{e}",
                    (f"'{memory_id}' is not due until after '{probe.after_session}'"),
                )
            elif memory_id in superseded and superseded[memory_id] <= at:
                yield (
                    f"probes.{p}.expect.{e}",
                    (f"'{memory_id}' is superseded by then: expect the new memory"),
                )


def _in(fragment: str, turns: list[str]) -> bool:
    """Whether a normalised fragment occurs within one of the normalised turns."""
    return any(fragment in turn for turn in turns)
