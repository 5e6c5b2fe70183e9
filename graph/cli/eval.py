"""`engram eval`: run dialog suites, the LoCoMo benchmarks (retrieval, answer accuracy) or
LongMemEval, and write reports.

The command bodies import `engram.evals` only when they run: `graph/` sits below `evals/` in
the layers (docs/architecture.md), and this module is the composition root that reaches up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Literal

import typer
from rich.console import Console
from rich.text import Text

from engram.graph.cli.help import PlainCommand
from engram.graph.cli.output import CommandConsole

app = typer.Typer(
    help="Run eval suites against the memory graph.",
    invoke_without_command=True,
    add_completion=False,
    rich_markup_mode=None,
)

DEFAULT_OUT = Path("eval-out")
"""Where `engram eval`'s reports go without `--out`."""
LOCOMO_OUT = DEFAULT_OUT / "locomo"
"""Where `engram eval locomo`'s go: a folder of its own, so it never overwrites the suite's."""
LONGMEMEVAL_OUT = DEFAULT_OUT / "longmemeval"
"""Where `engram eval longmemeval`'s go."""
_OUT_HELP = "Folder for report.json and report.html (created if needed)."
_QA_OUT_HELP = (
    "Folder for report.json and report.html, and with --mode qa the journal and the stores "
    "(created if needed)."
)
_STRICT_HELP = "Exit with code 1 when a target is missed (default: report it, exit 0)."
_QA_MODEL_HELP = (
    "the model that answers each question: provider:model (e.g. openai:gpt-4o-mini), an "
    "OpenAI-compatible server's base URL (http://host:port/v1, or http://host:port/v1#model to "
    "name the model), local:0.5b, local:1.5b, a .gguf path."
)
_QA_JUDGE_HELP = "the model that grades each answer (default: the --model)."
_QA_BASELINES_HELP = (
    "comma-separated baselines answering the same questions: full-context, no-memory, "
    "retrieval (default: all three), or none."
)
_QA_EXCLUDE_HELP = (
    "a file of question ids to leave out, one per line (optionally with sha1:<8 hex> of "
    "the question text and a # comment); repeatable."
)
_QA_LIMIT_HELP = (
    "at most N questions in all, taken in turn from each category (file order within each)."
)
_QA_JOBS_HELP = (
    "model calls and histories at once (default: 1 with a local model, else the cores, "
    "at most 4)."
)



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
            help="The model that summarizes and extracts: provider:model, a server's base URL "
            "(http://host:port/v1[#model]), local, local:0.5b, local:1.5b or a .gguf path "
            "(default: offline built-ins).",
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


@app.command(cls=PlainCommand)
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
            metavar="engine|graph|qa",
            help="engine: rank turns with engram's retriever; graph: ingest through the graph "
            "and score its recall path (slow); qa: answer every question with --model from "
            "what engram recalls, graded by --judge (the published J protocol), beside the "
            "baselines.",
        ),
    ] = "engine",
    memory_model: Annotated[
        str | None,
        typer.Option(
            metavar="MODEL",
            help="Graph and qa modes: the model that summarizes and extracts (default: offline "
            "built-ins).",
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(metavar="MODEL", help=_qa_mode(_QA_MODEL_HELP))] = None,
    judge: Annotated[str | None, typer.Option(metavar="MODEL", help=_qa_mode(_QA_JUDGE_HELP))] = None,
    baselines: Annotated[
        str | None, typer.Option(metavar="NAMES", help=_qa_mode(_QA_BASELINES_HELP))
    ] = None,
    categories: Annotated[
        str | None,
        typer.Option(
            metavar="LIST",
            help="qa: LoCoMo categories by number or name (default 1,2,3,4; 5 is adversarial).",
        ),
    ] = None,
    exclude: Annotated[
        list[Path] | None, typer.Option(metavar="FILE", help=_qa_mode(_QA_EXCLUDE_HELP))
    ] = None,
    limit: Annotated[int | None, typer.Option(metavar="N", help=_qa_mode(_QA_LIMIT_HELP))] = None,
    jobs: Annotated[int | None, typer.Option(metavar="N", help=_qa_mode(_QA_JOBS_HELP))] = None,
    out: Annotated[Path, typer.Option(metavar="DIR", help=_QA_OUT_HELP)] = LOCOMO_OUT,
    strict: Annotated[bool, typer.Option(help=_STRICT_HELP)] = False,
) -> None:
    """LoCoMo: retrieval (any@k / all@k / frac@k of the evidence turns) or, with --mode qa,
    answer accuracy (J, F1, BLEU-1) beside full-context, no-memory and retrieval baselines."""
    if mode == "qa":
        from engram.evals.qa.command import QAOptions, qa_command

        options = QAOptions(
            benchmark="locomo", data=data, model=model, judge=judge, memory_model=memory_model,
            baselines=baselines, categories=categories, conversations=conversations,
            exclude=tuple(exclude or ()), limit=limit, jobs=jobs, out=out,
        )
        _run(lambda console: qa_command(options, console))
        return
    retrieval = _retrieval_mode(mode, {
        "--model": model, "--judge": judge, "--baselines": baselines,
        "--categories": categories, "--exclude": exclude, "--limit": limit, "--jobs": jobs,
    })
    from engram.evals.commands import locomo_command

    _run(lambda console: locomo_command(
        data=data, conversations=conversations, mode=retrieval, memory_model=memory_model,
        out=out, strict=strict, console=console,
    ))


def _retrieval_mode(mode: str, qa_only: dict[str, object]) -> Literal["engine", "graph"]:
    """`--mode` of a LoCoMo retrieval run, checked with the options only qa takes.

    Raises:
        typer.BadParameter: Another mode, or an option of qa given.
    """
    if mode not in ("engine", "graph"):
        raise typer.BadParameter(
            f"must be engine, graph or qa, got {mode!r}", param_hint="--mode"
        )
    if given := [name for name, value in qa_only.items() if value is not None]:
        raise typer.BadParameter(
            f"{', '.join(given)}: for --mode qa only", param_hint="--mode"
        )
    return "engine" if mode == "engine" else "graph"


@app.command(cls=PlainCommand)
def longmemeval(
    data: Annotated[
        Path,
        typer.Option(
            metavar="FILE", help="A LongMemEval JSON file (e.g. longmemeval_s.json or part of it)."
        ),
    ],
    model: Annotated[str | None, typer.Option(metavar="MODEL", help=_sentence(_QA_MODEL_HELP))] = None,
    judge: Annotated[str | None, typer.Option(metavar="MODEL", help=_sentence(_QA_JUDGE_HELP))] = None,
    memory_model: Annotated[
        str | None,
        typer.Option(
            metavar="MODEL",
            help="The model that summarizes and extracts (default: offline built-ins).",
        ),
    ] = None,
    baselines: Annotated[
        str | None, typer.Option(metavar="NAMES", help=_sentence(_QA_BASELINES_HELP))
    ] = None,
    question_types: Annotated[
        str | None,
        typer.Option(
            metavar="LIST",
            help="Comma-separated question types (default: all), e.g. "
            "multi-session,temporal-reasoning.",
        ),
    ] = None,
    exclude: Annotated[
        list[Path] | None, typer.Option(metavar="FILE", help=_sentence(_QA_EXCLUDE_HELP))
    ] = None,
    limit: Annotated[int | None, typer.Option(metavar="N", help=_sentence(_QA_LIMIT_HELP))] = None,
    jobs: Annotated[int | None, typer.Option(metavar="N", help=_sentence(_QA_JOBS_HELP))] = None,
    out: Annotated[
        Path,
        typer.Option(
            metavar="DIR",
            help="Folder for the reports, the journal and the stores (created if needed).",
        ),
    ] = LONGMEMEVAL_OUT,
) -> None:
    """LongMemEval answer accuracy: each question's sessions go through engram, then --model
    answers from what it recalls and --judge grades it (LongMemEval's judge prompts)."""
    from engram.evals.qa.command import QAOptions, qa_command

    options = QAOptions(
        benchmark="longmemeval", data=data, model=model, judge=judge, memory_model=memory_model,
        baselines=baselines, categories=question_types, exclude=tuple(exclude or ()),
        limit=limit, jobs=jobs, out=out,
    )
    _run(lambda console: qa_command(options, console))


def _run(command: Callable[[Console], int]) -> None:
    """Run a command body with warnings logged above the progress bar; setup errors print as
    one clear message and exit with code 2."""
    from rich.logging import RichHandler  # here: the memory commands never need it

    from engram.evals.commands import EvalSetupError

    console = CommandConsole()
    logging.basicConfig(
        level=logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=console, show_path=False, show_time=False)],
    )
    try:
        code = command(console)
    except EvalSetupError as exc:
        CommandConsole(stderr=True).print(Text("error: ", style="bold red") + Text(str(exc)))
        raise typer.Exit(2) from exc
    raise typer.Exit(code)


def _qa_mode(text: str) -> str:
    """A help text for an option of `locomo` that only `--mode qa` uses."""
    return f"qa: {text}"


def _sentence(text: str) -> str:
    """A help text as a sentence of its own."""
    return text[0].upper() + text[1:]
