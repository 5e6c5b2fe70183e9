"""`engram memory list / search / show / stats`: the commands that only read.

Ids can be shortened to any unique prefix, as shown in the tables. Only `delete` is
irreversible, and it asks first (`--yes` skips the question); `forget`, maintenance and a bullet
removed from an imported `memory.md` are undone by `restore`.
"""


from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from engram.graph.cli.memory.options import (
    CATEGORY_HELP,
    All,
    Data,
    Forgotten,
    Json,
    Superseded,
    User,
    command,
)
from engram.graph.cli.memory.support import (
    SHORT_ID,
    CliError,
    all_memories,
    ensure_user,
    esc,
    given_user,
    known_users,
    memory_table,
    open_backend,
    out,
    print_json,
    resolve_id,
    shown,
    stats_table,
    user_or_default,
)
from engram.stores.memory.categories import CATEGORIES, Category
from engram.stores.text import counted

if TYPE_CHECKING:
    from engram.stores.memory.types import Memory


@command
def list_(
    user: User = None,
    category: Annotated[
        list[str] | None,
        typer.Option("--category", "-c", metavar="CATEGORY", help=CATEGORY_HELP),
    ] = None,
    forgotten: Forgotten = False,
    superseded: Superseded = False,
    all_: All = False,
    limit: Annotated[int, typer.Option(metavar="N", help="Show at most this many.")] = 100,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """List a user's memories, most recently updated first (current ones unless asked)."""
    user_id = user_or_default(user)
    wanted = _categories(category)
    with open_backend(data) as backend:
        memories = all_memories(backend, user_id)
    shown = [
        m
        for m in memories
        if (not wanted or m.category in wanted)
        and (m.current or superseded or all_)
        and (not m.forgotten or forgotten or all_)
    ]
    shown.sort(key=lambda m: m.updated_at, reverse=True)
    if as_json:
        print_json([m.to_value() for m in shown[:limit]])
        return
    title = f"{_memories(len(shown))} of {user_id!r}" + (
        f" (first {limit})" if len(shown) > limit else ""
    )
    out.print(memory_table(shown[:limit], title=title, show_state=superseded or forgotten or all_))


@command
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    user: User = None,
    k: Annotated[int, typer.Option("-k", metavar="N", help="How many results at most.")] = 5,
    category: Annotated[
        list[str] | None,
        typer.Option("--category", "-c", metavar="CATEGORY", help=CATEGORY_HELP),
    ] = None,
    forgotten: Forgotten = False,
    superseded: Superseded = False,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Recall memories as the graph would, best first (does not count as a recall)."""
    from engram.stores.memory.long_term import LongTermMemory

    user_id = user_or_default(user)
    with open_backend(data, embeds_few=True, query=query) as backend:
        found = LongTermMemory(backend.store).search(
            user_id,
            query,
            k,
            categories=_categories(category),
            include_forgotten=forgotten,
            include_superseded=superseded,
            touch=False,
        )
        if not found:
            ensure_user(backend, user_id)  # an unknown user is an error, not an empty result
    if as_json:
        print_json(
            [
                {
                    "score": s.score,
                    "relevance": s.relevance,
                    "similarity": s.similarity,
                    "recency": s.recency,
                    **s.memory.to_value(),
                }
                for s in found
            ]
        )
        return
    out.print(
        memory_table(
            [s.memory for s in found],
            scores=[s.score for s in found],
            show_state=forgotten or superseded,
            title=f"{_memories(len(found))} of {user_id!r} for {query!r}",
        )
    )


@command
def show(
    memory_id: Annotated[
        str, typer.Argument(metavar="ID", help="A memory id (or a unique prefix).")
    ],
    user: User = None,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Show one memory: every field, its history and what maintenance did to it.

    The history is every version of the same attribute, oldest first: the older values this
    memory replaced (for a compressed memory, those compressed into it) and the newer ones that
    replaced it, each with its date, id, state and text.
    """
    from engram.stores.memory.history import version_history
    from engram.stores.memory.manage.journal import JournalEntry
    from engram.stores.memory.markdown.format import status_of
    from engram.stores.namespaces import journal_namespace

    user_id = user_or_default(user)
    with open_backend(data) as backend:
        memory = resolve_id(backend, user_id, memory_id)
        entry_item = backend.store.get(journal_namespace(user_id), memory.id)
        replaced = memory.supersedes or memory.superseded_by
        versions = version_history(memory, all_memories(backend, user_id) if replaced else [])
    entry = JournalEntry.model_validate(entry_item.value) if entry_item else None
    if as_json:
        print_json(
            {
                **memory.to_value(),
                "maintenance": entry.model_dump(mode="json") if entry else None,
                "history": [{**v.to_value(), "state": status_of(v)} for v in versions],
            }
        )
        return
    out.print(
        f"[bold cyan]{memory.id}[/bold cyan]  [bold]{memory.category}[/bold]  {status_of(memory)}"
    )
    out.print(shown(memory.content), markup=False, highlight=False)
    fields = memory.to_value()
    for name in (
        "importance",
        "confidence",
        "access_count",
        "last_accessed",
        "key",
        "structured_data",
        "source_thread_id",
        "source_message_ids",
        "valid_from",
        "valid_until",
        "supersedes",
        "superseded_by",
        "created_at",
        "updated_at",
    ):
        if fields.get(name) not in (None, [], {}):
            out.print(f"  [dim]{name}:[/dim] {esc(str(fields[name]))}", highlight=False)
    if entry:
        out.print(
            f"  [dim]maintenance:[/dim] {esc(str(entry.model_dump(exclude_defaults=True)))}",
            highlight=False,
        )
    if len(versions) > 1:
        _print_history(memory, versions)


@command
def stats(
    user: User = None,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Counts per state and category, for one user or (without --user) for every user."""
    from engram.stores.memory.users import stats_steps
    from engram.stores.steps import run_steps

    user = given_user(user)
    with open_backend(data) as backend:
        users = [ensure_user(backend, user)] if user else known_users(backend.store)
        found = [run_steps(backend.store, stats_steps(u)) for u in users]
    if as_json:
        print_json([s.to_dict() for s in found] if user is None else found[0].to_dict())
        return
    out.print(stats_table(found, backend.where))


def _categories(values: list[str] | None) -> list[Category]:
    """`--category` values, checked."""
    for value in values or []:
        if value not in CATEGORIES:
            raise CliError(
                f"unknown category {value!r}: use one of {', '.join(CATEGORIES)}", code=2
            )
    return list(values or [])  # type: ignore[arg-type]


def _print_history(memory: Memory, versions: list[Memory]) -> None:
    """The versions of `memory`'s attribute, oldest first, one line each."""
    out.print("  [dim]history, oldest first:[/dim]", highlight=False)
    for version in versions:
        this = "  (this memory)" if version.id == memory.id else ""
        out.print(f"    {_version_line(version)}{this}", markup=False, highlight=False)


def _version_line(version: Memory) -> str:
    """When a version was written, its id, its state and its text, e.g. "2026-05-30 09:12
    8620b45a superseded 2026-06-01 12:00 by 7bd5bacc: Alice prefers dark mode"."""
    from engram.stores.memory.markdown.format import status_of

    state = status_of(version)
    if state == "superseded":
        state += f" {_minute(version.valid_until or version.updated_at)}"
        if version.superseded_by:
            state += f" by {version.superseded_by[:SHORT_ID]}"
    written = _minute(version.created_at)
    return f"{written} {version.id[:SHORT_ID]} {state}: {shown(version.content)}"


def _minute(timestamp: str) -> str:
    """An ISO 8601 time to the minute: "2026-05-30 09:12" (UTC, as stored)."""
    return timestamp[:16].replace("T", " ")


def _memories(count: int) -> str:
    return counted(count, "memory", "memories")
