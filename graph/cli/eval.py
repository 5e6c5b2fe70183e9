"""`engram eval`: run dialog suites or the LoCoMo retrieval benchmark and write reports.

The command bodies import `engram.evals` only when they run: `graph/` sits below `evals/` in
DESIGN's layering, and this module is the composition root that reaches up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.text import Text

app = typer.Typer(
    help="Run eval suites against the memory graph.",
    invoke_without_command=True,
    add_completion=False,
    rich_markup_mode=None,
)

DEFAULT_OUT = Path("eval-out")
"""Where the reports go without `--out`."""
_OUT_HELP = "Folder for report.json and report.html (created if needed)."
_STRICT_HELP = "Exit with code 1 when a target is missed (default: report it, exit 0)."


@app.callback()
def suites(
    ctx: typer.Context,
    suite: Annotated[
        Path | None,
        typer.Option(
            metavar="PATH",
            help="A dialog file or a folder of them (default: the bundled suites).",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            metavar="MODEL",
            help="The answering model to budget prompts for (its tokenizer and context window), "
            "e.g. openai:gpt-4o-mini. Replies stay scripted: it is never called.",
        ),
    ] = None,
    memory_model: Annotated[
        str | None,
        typer.Option(
            metavar="MODEL",
            help="The model that summarizes and extracts: provider:model, local, local:0.5b, "
            "local:1.5b or a .gguf path (default: offline built-ins).",
        ),
    ] = None,
    out: Annotated[Path, typer.Option(metavar="DIR", help=_OUT_HELP)] = DEFAULT_OUT,
    strict: Annotated[bool, typer.Option(help=_STRICT_HELP)] = False,
    jobs: Annotated[
        int | None,
        typer.Option(metavar="N", help="Dialogs replayed at once (default: cores, at most 4)."),
    ] = None,
    extraction: Annotated[
        str,
        typer.Option(
            metavar="MODE",
            help="Who writes memories: auto (rules without a memory model, review for local:* "
            "models, write for others), write, review or rules.",
        ),
    ] = "auto",
) -> None:
    """Replay dialog suites through the memory graph and report memory-quality metrics.

    With no options: the bundled suites (English and Chinese), offline, on a fresh embedded
    store per dialog; writes eval-out/report.json and eval-out/report.html.
    """
    if ctx.invoked_subcommand is not None:
        return
    from engram.evals.commands import default_jobs, suite_command

    _run(
        lambda console: suite_command(
            suite=suite,
            model=model,
            memory_model=memory_model,
            out=out,
            strict=strict,
            jobs=jobs if jobs is not None else default_jobs(),
            extraction=extraction,
            console=console,
        )
    )


@app.command()
def locomo(
    data: Annotated[
        Path,
        typer.Option(metavar="FILE", help="LoCoMo JSON (locomo10.json or a subset of it)."),
    ],
    conversations: Annotated[
        str | None,
        typer.Option(metavar="IDS", help="Comma-separated sample ids (default: all in the file)."),
    ] = None,
    mode: Annotated[
        str,
        typer.Option(
            metavar="engine|graph",
            help="engine: rank turns with engram's retriever; graph: ingest through the graph "
            "and score its recall path (slow).",
        ),
    ] = "engine",
    memory_model: Annotated[
        str | None,
        typer.Option(
            metavar="MODEL", help="Graph mode only: the model that summarizes and extracts."
        ),
    ] = None,
    out: Annotated[Path, typer.Option(metavar="DIR", help=_OUT_HELP)] = DEFAULT_OUT,
    strict: Annotated[bool, typer.Option(help=_STRICT_HELP)] = False,
) -> None:
    """LoCoMo retrieval: any@k / all@k / frac@k of the evidence turns, overall and by category."""
    if mode not in ("engine", "graph"):
        raise typer.BadParameter(f"must be engine or graph, got {mode!r}", param_hint="--mode")
    from engram.evals.commands import locomo_command

    chosen: Literal["engine", "graph"] = "engine" if mode == "engine" else "graph"
    _run(
        lambda console: locomo_command(
            data=data,
            conversations=conversations,
            mode=chosen,
            memory_model=memory_model,
            out=out,
            strict=strict,
            console=console,
        )
    )


def _run(command: Callable[[Console], int]) -> None:
    """Run a command body with warnings logged above the progress bar; setup errors print as
    one clear message and exit with code 2."""
    from rich.logging import RichHandler  # here: the memory commands never need it

    from engram.evals.commands import EvalSetupError

    console = Console()
    logging.basicConfig(
        level=logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=console, show_path=False, show_time=False)],
    )
    try:
        code = command(console)
    except EvalSetupError as exc:
        Console(stderr=True).print(Text("error: ", style="bold red") + Text(str(exc)))
        raise typer.Exit(2) from exc
    raise typer.Exit(code)
