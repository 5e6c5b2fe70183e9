"""What `engram eval locomo --mode qa` and `engram eval longmemeval` do: check every option,
load the models, run with a progress bar, write and print the report.

Every mistake (a missing file, a model spec that does not load, an unknown category or baseline)
is an `EvalSetupError` before any model is called.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from langchain_core.language_models import BaseChatModel
from rich.console import Console

from engram.evals.commands import (
    EvalSetupError,
    check_out,
    conversation_ids,
    default_jobs,
    finish,
    load_embeddings,
)
from engram.evals.qa.answer import BASELINES
from engram.evals.qa.dataset import QAHistory, first_questions
from engram.evals.qa.exclusions import (
    Excluded,
    Exclusion,
    apply_exclusions,
    read_exclusions,
)
from engram.evals.qa.journal import file_digest
from engram.evals.qa.protocol import LOCOMO, LONGMEMEVAL
from engram.evals.qa.report import qa_report
from engram.evals.qa.run import Progress, QASettings, arun_qa, steps_total
from engram.evals.report.console import turn_progress
from engram.stores.text import counted

Benchmark = Literal["locomo", "longmemeval"]


@dataclass(frozen=True, kw_only=True)
class QAOptions:
    """The command line of an answer-accuracy run, as given."""

    benchmark: Benchmark
    data: Path
    model: str | None
    judge: str | None = None
    memory_model: str | None = None
    baselines: str | None = None
    categories: str | None = None
    conversations: str | None = None
    exclude: Sequence[Path] = ()
    limit: int | None = None
    jobs: int | None = None
    out: Path = Path("eval-out")


def qa_command(options: QAOptions, console: Console) -> int:
    """Run an answer-accuracy eval; returns the exit code (0: the report was written)."""
    if not options.model:
        raise EvalSetupError(
            "--model is required: the model that answers each question, e.g. "
            "openai:gpt-4o-mini (with OPENAI_API_KEY) or local:1.5b"
        )
    systems = ("engram", *parse_baselines(options.baselines))
    if options.limit is not None and options.limit < 1:
        raise EvalSetupError(f"--limit must be at least 1, got {options.limit}")
    histories, excluded = _questions(options)
    check_out(options.out)
    model, judge, memory = _models(options)
    jobs = options.jobs if options.jobs is not None else _default_jobs(options)
    if jobs < 1:
        raise EvalSetupError(f"--jobs must be at least 1, got {jobs}")
    settings = QASettings(
        protocol=LOCOMO if options.benchmark == "locomo" else LONGMEMEVAL,
        model=model,
        model_spec=options.model,
        judge=judge,
        judge_spec=options.judge or options.model,
        memory_model=memory,
        memory_spec=options.memory_model,
        systems=systems,
        embeddings=load_embeddings(),
        out=options.out,
        data_digest=file_digest(options.data),
        jobs=jobs,
        keep_stores=options.benchmark == "locomo",
    )
    count = sum(len(h.questions) for h in histories)
    console.print(
        f"engram eval {options.benchmark} (answer accuracy): {counted(count, 'question')} over "
        f"{counted(len(histories), 'history', 'histories')} of "
        f"{options.data}, {len(excluded.ids)} excluded; "
        f"systems {', '.join(systems)}; answer {settings.model_spec}, judge "
        f"{settings.judge_spec}, memory {options.memory_model or 'offline'}; {jobs} at a time"
    )
    with turn_progress(console, steps_total(histories, settings), "qa", unit="steps") as bar:

        def step(note: str) -> None:
            bar.advance()
            bar.note(note)

        run = asyncio.run(arun_qa(histories, settings, Progress(turn=bar.advance, step=step)))
    extra = {"conversations": [h.id for h in histories]} if options.benchmark == "locomo" else {}
    report = qa_report(run, settings, data=str(options.data), excluded=excluded, **extra)
    if run.failures:
        console.print(
            f"{counted(len(run.failures), 'model call')} failed: rerun the same command to retry"
        )
    return finish(report, options.out, False, console)


def parse_baselines(raw: str | None) -> tuple[str, ...]:
    """The baselines of `--baselines`: comma-separated names, `none`, or all by default.

    Example:
        >>> parse_baselines(None), parse_baselines("none"), parse_baselines("no-memory")
        (('retrieval', 'full-context', 'no-memory'), (), ('no-memory',))

    Raises:
        EvalSetupError: An unknown name (the message lists them).
    """
    if raw is None:
        return BASELINES
    chosen = [p.strip() for p in raw.split(",") if p.strip()]
    if chosen == ["none"]:
        return ()
    unknown = [c for c in chosen if c not in BASELINES]
    if unknown or not chosen:
        raise EvalSetupError(
            f"--baselines {raw!r}: unknown baseline(s) {', '.join(unknown) or '(none given)'}; "
            f"use none or any of {', '.join(BASELINES)}"
        )
    return tuple(b for b in BASELINES if b in chosen)


def _questions(options: QAOptions) -> tuple[list[QAHistory], Excluded]:
    """The histories and questions the options select: categories, conversations, exclusions,
    then `--limit`."""
    from engram.evals.qa.locomo import locomo_histories, parse_categories
    from engram.evals.qa.longmemeval import load_longmemeval, parse_question_types

    try:
        if options.benchmark == "locomo":
            histories = locomo_histories(
                options.data, conversation_ids(options.conversations),
                parse_categories(options.categories),
            )
        else:
            histories = load_longmemeval(options.data, parse_question_types(options.categories))
        files = list(options.exclude)
        exclusions: list[Exclusion] = [e for f in files for e in read_exclusions(f)]
    except (FileNotFoundError, ValueError) as exc:
        raise EvalSetupError(str(exc)) from exc
    kept, excluded = apply_exclusions(histories, exclusions, [str(f) for f in files])
    selected = first_questions(kept, options.limit)
    if not selected:
        raise EvalSetupError(
            f"no question left to ask in {options.data} (categories, exclusions and --limit "
            "leave none)"
        )
    return selected, excluded


def _models(options: QAOptions) -> tuple[BaseChatModel, BaseChatModel, BaseChatModel | None]:
    from engram.graph.models import ModelSpecError, load_chat_model_option

    try:
        model = load_chat_model_option(options.model, "--model")
        judge = (
            load_chat_model_option(options.judge, "--judge")
            if options.judge and options.judge != options.model
            else model
        )
        memory = load_chat_model_option(options.memory_model, "--memory-model")
    except ModelSpecError as exc:
        raise EvalSetupError(str(exc)) from exc
    assert model is not None and judge is not None  # the specs are not empty
    return model, judge, memory


def _default_jobs(options: QAOptions) -> int:
    """One call at a time when a local model is involved (llama.cpp serves one request at a
    time on a few cores), else the machine's cores (at most 4)."""
    from engram.graph.local_model import parse_local_spec

    specs = (options.model, options.judge, options.memory_model)
    return 1 if any(parse_local_spec(s) for s in specs if s) else default_jobs()

