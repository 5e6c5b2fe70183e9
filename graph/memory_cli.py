"""`engram memory`: list, search, edit, export and maintain a user's long-term memories.

Every command takes `--user` (default: the graph's default user, "default"), `--json` (machine-
readable output instead of tables) and `--data` (a data folder or a Chroma server URL; default:
the graph's own, see `engram.graph.memory_cli_support`). Ids can be shortened to any unique
prefix, as shown in the tables. Exit codes: 0 done, 1 not found or nothing done, 2 bad usage.

Only `delete` is irreversible, and it asks first (`--yes` skips the question); `forget`,
maintenance and a bullet removed from an imported `memory.md` are undone by `restore`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from rich.markup import escape as esc

from engram.graph.memory_cli_support import (
    DEFAULT_USER,
    SHORT_ID,
    Backend,
    CliError,
    all_memories,
    checked_user,
    ensure_user,
    err,
    guess_candidate,
    known_users,
    maintenance_table,
    memory_table,
    open_backend,
    out,
    print_json,
    resolve_id,
    stats_table,
)
from engram.graph.models import ModelSpecError, load_chat_model_option
from engram.nodes.compress import make_compressor
from engram.stores.maintenance import maintain as run_maintenance
from engram.stores.maintenance_types import JournalEntry, MaintenanceSettings
from engram.stores.memories import LongTermMemory
from engram.stores.memory_import import ImportPlan, import_steps, plan_import
from engram.stores.memory_markdown import (
    MarkdownError,
    parse_markdown,
    render_markdown,
    same_text,
    status_of,
)
from engram.stores.memory_types import CATEGORIES, Category, MemoryCandidate, utc_now
from engram.stores.namespaces import journal_namespace
from engram.stores.steps import run_steps
from engram.stores.user_data import (
    delete_user,
    memories_steps,
    stats_steps,
)

app = typer.Typer(help="Inspect and manage a user's long-term memories.", no_args_is_help=True)

F = TypeVar("F", bound=Callable[..., Any])

User = Annotated[
    str | None,
    typer.Option(
        "--user",
        "-u",
        envvar="ENGRAM_USER",
        show_default=False,
        help=f"Whose memories (default: {DEFAULT_USER!r}, the graph's default user).",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
Data = Annotated[
    str | None,
    typer.Option(
        "--data",
        show_default=False,
        help="Data folder, or a Chroma server URL http://host:port (default: "
        "$ENGRAM_CHROMA_URL, else $ENGRAM_DATA_DIR, else ./.engram).",
    ),
]
Forgotten = Annotated[bool, typer.Option("--forgotten", help="Include forgotten memories.")]
Superseded = Annotated[
    bool, typer.Option("--superseded", help="Include superseded ones (history).")
]
All = Annotated[bool, typer.Option("--all", help="Include forgotten and superseded memories.")]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]


def command(func: F) -> F:
    """Register a command whose `CliError`s become one-line messages and exit codes."""

    @wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except CliError as exc:
            err.print(f"[red]error:[/red] {esc(str(exc))}", highlight=False)
            raise typer.Exit(exc.code) from None

    app.command(func.__name__.rstrip("_"))(run)
    return func


@command
def list_(
    user: User = None,
    category: Annotated[
        list[str] | None, typer.Option("--category", "-c", help="Only these categories.")
    ] = None,
    forgotten: Forgotten = False,
    superseded: Superseded = False,
    all_: All = False,
    limit: Annotated[int, typer.Option(help="Show at most this many.")] = 100,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """List a user's memories, most recently updated first (current ones unless asked)."""
    user_id = user or DEFAULT_USER
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
    title = f"{len(shown)} memories of {user_id!r}" + (
        f" (first {limit})" if len(shown) > limit else ""
    )
    out.print(memory_table(shown[:limit], title=title, show_state=superseded or forgotten or all_))


@command
def search(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    user: User = None,
    k: Annotated[int, typer.Option("-k", help="How many results at most.")] = 5,
    category: Annotated[list[str] | None, typer.Option("--category", "-c")] = None,
    forgotten: Forgotten = False,
    superseded: Superseded = False,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Recall memories as the graph would, best first (does not count as a recall)."""
    user_id = user or DEFAULT_USER
    with open_backend(data) as backend:
        ensure_user(backend, user_id)  # an unknown user is an error, not an empty result
        found = LongTermMemory(backend.store).search(
            user_id,
            query,
            k,
            categories=_categories(category),
            include_forgotten=forgotten,
            include_superseded=superseded,
            touch=False,
        )
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
            title=f"{len(found)} memories of {user_id!r} for {query!r}",
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
    """Show one memory: every field, its history and what maintenance did to it."""
    user_id = user or DEFAULT_USER
    with open_backend(data) as backend:
        memory = resolve_id(backend, user_id, memory_id)
        entry_item = backend.store.get(journal_namespace(user_id), memory.id)
    entry = JournalEntry.model_validate(entry_item.value) if entry_item else None
    if as_json:
        print_json(
            {**memory.to_value(), "maintenance": entry.model_dump(mode="json") if entry else None}
        )
        return
    out.print(
        f"[bold cyan]{memory.id}[/bold cyan]  [bold]{memory.category}[/bold]  {status_of(memory)}"
    )
    out.print(memory.content, markup=False, highlight=False)
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


@command
def add(
    text: Annotated[str, typer.Argument(help='The memory, e.g. "Alice prefers dark mode".')],
    user: User = None,
    category: Annotated[
        Category | None,
        typer.Option(
            "--category",
            "-c",
            show_default=False,
            help='Default: guessed by the offline rules ("I prefer ...", "Alice prefers ..." -> preference), else fact.',
        ),
    ] = None,
    importance: Annotated[
        float | None,
        typer.Option(
            min=0.0,
            max=1.0,
            show_default=False,
            help="0-1 (default: the category's, e.g. preference 0.9, fact 0.8).",
        ),
    ] = None,
    key: Annotated[
        str | None,
        typer.Option(help="Attribute slug, e.g. preference.editor: a later value supersedes."),
    ] = None,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Add a memory through the write policy (secrets redacted, duplicates merged)."""
    user_id = checked_user(user or DEFAULT_USER)
    guess = guess_candidate(text)
    chosen = category or (guess.category if guess else "fact")
    same = guess is not None and guess.category == chosen
    candidate = MemoryCandidate(
        content=text,
        category=chosen,
        importance=importance,
        confidence=1.0,
        key=key or (guess.key if same else None),
        structured_data=guess.structured_data if same and not key else None,
    )
    with open_backend(data, create=True) as backend:
        [result] = LongTermMemory(backend.store, min_importance=0.0).upsert(user_id, [candidate])
    if as_json:
        print_json(
            {
                "action": result.action,
                "reason": result.reason,
                "memory": result.memory.to_value() if result.memory else None,
                "superseded": [m.id for m in result.superseded],
            }
        )
    if result.memory is None:
        raise CliError(f"nothing stored: {result.reason}")
    if as_json:
        return
    how = "" if category else (" (category guessed; pass --category to choose)")
    out.print(
        f"{result.action} [cyan]{result.memory.id}[/cyan] {esc(f'[{result.memory.category}]')}"
        f"{how}: {esc(result.memory.content)}",
        highlight=False,
    )
    for old in result.superseded:
        out.print(f"  supersedes [cyan]{old.id}[/cyan]: {esc(old.content)}", highlight=False)


@command
def forget(
    memory_id: Annotated[str, typer.Argument(metavar="ID")],
    user: User = None,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Forget a memory: no longer recalled, kept and restorable."""
    user_id = user or DEFAULT_USER
    with open_backend(data) as backend:
        found = resolve_id(backend, user_id, memory_id)
        memory = LongTermMemory(backend.store).forget(user_id, found.id)
    if memory is None:
        raise _deleted_meanwhile(found.id)
    if as_json:
        print_json(memory.to_value())
        return
    out.print(
        f"forgot [cyan]{memory.id}[/cyan]: {esc(memory.content)}\n"
        f"undo with: engram memory restore {memory.id[:SHORT_ID]} --user {user_id}",
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
    user_id = user or DEFAULT_USER
    with open_backend(data) as backend:
        found = resolve_id(backend, user_id, memory_id)
        result = LongTermMemory(backend.store).restore(user_id, found.id)
    if result is None:
        raise _deleted_meanwhile(found.id)
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
    if not result.changed and not result.memory.current:
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
    if (memory_id is None) == (not all_):
        raise CliError("give a memory ID, or --all --user USER (not both)", code=2)
    if all_ and user is None:
        raise CliError("delete --all needs an explicit --user", code=2)
    if as_json and not yes:
        raise CliError("deleting asks for confirmation; with --json pass --yes", code=2)
    user_id = user or DEFAULT_USER
    with open_backend(data) as backend:
        if all_:
            _delete_all(backend, checked_user(user_id), yes=yes, as_json=as_json)
            return
        memory = resolve_id(backend, user_id, memory_id or "")
        if not yes:
            out.print(f"[{memory.category}] {memory.content}", markup=False, highlight=False)
            typer.confirm(
                f"Delete memory {memory.id} for good (forget keeps it restorable)?", abort=True
            )
        deleted = LongTermMemory(backend.store).delete(user_id, memory.id)
    if as_json:
        print_json({"deleted": [memory.id] if deleted else []})
    else:
        out.print(f"deleted [cyan]{memory.id}[/cyan]")


def _delete_all(backend: Backend, user_id: str, *, yes: bool, as_json: bool) -> None:
    ensure_user(backend, user_id)
    if not yes:
        stats = run_steps(backend.store, stats_steps(user_id))
        counts = ", ".join(f"{n} {root}" for root, n in stats.namespaces.items())
        typer.confirm(
            f"Delete everything of {user_id!r} in {backend.where} ({counts}) for good?", abort=True
        )
    report = delete_user(backend.store, user_id, checkpointer=backend.checkpointer())
    if as_json:
        print_json(report.to_dict())
        return
    counts = ", ".join(f"{n} {root}" for root, n in report.deleted.items())
    out.print(
        f"deleted everything of {user_id!r}: {counts}; {len(report.threads)} threads "
        "(messages and summaries)",
        markup=False,
        highlight=False,
    )
    if report.threads_not_deleted:
        err.print(
            f"[yellow]warning:[/yellow] no checkpointer at {esc(str(backend.checkpoints))}: "
            f"threads {esc(', '.join(report.threads_not_deleted))} were not deleted there",
            highlight=False,
        )


@command
def stats(
    user: User = None,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Counts per state and category, for one user or (without --user) for every user."""
    with open_backend(data) as backend:
        users = [ensure_user(backend, user)] if user else known_users(backend.store)
        found = [run_steps(backend.store, stats_steps(u)) for u in users]
    if as_json:
        print_json([s.to_dict() for s in found] if user is None else found[0].to_dict())
        return
    out.print(stats_table(found, backend.where))


@command
def export(
    user: User = None,
    out_file: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write here instead of stdout.")
    ] = None,
    forgotten: Forgotten = False,
    superseded: Superseded = False,
    all_: All = False,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Export as a readable, editable memory.md (categories as sections, ids in comments)."""
    user_id = user or DEFAULT_USER
    with open_backend(data) as backend:
        memories = all_memories(backend, user_id)
    if as_json:
        keep = [
            m
            for m in memories
            if (m.current or superseded or all_) and (not m.forgotten or forgotten or all_)
        ]
        text = json.dumps([m.to_value() for m in keep], ensure_ascii=False, indent=2) + "\n"
    else:
        text = render_markdown(
            user_id,
            memories,
            exported_at=utc_now().isoformat(),
            include_forgotten=forgotten or all_,
            include_superseded=superseded or all_,
        )
    if out_file is None:
        sys.stdout.write(text)
        return
    out_file.write_text(text, encoding="utf-8")
    err.print(
        f"wrote {out_file}; edit it, then: engram memory import {out_file} --user {user_id}",
        markup=False,
        highlight=False,
    )


@command
def import_(
    file: Annotated[Path, typer.Argument(help="An edited memory.md ('-' reads stdin).")],
    user: User = None,
    yes: Yes = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the changes, apply nothing.")
    ] = False,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Apply an edited memory.md: shows the changes, then asks before applying them."""
    if as_json and not (yes or dry_run):
        raise CliError(
            "importing asks for confirmation; with --json pass --yes or --dry-run", code=2
        )
    user_id = checked_user(user or DEFAULT_USER)
    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {file}: {exc.strerror or exc}") from exc
    with open_backend(data, create=True) as backend:
        try:
            plan = plan_import(
                parse_markdown(text), run_steps(backend.store, memories_steps(user_id)), user_id
            )
        except MarkdownError as exc:
            raise CliError(f"{file}: {exc}", code=2) from exc
        if not as_json:
            _print_plan(plan)
        if not plan.changes or dry_run:
            if as_json:
                print_json({"plan": plan.to_dict(), "applied": []})
            return
        if not yes:
            typer.confirm(f"Apply these {len(plan.changes)} changes?", abort=True)
        now = utc_now().isoformat()
        applied = run_steps(backend.store, import_steps(user_id, plan, now=now))
    if as_json:
        print_json(
            {
                "plan": plan.to_dict(),
                "applied": [
                    {
                        "action": a.change.action,
                        "outcome": a.outcome,
                        "memory_id": a.memory_id,
                        "note": a.note,
                    }
                    for a in applied
                ],
            }
        )
        return
    for a in applied:
        note = f" ({a.note})" if a.note else ""
        out.print(
            f"{a.outcome} {(a.memory_id or '')[:SHORT_ID]}{note}", markup=False, highlight=False
        )


def _print_plan(plan: ImportPlan) -> None:
    signs = {
        "add": "[green]+ add[/green]",
        "edit": "[yellow]~ edit[/yellow]",
        "forget": "[red]- forget[/red]",
        "restore": "[green]↺ restore[/green]",
    }
    for c in plan.changes:
        where = f"line {c.line}" if c.line else "not in the file"
        ident = f" {c.memory_id[:SHORT_ID]}" if c.memory_id else ""
        out.print(f"{signs[c.action]}{ident} {esc(f'[{c.category}]')} ({where})", highlight=False)
        if c.action == "edit":
            if c.before_category != c.category:
                out.print(
                    f"    category: {c.before_category} -> {c.category}",
                    markup=False,
                    highlight=False,
                )
            if c.before is not None and not same_text(c.before, c.content):
                out.print(f"    [red]- {esc(c.before)}[/red]", highlight=False)
                out.print(f"    [green]+ {esc(c.content)}[/green]", highlight=False)
        else:
            out.print(f"    {c.content}", markup=False, highlight=False)
    for warning in plan.warnings:
        err.print(f"[yellow]note:[/yellow] {esc(warning)}", highlight=False)
    if not plan.changes:
        out.print("nothing to change")


@command
def maintain(
    user: User = None,
    all_users: Annotated[
        bool, typer.Option("--all-users", help="Every user with memories.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report, change nothing.")] = False,
    max_memories: Annotated[
        int, typer.Option(min=0, help="Active memories kept per user (seed 002); 0: no cap.")
    ] = 10_000,
    ttl: Annotated[
        list[str] | None,
        typer.Option(
            help="CATEGORY=DAYS: forget memories of a category not confirmed for DAYS (repeatable)."
        ),
    ] = None,
    compress: Annotated[
        bool, typer.Option(help="Compress old, rarely used memories (needs a memory model).")
    ] = True,
    model: Annotated[
        str | None,
        typer.Option(
            envvar="ENGRAM_MEMORY_MODEL",
            show_default=False,
            help="The memory model for compression (provider:model or module:attr).",
        ),
    ] = None,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Forget what faded (seed 003), cap the count, expire TTLs, compress old memories."""
    if all_users and user:
        raise CliError("give --user or --all-users, not both", code=2)
    try:
        settings = MaintenanceSettings(max_memories=max_memories or None, ttl_days=_ttls(ttl or []))
    except ValueError as exc:
        raise CliError(str(exc), code=2) from exc
    with open_backend(data) as backend:
        users = (
            known_users(backend.store)
            if all_users
            else [ensure_user(backend, user or DEFAULT_USER)]
        )
        try:
            memory_model = load_chat_model_option(model, "--model") if compress else None
        except ModelSpecError as exc:
            raise CliError(str(exc), code=2) from exc
        compressor = make_compressor(memory_model) if memory_model else None
        reports = [
            run_maintenance(
                backend.store, u, settings=settings, compressor=compressor, dry_run=dry_run
            )
            for u in users
        ]
    for report in reports:
        if not compress:
            report.compression = "skipped: --no-compress"
        elif report.compression.startswith("skipped: no memory model"):
            report.compression += "; pass --model or set ENGRAM_MEMORY_MODEL"
    if as_json:
        print_json([r.to_dict() for r in reports] if all_users else reports[0].to_dict())
        return
    for report in reports:
        out.print(maintenance_table(report))
        out.print(f"compression: {report.compression}", markup=False, highlight=False)
        for failure in report.failures:
            err.print(f"[yellow]compression failed:[/yellow] {esc(failure)}", highlight=False)


def _deleted_meanwhile(memory_id: str) -> CliError:
    """The error for a memory found by its id and gone when the command wrote to it."""
    return CliError(f"memory {memory_id} was deleted while this command ran; nothing changed")


def _ttls(items: list[str]) -> dict[str, float]:
    ttls = {}
    for item in items:
        category, sep, days = item.partition("=")
        try:
            ttls[category.strip()] = float(days)
        except ValueError:
            sep = ""
        if not sep:
            raise CliError(f"--ttl {item!r}: write CATEGORY=DAYS, e.g. --ttl goal=180", code=2)
    return ttls


def _categories(values: list[str] | None) -> list[Category]:
    """`--category` values, checked."""
    for value in values or []:
        if value not in CATEGORIES:
            raise CliError(
                f"unknown category {value!r}: use one of {', '.join(CATEGORIES)}", code=2
            )
    return list(values or [])  # type: ignore[arg-type]
