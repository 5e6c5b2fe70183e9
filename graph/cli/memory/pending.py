"""`engram memory pending / approve / reject`: the memories waiting for a user's approval
(`Context.confirm_memories`), saved or discarded by hand."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Annotated

import typer

from engram.graph.cli.memory.options import Data, Json, User, command
from engram.graph.cli.memory.support import (
    SHORT_ID,
    Backend,
    CliError,
    esc,
    open_backend,
    out,
    print_json,
    shown,
    user_or_default,
)

if TYPE_CHECKING:  # loaded when the commands run, not for help
    from engram.stores.memory.pending import PendingMemories, PendingMemory

Ids = Annotated[
    list[str] | None,
    typer.Argument(metavar="ID...", show_default=False, help="Pending ids (or unique prefixes)."),
]
All = Annotated[bool, typer.Option("--all", help="Every memory waiting for --user.")]


@command
def pending(user: User = None, as_json: Json = False, data: Data = None) -> None:
    """List the memories waiting for the user's approval, oldest first."""
    user_id = user_or_default(user)
    with open_backend(data) as backend:
        waiting = _pending(backend).list(user_id)
    if as_json:
        print_json([p.model_dump() for p in waiting])
        return
    if not waiting:
        out.print(f"no pending memories for user {user_id!r}", markup=False, highlight=False)
        return
    for p in waiting:
        out.print(
            f"[cyan]{p.id[:SHORT_ID]}[/cyan] {esc(f'[{p.category}]')} {esc(p.content)}",
            highlight=False,
        )
    who = shown(shlex.quote(user_id))
    out.print(
        f"save with: engram memory approve ID --user {who}; "
        f"discard with: engram memory reject ID --user {who}",
        markup=False,
        highlight=False,
    )


@command
def approve(
    ids: Ids = None, all_: All = False, user: User = None, as_json: Json = False, data: Data = None
) -> None:
    """Save waiting memories (through the write policy, as if extraction had written them)."""
    user_id = user_or_default(user)
    done = []
    with open_backend(data) as backend:
        queue = _pending(backend)
        for waiting in _chosen(queue, user_id, ids, all_):
            result = queue.approve(user_id, waiting.id)
            if result is not None:
                done.append({"pending_id": waiting.id, "action": result.action,
                             "memory_id": result.memory.id if result.memory else None})
                if not as_json:
                    out.print(f"saved [cyan]{waiting.id[:SHORT_ID]}[/cyan] "
                              f"({result.action}): {esc(waiting.content)}", highlight=False)
    if as_json:
        print_json(done)


@command
def reject(
    ids: Ids = None, all_: All = False, user: User = None, as_json: Json = False, data: Data = None
) -> None:
    """Discard waiting memories: deleted and purged from the data folder's files."""
    user_id = user_or_default(user)
    with open_backend(data) as backend:
        queue = _pending(backend)
        done = queue.reject_many(user_id, [p.id for p in _chosen(queue, user_id, ids, all_)])
    if not as_json:
        for pending_id in done:
            out.print(f"discarded [cyan]{pending_id[:SHORT_ID]}[/cyan]", highlight=False)
    if as_json:
        print_json({"rejected": done})


def _pending(backend: Backend) -> PendingMemories:
    from engram.stores.memory.pending import PendingMemories

    return PendingMemories(backend.store)


def _chosen(
    queue: PendingMemories, user_id: str, ids: list[str] | None, all_: bool
) -> list[PendingMemory]:
    """The waiting memories the command names: every one (`--all`) or each id or unique prefix.

    Raises:
        CliError: Neither or both given (exit 2), nothing waits (exit 1), an id matches none
            (exit 1) or several (exit 2).
    """
    from engram.stores.memory.ids import AmbiguousIdError, memory_with_prefix

    if bool(ids) == all_:
        raise CliError("give pending IDs, or --all (not both)", code=2)
    waiting = queue.list(user_id)
    if all_:
        if not waiting:
            raise CliError(f"no pending memories for user {user_id!r}")
        return waiting
    chosen = []
    for given in ids or []:
        if not given.strip():
            raise CliError("an empty ID names no pending memory", code=2)
        try:
            found = memory_with_prefix(waiting, given)
        except AmbiguousIdError as exc:
            raise CliError(str(exc), code=2) from None
        if found is None:
            raise CliError(
                f"no pending memory {given!r} for user {user_id!r}; "
                f"`engram memory pending --user {shown(shlex.quote(user_id))}` shows the ids"
            )
        chosen.append(found)
    return chosen
