"""`engram memory add / forget / restore / delete`: change a user's memories one by one, or
delete everything of a user."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from engram.graph.cli.memory.options import Data, Json, User, Yes, command
from engram.graph.cli.memory.support import (
    SHORT_ID,
    Backend,
    CliError,
    ensure_user,
    err,
    esc,
    given_user,
    open_backend,
    out,
    print_json,
    read_stdin_text,
    resolve_id,
    shown,
    stored_counts,
    user_or_default,
    validation_message,
)
from engram.stores.memory.categories import CATEGORIES, Category
from engram.stores.text import counted

if TYPE_CHECKING:  # loaded when the commands run, not for help
    from engram.stores.memory.long_term import LongTermMemory
    from engram.stores.memory.types import Memory, WriteResult

T = TypeVar("T")

_ADDED = {
    "created": "added",
    "superseded": "added",
    "merged": "merged into",
    "duplicate": "already stored, confirmed",
    "unchanged": "already stored",
}
"""What `add` did, as it prints it: the memory it names is the one stored now."""
ONLY_A_SECRET = (
    "nothing stored: the text is only a secret (a password, key or token), and secrets are never "
    "stored; write what to remember without the secret"
)
"""Why a memory the write policy dropped was not stored: with any importance kept, only a secret
is dropped (`add`, and the MCP server's `remember`)."""
_CATEGORY_HELP = (
    f"{', '.join(CATEGORIES)}. Default: guessed by the offline rules "
    '("I prefer ...", "Alice prefers ..." -> preference), else fact.'
)


@command
def add(
    text: Annotated[
        str,
        typer.Argument(
            help='The memory, e.g. "Alice prefers dark mode" (at most 2000 characters); '
            "'-' reads it from stdin."
        ),
    ],
    user: User = None,
    category: Annotated[
        Category | None,
        typer.Option(
            "--category",
            "-c",
            metavar="CATEGORY",
            show_default=False,
            help=_CATEGORY_HELP,
        ),
    ] = None,
    importance: Annotated[
        float | None,
        typer.Option(
            metavar="0-1",
            min=0.0,
            max=1.0,
            show_default=False,
            help="Default: the category's (e.g. preference 0.9, fact 0.8).",
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(
            metavar="SLUG",
            help="Attribute slug, e.g. preference.editor: a later value supersedes.",
        ),
    ] = None,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Add a memory through the write policy (secrets redacted, duplicates merged)."""
    user_id = user_or_default(user)
    if text == "-":
        text = read_stdin_text("the memory")
    # loaded here: importing the offline rules would slow every other command's start-up
    from pydantic import ValidationError

    from engram.nodes.extract.statement import statement_candidate
    from engram.stores.memory.long_term import LongTermMemory

    try:
        candidate = statement_candidate(text, category=category, importance=importance, key=key)
    except ValidationError as exc:
        raise CliError(f"nothing stored: {validation_message(exc)}", code=2) from exc
    with open_backend(data, create=True, embeds_few=True) as backend:
        [result] = LongTermMemory(backend.store, min_importance=0.0).upsert(user_id, [candidate])
    if as_json:
        print_json(
            {
                "action": result.action,
                "reason": result.reason,
                "memory": result.memory.to_value() if result.memory else None,
                "superseded": [m.id for m in result.superseded],
                "kept": [m.to_value() for m in result.kept],
            }
        )
    if result.memory is None:  # dropped: with any importance kept, only a secret is
        raise CliError(ONLY_A_SECRET, code=2)
    if not as_json:
        _print_write(result, result.memory, guessed=category is None)


def _print_write(result: WriteResult, memory: Memory, *, guessed: bool) -> None:
    """What `add` did, for a person: the memory, what it replaced and what it kept of that."""
    how = " (category guessed; pass --category to choose)" if guessed else ""
    out.print(
        f"{_ADDED[result.action]} [cyan]{memory.id}[/cyan] "
        f"{esc(f'[{memory.category}]')}{how}: {esc(memory.content)}",
        highlight=False,
    )
    for old in result.superseded:
        out.print(
            f"  replaces [cyan]{old.id}[/cyan]: {esc(old.content)} (kept as history)",
            highlight=False,
        )
    for rest in result.kept:
        out.print(
            f"  keeps [cyan]{rest.id}[/cyan]: {esc(rest.content)} (what the change does not touch, "
            "still current)",
            highlight=False,
        )


@command
def forget(
    memory_id: Annotated[str, typer.Argument(metavar="ID")],
    user: User = None,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Forget a memory: no longer recalled, kept and restorable."""
    user_id = user_or_default(user)
    memory = _change(data, user_id, memory_id, lambda ltm, u, i: ltm.forget(u, i))
    if as_json:
        print_json(memory.to_value())
        return
    out.print(
        f"forgot [cyan]{memory.id}[/cyan]: {esc(memory.content)}\n"
        f"undo with: engram memory restore {memory.id[:SHORT_ID]} --user "
        + esc(shlex.quote(user_id)),
        highlight=False,
    )


@command
def restore(
    memory_id: Annotated[str, typer.Argument(metavar="ID")],
    user: User = None,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Undo forgetting or maintenance (importance, compression) on a memory."""
    user_id = user_or_default(user)
    result = _change(data, user_id, memory_id, lambda ltm, u, i: ltm.restore(u, i))
    if as_json:
        print_json(
            {
                "memory": result.memory.to_value(),
                "actions": result.actions,
                "also_restored": result.also_restored,
                "reason": result.reason,
            }
        )
    elif result.changed:
        out.print(
            f"restored [cyan]{result.memory.id}[/cyan]: {esc('; '.join(result.actions))}",
            highlight=False,
        )
        for other in result.also_restored:
            out.print(f"  also restored [cyan]{other}[/cyan]")
    else:
        out.print(result.reason, markup=False, highlight=False)
    if not result.changed:  # nothing done: the exit code says so, as for every command
        raise typer.Exit(1)


@command
def delete(
    memory_id: Annotated[str | None, typer.Argument(metavar="ID", show_default=False)] = None,
    all_: Annotated[
        bool,
        typer.Option("--all", help="Everything of --user: memories, episodes, threads, summaries."),
    ] = False,
    user: User = None,
    yes: Yes = False,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Delete one memory, or everything of a user (--all), for good: not restorable."""
    from engram.stores.memory.long_term import LongTermMemory

    if (memory_id is None) == (not all_):
        raise CliError("give a memory ID, or --all --user USER (not both)", code=2)
    if all_ and given_user(user) is None:
        raise CliError("delete --all needs an explicit --user", code=2)
    if as_json and not yes:
        raise CliError("deleting asks for confirmation; with --json pass --yes", code=2)
    user_id = user_or_default(user)
    with open_backend(data) as backend:
        if all_:
            _delete_all(backend, user_id, yes=yes, as_json=as_json)
            return
        memory = resolve_id(backend, user_id, memory_id or "")
        if not yes:
            out.print(f"[{memory.category}] {shown(memory.content)}", markup=False, highlight=False)
            typer.confirm(
                f"Delete memory {memory.id} for good (forget keeps it restorable)?", abort=True
            )
        deleted = LongTermMemory(backend.store).delete(user_id, memory.id)
    if as_json:
        print_json({"deleted": [memory.id] if deleted else []})
    else:
        out.print(f"deleted [cyan]{memory.id}[/cyan]")


def _delete_all(backend: Backend, user_id: str, *, yes: bool, as_json: bool) -> None:
    from engram.stores.memory.users import delete_user, stats_steps
    from engram.stores.steps import run_steps

    ensure_user(backend, user_id)
    if not yes:
        stats = run_steps(backend.store, stats_steps(user_id))
        typer.confirm(
            f"Delete everything of {user_id!r} in {backend.where} "
            f"({stored_counts(stats.namespaces)}) for good?",
            abort=True,
        )
    report = delete_user(backend.store, user_id, checkpointer=backend.checkpointer())
    if as_json:
        print_json(report.to_dict())
        return
    out.print(
        f"deleted everything of {user_id!r}: {stored_counts(report.deleted)}; "
        f"{counted(len(report.threads), 'thread')} (messages and summaries)",
        markup=False,
        highlight=False,
    )
    if report.threads_not_deleted:
        err.print(
            f"[yellow]warning:[/yellow] no checkpointer at {esc(str(backend.checkpoints))}: "
            f"threads {esc(', '.join(report.threads_not_deleted))} were not deleted there",
            highlight=False,
        )


def _change(
    data: str | None,
    user_id: str,
    memory_id: str,
    change: Callable[[LongTermMemory, str, str], T | None],
) -> T:
    """Find the user's memory by its id (or a unique prefix) and apply `change` to it.

    Raises:
        CliError: No such memory, or it was deleted while the command ran (nothing changed).
    """
    from engram.stores.memory.long_term import LongTermMemory

    with open_backend(data) as backend:
        found = resolve_id(backend, user_id, memory_id)
        result = change(LongTermMemory(backend.store), user_id, found.id)
    if result is None:
        raise CliError(f"memory {found.id} was deleted while this command ran; nothing changed")
    return result
