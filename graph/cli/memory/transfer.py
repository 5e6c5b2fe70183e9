"""`engram memory export / import`: a user's memories as an editable `memory.md` (or JSON), their
procedures as an editable `learnings.md`, and an edited file applied back after a person
confirms the changes."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from engram.graph.cli.memory.options import (
    All,
    Data,
    Forgotten,
    Json,
    Superseded,
    User,
    Yes,
    command,
)
from engram.graph.cli.memory.support import (
    SHORT_ID,
    CliError,
    all_memories,
    decode_utf8,
    err,
    esc,
    open_backend,
    out,
    print_json,
    read_stdin_text,
    shown,
    user_or_default,
)

if TYPE_CHECKING:  # loaded when the commands run, not for help
    from engram.stores.memory.markdown.importer import ImportPlan


@command
def export(
    user: User = None,
    out_file: Annotated[
        Path | None,
        typer.Option("--out", "-o", metavar="FILE", help="Write here instead of stdout."),
    ] = None,
    forgotten: Forgotten = False,
    superseded: Superseded = False,
    all_: All = False,
    learnings: Annotated[
        bool,
        typer.Option(
            "--learnings",
            help="Export the procedures (steps that worked) as an editable learnings.md.",
        ),
    ] = False,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Export as a readable, editable memory.md (categories as sections, ids in comments)."""
    from engram.stores.memory.markdown.format import render_markdown
    from engram.stores.memory.markdown.learnings import render_learnings
    from engram.stores.memory.types import utc_now

    if learnings and as_json:
        raise CliError("--learnings writes Markdown; leave out --json", code=2)
    user_id = user_or_default(user)
    with open_backend(data) as backend:
        memories = all_memories(backend, user_id)
    if learnings:
        text = render_learnings(user_id, memories, exported_at=utc_now().isoformat())
    elif as_json:
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
        sys.stdout.write(shown(text) if sys.stdout.isatty() else text)
        return
    out_file.write_text(text, encoding="utf-8")
    err.print(
        f"wrote {out_file}; edit it, then: "
        f"engram memory import {out_file} --user {shown(shlex.quote(user_id))}",
        markup=False,
        highlight=False,
    )


@command
def import_(
    file: Annotated[
        Path, typer.Argument(help="An edited memory.md or learnings.md ('-' reads stdin).")
    ],
    user: User = None,
    yes: Yes = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the changes, apply nothing.")
    ] = False,
    as_json: Json = False,
    data: Data = None,
) -> None:
    """Apply an edited memory.md or learnings.md: shows the changes, then asks before applying
    them."""
    from engram.stores.memory.markdown.format import MarkdownError, parse_markdown
    from engram.stores.memory.markdown.importer import apply_import, plan_import
    from engram.stores.memory.markdown.learnings import (
        is_learnings,
        parse_learnings,
        procedures_of,
    )
    from engram.stores.memory.types import utc_now
    from engram.stores.memory.users import memories_steps
    from engram.stores.steps import run_steps

    if as_json and not (yes or dry_run):
        raise CliError(
            "importing asks for confirmation; with --json pass --yes or --dry-run", code=2
        )
    user_id = user_or_default(user)
    if str(file) == "-":
        text = read_stdin_text("the memory.md")
    else:
        try:
            text = decode_utf8(file.read_bytes(), str(file))
        except OSError as exc:
            raise CliError(f"cannot read {file}: {exc.strerror or exc}") from exc
    with open_backend(data, create=True) as backend:
        try:
            memories = run_steps(backend.store, memories_steps(user_id))
            if is_learnings(text):  # only the procedures are compared with the file
                plan = plan_import(parse_learnings(text), procedures_of(memories), user_id)
            else:
                plan = plan_import(parse_markdown(text), memories, user_id)
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
        applied = apply_import(backend.store, user_id, plan, now=now)
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
    from engram.stores.memory.markdown.format import same_text

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
            out.print(f"    {shown(c.content)}", markup=False, highlight=False)
    for warning in plan.warnings:
        err.print(f"[yellow]note:[/yellow] {esc(warning)}", highlight=False)
    if not plan.changes:
        out.print("nothing to change")
