"""What `engram eval` and `engram eval locomo` do, so the CLI module stays a thin parser
(answer accuracy, `--mode qa` and `engram eval longmemeval`: `engram.evals.qa.command`).

Each command validates its inputs first (paths, model specs, the embedder's files), so a mistake
is reported before anything runs; then it runs with a progress bar, writes `report.json` and
`report.html`, prints the report's tables and returns the exit code.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from rich.console import Console

from engram.evals.report import (
    LOCOMO_TARGETS,
    SUITE_TARGETS,
    all_pass,
    build_report,
    write_report,
)
from engram.evals.report.console import report_tables, turn_progress
from engram.stores.text import counted

if TYPE_CHECKING:
    from engram.evals.dialogs.runner import DialogRun


class EvalSetupError(ValueError):
    """An eval cannot start: a bad path, model spec or option; the message says what to do."""


@dataclass(frozen=True)
class Models:
    """The models of a suite run, loaded from their specs."""

    memory_model: BaseChatModel | None
    memory_spec: str | None
    model_name: str | None
    """The answering model's name (its tokenizer); None: engram's default."""
    context_window: int | None
    model_spec: str | None

    @property
    def mode(self) -> str:
        """ "offline", or the memory model's spec."""
        return self.memory_spec or "offline"


def run_mode(mode: str, runs: Sequence[DialogRun], fallbacks: int) -> str:
    """The report's mode line: the memory model's spec, and what fell back to the offline
    built-ins, so a run that measured the rules under a model's name says so.

    Example:
        >>> run_mode("local:0.5b", [], 3)
        'local:0.5b (every memory-model call failed: the offline built-ins did the work)'
    """
    if mode == "offline" or not fallbacks:
        return mode
    if not sum(run.memory_answers for run in runs):
        return f"{mode} (every memory-model call failed: the offline built-ins did the work)"
    return f"{mode} ({counted(fallbacks, 'memory-model call')} fell back to the offline built-ins)"


def default_jobs() -> int:
    """Dialogs replayed at once by default: the machine's cores, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


def load_models(model: str | None, memory_model: str | None) -> Models:
    """Load `--model` (the answering model budgeted for; never called, replies are scripted)
    and `--memory-model` (summaries and extraction).

    Raises:
        EvalSetupError: A spec names no loadable chat model.
    """
    from engram.graph.models import (
        ModelSpecError,
        context_window_for,
        load_chat_model_option,
        model_name_of,
    )

    try:
        answering = load_chat_model_option(model, "--model")
        memory = load_chat_model_option(memory_model, "--memory-model")
    except ModelSpecError as exc:
        raise EvalSetupError(str(exc)) from exc
    return Models(
        memory_model=memory,
        memory_spec=memory_model,
        model_name=model_name_of(answering) if answering is not None else None,
        context_window=context_window_for(answering) if answering is not None else None,
        model_spec=model,
    )


def load_embeddings() -> Embeddings:
    """The local all-MiniLM-L6-v2 embedder, loaded now so a missing model fails before the run.

    Raises:
        EvalSetupError: The model files are not found (the message says where it looked).
    """
    from engram.stores.chroma.store import default_index
    from engram.stores.embeddings import EmbeddingModelNotFoundError

    try:
        index = default_index()  # loads the local model and warms it up
    except EmbeddingModelNotFoundError as exc:
        raise EvalSetupError(str(exc)) from exc
    return cast(Embeddings, index["embed"])


def suite_command(
    *,
    suite: Path | None,
    model: str | None,
    memory_model: str | None,
    out: Path,
    strict: bool,
    jobs: int,
    console: Console,
    extraction: str = "auto",
) -> int:
    """`engram eval`: replay a suite, report, and return the exit code (1: a target missed
    under `strict`)."""
    from engram.evals.dialogs.runner import RunSettings, arun_suite
    from engram.evals.dialogs.scoring import dialog_rows, failure_counts, suite_metrics
    from engram.evals.dialogs.suite import DialogFileError, bundled_suite_path, load_suite
    from engram.nodes.extract.llm import extraction_for

    path = suite or bundled_suite_path()
    try:
        dialogs = load_suite(path)
    except DialogFileError as exc:
        raise EvalSetupError(str(exc)) from exc
    check_out(out)
    if jobs < 1:
        raise EvalSetupError(f"--jobs must be at least 1, got {jobs}")
    models = load_models(model, memory_model)
    try:
        chosen = extraction_for(models.memory_model, extraction)  # type: ignore[arg-type]
    except ValueError as exc:
        raise EvalSetupError(f"--extraction {extraction}: {exc}") from exc
    embeddings = load_embeddings()
    settings = RunSettings(
        extraction=extraction,
        embeddings=embeddings,
        memory_model=models.memory_model,
        model_name=models.model_name,
        context_window=models.context_window,
        concurrency=jobs,
    )
    turns = sum(d.user_turns for d in dialogs)
    console.print(
        f"engram eval: {counted(len(dialogs), 'dialog')}, {counted(turns, 'user turn')} from "
        f"{path}; "
        f"mode: {models.mode}, extraction: {chosen}; {jobs} at a time"
    )
    began = time.perf_counter()
    with turn_progress(console, turns, "dialogs") as bar:
        runs = asyncio.run(
            arun_suite(
                dialogs,
                settings,
                on_turn=bar.advance,
                on_dialog=lambda run: bar.note(f"done: {run.dialog.id}"),
            )
        )
    seconds = time.perf_counter() - began
    metrics = suite_metrics(runs)
    report = build_report(
        kind="suite",
        mode=run_mode(models.mode, runs, metrics["memory_model_fallbacks"]),
        metrics=metrics,
        targets=SUITE_TARGETS,
        embeddings=embeddings,
        suite=str(path),
        dialogs_count=len(dialogs),
        user_turns=turns,
        models={
            "answering": models.model_spec or "scripted replies (engram's default budget)",
            "memory": models.memory_spec or "offline built-ins",
        },
        token_encoding=next((r.encoding for r in runs if r.encoding), None),
        concurrency=jobs,
        extraction=chosen,
        timing={"wall_seconds": round(seconds, 1)},
        failures=failure_counts(runs),
        dialogs=dialog_rows(runs),
    )
    return finish(report, out, strict, console)


def locomo_command(
    *,
    data: Path,
    conversations: str | None,
    mode: Literal["engine", "graph"],
    memory_model: str | None,
    out: Path,
    strict: bool,
    console: Console,
) -> int:
    """`engram eval locomo`: the LoCoMo retrieval benchmark in engine or graph mode."""
    from engram.evals.locomo.engine import arun_engine, load_locomo

    wanted = conversation_ids(conversations)
    try:
        loaded = load_locomo(data, wanted)
    except (FileNotFoundError, ValueError) as exc:
        raise EvalSetupError(str(exc)) from exc
    if mode == "engine" and memory_model:
        raise EvalSetupError(
            "--memory-model only applies to --mode graph and --mode qa (engine mode uses no "
            "model)"
        )
    check_out(out)
    models = load_models(None, memory_model)
    embeddings = load_embeddings()
    ids = [c.sample_id for c in loaded]
    console.print(f"engram eval locomo: {mode} mode, conversations {', '.join(ids)} from {data}")
    began = time.perf_counter()
    extra: dict[str, Any] = {}
    if mode == "engine":
        with console.status("ranking turns for every question..."):
            result = asyncio.run(arun_engine(data, conversations=ids, embeddings=embeddings))
        extra["settings"] = result.get("settings")
    else:
        from engram.evals.locomo.graph import arun_graph

        turns = sum(len(c.turns) for c in loaded)
        with turn_progress(console, turns, "ingest") as bar:
            result = asyncio.run(
                arun_graph(
                    data,
                    conversations=ids,
                    embeddings=embeddings,
                    memory_model=models.memory_model,
                    on_turn=bar.advance,
                    on_conversation=lambda sample, s: bar.note(f"done: {sample} ({s:.0f} s)"),
                )
            )
        extra["per_conversation"] = result["conversations"]
        extra["memory_model"] = models.mode
    report = build_report(
        kind="locomo",
        mode=mode,
        metrics=result["metrics"],
        targets=LOCOMO_TARGETS if mode == "engine" else (),  # the targets are engine mode's
        embeddings=embeddings,
        data=str(data),
        conversations=ids,
        questions=result["questions"],
        timing={"wall_seconds": round(time.perf_counter() - began, 1)},
        **extra,
    )
    return finish(report, out, strict, console)


def finish(report: dict[str, Any], out: Path, strict: bool, console: Console) -> int:
    """Write the report, print its tables, and return the exit code (1: a target missed under
    `strict`)."""
    json_path, html_path = write_report(report, out)
    console.print(report_tables(report))
    console.print(f"wrote {json_path} and {html_path}")
    if all_pass(report):
        return 0
    missed = ", ".join(name for name, t in report["targets"].items() if not t["pass"])
    console.print(f"targets missed: {missed}" + ("" if strict else " (exit 0 without --strict)"))
    return 1 if strict else 0


def check_out(out: Path) -> None:
    """Refuse an `--out` that exists and is not a folder (before anything runs)."""
    if out.exists() and not out.is_dir():
        raise EvalSetupError(f"--out {out} exists and is not a folder: pass a folder")


def conversation_ids(raw: str | None) -> list[str] | None:
    """The sample ids of `--conversations` (None: every conversation)."""
    if raw is None:
        return None
    ids = [part.strip() for part in raw.split(",") if part.strip()]
    if not ids:
        raise EvalSetupError("--conversations is empty: pass sample ids such as conv-26,conv-30")
    return ids
