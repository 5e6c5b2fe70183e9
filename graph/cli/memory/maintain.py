"""`engram memory maintain`: forgetting, the cap, TTLs and compression over one user's memories
or everyone's (`engram.stores.maintenance.maintain`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

import typer

from engram.graph.cli.memory.options import Data, Json, User, command
from engram.graph.cli.memory.support import (
    DEFAULT_USER,
    CliError,
    ensure_user,
    err,
    esc,
    given_user,
    known_users,
    maintenance_table,
    open_backend,
    out,
    print_json,
)

if TYPE_CHECKING:  # loaded when the command runs, not for help
    from engram.stores.maintenance.types import CompressedDraft, Compressor, MaintenanceReport
    from engram.stores.memory.types import Memory


@command
def maintain(
    user: User = None,
    all_users: Annotated[
        bool, typer.Option("--all-users", help="Every user with memories.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report, change nothing.")] = False,
    max_memories: Annotated[
        int, typer.Option(metavar="N", min=0, help="Active memories kept per user; 0: no cap.")
    ] = 10_000,
    max_episodes: Annotated[
        int,
        typer.Option(
            metavar="N", min=0,
            help="Archived messages kept per user; the oldest above it are deleted. 0: no cap.",
        ),
    ] = 20_000,
    ttl: Annotated[
        list[str] | None,
        typer.Option(
            metavar="CATEGORY=DAYS",
            help="Forget memories of a category not confirmed for DAYS (repeatable).",
        ),
    ] = None,
    compress: Annotated[
        bool, typer.Option(help="Compress old, rarely used memories (needs a memory model).")
    ] = True,
    model: Annotated[
        str | None,
        typer.Option(
            metavar="MODEL",
            envvar="ENGRAM_MEMORY_MODEL",
            show_default=False,
            help=(
                "The memory model for compression: provider:model, an OpenAI-compatible "
                "server's base URL (http://host:port/v1[#model]), local, local:0.5b, "
                "local:1.5b, a .gguf path, or module:attr."
            ),
        ),
    ] = None,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Forget what faded (relevance decay), cap the count, expire TTLs, compress old memories."""
    from engram.stores.maintenance.maintain import maintain as run_maintenance
    from engram.stores.maintenance.types import MaintenanceSettings

    user = given_user(user)
    if all_users and user:
        raise CliError("give --user or --all-users, not both", code=2)
    try:
        settings = MaintenanceSettings(
            max_memories=max_memories or None,
            max_episodes=max_episodes or None,
            ttl_days=_ttls(ttl or []),
        )
    except ValueError as exc:
        raise CliError(str(exc), code=2) from exc
    with open_backend(data) as backend:
        users = (
            known_users(backend.store)
            if all_users
            else [ensure_user(backend, user or DEFAULT_USER)]
        )
        compressor = _compressor(model if compress else None, dry_run=dry_run)
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
    _print_reports(reports, as_json=as_json, all_users=all_users)


def _print_reports(reports: list[MaintenanceReport], *, as_json: bool, all_users: bool) -> None:
    """The runs' reports: JSON (a list with --all-users), or a table and the compression's
    outcome per user."""
    if as_json:
        print_json([r.to_dict() for r in reports] if all_users else reports[0].to_dict())
        return
    for report in reports:
        out.print(maintenance_table(report))
        out.print(f"compression: {report.compression}", markup=False, highlight=False)
        for failure in report.failures:
            err.print(f"[yellow]compression failed:[/yellow] {esc(failure)}", highlight=False)


def _compressor(spec: str | None, *, dry_run: bool) -> Compressor | None:
    """The compressor for `--model`; in a dry run one that stands for it without loading it,
    since a dry run calls no model (and so needs no API key)."""
    if not spec:
        return None
    if dry_run:
        return _UncalledCompressor(spec)
    # imported here: chat model support costs every other command a second at start-up
    from engram.graph.models import ModelSpecError, load_chat_model_option
    from engram.nodes.model.compress import make_compressor

    try:
        memory_model = load_chat_model_option(spec, "--model")
    except ModelSpecError as exc:
        raise CliError(str(exc), code=2) from exc
    return make_compressor(memory_model) if memory_model else None


@dataclass(frozen=True)
class _UncalledCompressor:
    """The memory model `--model` names, in a dry run: maintenance reports what it would
    compress and never calls it."""

    spec: str

    def compress(self, category: str, memories: Sequence[Memory]) -> list[CompressedDraft]:
        raise RuntimeError(f"a dry run calls no model, not even {self.spec}")

    async def acompress(self, category: str, memories: Sequence[Memory]) -> list[CompressedDraft]:
        return self.compress(category, memories)


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
