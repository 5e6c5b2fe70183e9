"""An answer-accuracy run: write each history to memory, answer its questions with every system,
judge every answer, journaling each result as it comes.

Per history, `engram` replays the sessions through the memory graph (the LoCoMo graph runner:
`engram.evals.locomo.graph.ingest`, scripted assistant turns, memory work inline) into a store
kept under `<out>/stores/`, then answers on a second graph with the answering model over the same
store; `retrieval` archives the sessions into a fresh temporary store; `full-context` and
`no-memory` call the model directly. Answers and verdicts go to the journal
(`engram.evals.qa.journal`) one by one, so an interrupted run loses at most the calls under
way, and a rerun of the same command skips what is journaled (a history whose store was written
completely is not ingested again).

A history's store is deleted once its questions are answered unless `keep_stores` (each
LongMemEval question has its own history: thousands of stores otherwise).

`jobs` bounds both the histories open at once and the model calls (ingestions, answers,
verdicts) under way at once. A model call that fails (a timeout, a refused request) is recorded
as a failure and left for the next run; the others go on.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph

from engram.evals.instrument import RunRecorder
from engram.evals.locomo.graph import ingest, message_steps, store_counts
from engram.evals.qa.answer import (
    SYSTEMS,
    Answer,
    FullTranscript,
    aanswer_in_thread,
    aanswer_with_full_context,
    aanswer_without_memory,
    archive_sessions,
)
from engram.evals.qa.dataset import QAHistory, QAQuestion
from engram.evals.qa.journal import Journal, setup_digest
from engram.evals.qa.judge import ajudge
from engram.evals.qa.protocol import Protocol
from engram.evals.sandbox import sandbox
from engram.evals.scripted import ScriptedChatModel
from engram.graph import compile_graph
from engram.nodes.failures import RECOVERABLE_ERRORS

logger = logging.getLogger(__name__)

STORES_FOLDER = "stores"
"""Under the out folder: one engram store per history, kept so a rerun need not ingest again."""
_LABEL = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True, kw_only=True)
class QASettings:
    """The models, systems and folders of a run."""

    protocol: Protocol
    model: BaseChatModel
    model_spec: str
    judge: BaseChatModel
    judge_spec: str
    embeddings: Embeddings
    out: Path
    data_digest: str
    """Digest of the data file (`engram.evals.qa.journal.file_digest`): results of other data
    are never reused."""
    memory_model: BaseChatModel | None = None
    memory_spec: str | None = None
    systems: tuple[str, ...] = SYSTEMS
    jobs: int = 1
    keep_stores: bool = True
    """Keep each history's engram store once its questions are answered, so that a rerun with
    more questions need not write it again (False: delete it, for benchmarks of many
    one-question histories such as LongMemEval)."""

    def ingest_setup(self) -> str:
        """What an engram store depends on: the data and the memory model."""
        return setup_digest(
            "ingest", self.protocol.benchmark, self.data_digest, self.memory_spec or "offline"
        )

    def answer_setup(self, system: str) -> str:
        """What a system's answers depend on."""
        memory = (self.memory_spec or "offline") if system == "engram" else ""
        return setup_digest(
            "answer", system, self.protocol.benchmark, self.data_digest, self.model_spec,
            self.protocol.answer_digest, memory,
        )

    def verdict_setup(self, system: str) -> str:
        """What a system's verdicts depend on: its answers and the judge."""
        return setup_digest(
            "verdict", self.answer_setup(system), self.judge_spec, self.protocol.judge_digest
        )


@dataclass
class QARun:
    """What a run produced (from this run or journaled by an earlier one)."""

    histories: list[QAHistory]
    results: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    """(question id, system) -> `{"answer": record, "verdict": record or None}`."""
    ingests: dict[str, dict[str, Any]] = field(default_factory=dict)
    """History id -> its ingest record (engram runs)."""
    failures: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class Progress:
    """Callbacks of a run: `turn` per message ingested, `step(note)` per answer and per verdict
    (given, found in the journal, or failed)."""

    turn: Callable[[], None] = lambda: None
    step: Callable[[str], None] = lambda note: None


def steps_total(histories: Sequence[QAHistory], settings: QASettings) -> int:
    """The progress total of a run: messages to ingest (engram), answers and verdicts."""
    ingested = sum(h.messages for h in histories) if "engram" in settings.systems else 0
    return ingested + 2 * sum(len(h.questions) for h in histories) * len(settings.systems)


async def arun_qa(
    histories: Sequence[QAHistory], settings: QASettings, progress: Progress | None = None
) -> QARun:
    """Answer and judge every question of `histories` with every system of `settings`."""
    progress = progress or Progress()
    run = QARun(list(histories))
    journal = Journal(settings.out)
    began = time.perf_counter()
    runner = _Runner(settings, journal, run, progress)
    await asyncio.gather(*(runner.history(h) for h in histories))
    run.seconds = time.perf_counter() - began
    return run


def run_qa(
    histories: Sequence[QAHistory], settings: QASettings, progress: Progress | None = None
) -> QARun:
    """Synchronous `arun_qa`."""
    return asyncio.run(arun_qa(histories, settings, progress))


class _Runner:
    def __init__(
        self, settings: QASettings, journal: Journal, run: QARun, progress: Progress
    ) -> None:
        self.settings = settings
        self.journal = journal
        self.run = run
        self.progress = progress
        self.open_histories = asyncio.Semaphore(settings.jobs)
        self.calls = asyncio.Semaphore(settings.jobs)

    async def history(self, history: QAHistory) -> None:
        async with self.open_histories, AsyncExitStack() as stack:
            answerers: dict[str, Callable[[QAQuestion], Awaitable[Answer]]] = {}
            for system in self.settings.systems:
                if self._all_answered(history, system):
                    answerers[system] = _never
                    if system == "engram":
                        self._reuse_ingest(history)
                elif system == "engram":
                    graph = await self._engram_graph(history, stack)
                    answerers[system] = _in_thread(graph, history, self.settings.protocol, system)
                elif system == "retrieval":
                    graph = await self._retrieval_graph(history, stack)
                    answerers[system] = _in_thread(graph, history, self.settings.protocol, system)
                elif system == "full-context":
                    transcript = FullTranscript(history, self.settings.model)
                    answerers[system] = lambda q, t=transcript: aanswer_with_full_context(
                        self.settings.model, t, q, self.settings.protocol
                    )
                else:
                    answerers[system] = lambda q: aanswer_without_memory(
                        self.settings.model, history, q, self.settings.protocol
                    )
            await asyncio.gather(*(
                self.question(history, question, system, answerers[system])
                for question in history.questions
                for system in self.settings.systems
            ))
        if not self.settings.keep_stores and self._all_answered(history, "engram"):
            shutil.rmtree(self._store_folder(history), ignore_errors=True)

    async def question(
        self, history: QAHistory, question: QAQuestion, system: str,
        answer: Callable[[QAQuestion], Awaitable[Answer]],
    ) -> None:
        key = {"history": history.id, "system": system, "question": question.id}
        setup = self.settings.answer_setup(system)
        record = self.journal.find(kind="answer", setup=setup, **key)
        if record is None:
            async with self.calls:
                try:
                    given = await answer(question)
                except RECOVERABLE_ERRORS as exc:
                    self._failed("answer", key, exc, steps=2)  # its verdict will not come
                    return
            record = {"kind": "answer", **key, "setup": setup, **_answer_fields(given)}
            self.journal.add(record)
        self.progress.step(f"{question.id} {system}: answered")
        verdict_setup = self.settings.verdict_setup(system)
        verdict = self.journal.find(kind="verdict", setup=verdict_setup, **key)
        if verdict is None:
            prompt = self.settings.protocol.judge_prompt(question, record["text"])
            async with self.calls:
                try:
                    graded = await ajudge(
                        self.settings.judge, prompt, self.settings.protocol.parse_verdict
                    )
                except RECOVERABLE_ERRORS as exc:
                    self.run.results[(question.id, system)] = {"answer": record, "verdict": None}
                    self._failed("judge", key, exc)
                    return
            verdict = {
                "kind": "verdict", **key, "setup": verdict_setup, "correct": graded.correct,
                "reply": graded.reply, "latency_ms": round(graded.latency_ms, 1),
            }
            self.journal.add(verdict)
        self.run.results[(question.id, system)] = {"answer": record, "verdict": verdict}
        shown = {True: "correct", False: "wrong", None: "unparsed"}[verdict["correct"]]
        self.progress.step(f"{question.id} {system}: {shown}")

    async def _engram_graph(self, history: QAHistory, stack: AsyncExitStack) -> CompiledStateGraph:
        """The answering graph over the history's engram store, ingesting it unless a finished
        ingestion is journaled and its store is still there."""
        settings = self.settings
        setup = settings.ingest_setup()
        folder = self._store_folder(history)
        done = self._journaled_ingest(history)
        if done is None or not folder.is_dir():
            done = None
            shutil.rmtree(folder, ignore_errors=True)  # what an interrupted ingestion left
        plan = [message_steps(list(session.messages)) for session in history.sessions]
        replies = [step.reply for steps in plan for step in steps if step.reply is not None]
        box = await stack.enter_async_context(sandbox(
            ScriptedChatModel(replies=replies), embeddings=settings.embeddings,
            memory_model=settings.memory_model, folder=folder,
        ))
        if done is None:
            recorder = RunRecorder()
            async with self.calls:
                began = time.perf_counter()
                took = await ingest(
                    box, plan, user_id=history.user_id, thread_prefix=history.id,
                    on_turn=self.progress.turn, callbacks=[recorder],
                )
                seconds = time.perf_counter() - began
            done = {
                "kind": "ingest", "history": history.id, "setup": setup,
                "messages": history.messages, "graph_runs": len(took),
                "seconds": round(seconds, 1),
                "run_ms": [round(ms, 1) for ms in took],
                "node_ms": [[node, round(ms, 1)] for node, ms in recorder.samples],
                "memory_model_calls": recorder.memory_calls,
                "memory_model_tokens": recorder.model_tokens,
                **await store_counts(box, history.user_id),
            }
            self.journal.add(done)
            self.run.ingests[history.id] = done
        else:
            self._reuse_ingest(history)
        return compile_graph(
            settings.model, memory_model=settings.memory_model, store=box.store,
            checkpointer=InMemorySaver(),
        )

    async def _retrieval_graph(
        self, history: QAHistory, stack: AsyncExitStack
    ) -> CompiledStateGraph:
        box = await stack.enter_async_context(
            sandbox(self.settings.model, embeddings=self.settings.embeddings)
        )
        await archive_sessions(box.store, history)
        return box.graph

    def _store_folder(self, history: QAHistory) -> Path:
        setup = self.settings.ingest_setup()
        return self.settings.out / STORES_FOLDER / f"{_LABEL.sub('-', history.id)}-{setup[:8]}"

    def _all_answered(self, history: QAHistory, system: str) -> bool:
        """Whether every question of the history has this system's answer journaled (and, for
        engram, the ingestion's figures): then it needs no store, at most verdicts."""
        setup = self.settings.answer_setup(system)
        for question in history.questions:
            key = {"history": history.id, "system": system, "question": question.id}
            if self.journal.find(kind="answer", setup=setup, **key) is None:
                return False
        return system != "engram" or self._journaled_ingest(history) is not None

    def _journaled_ingest(self, history: QAHistory) -> dict[str, Any] | None:
        return self.journal.find(
            kind="ingest", history=history.id, setup=self.settings.ingest_setup()
        )

    def _reuse_ingest(self, history: QAHistory) -> None:
        """Count a journaled ingestion as done: its figures go in the report, its turns in the
        progress."""
        self.run.ingests[history.id] = self._journaled_ingest(history) or {}
        for _ in range(history.messages):
            self.progress.turn()

    def _failed(
        self, stage: str, key: dict[str, str], exc: BaseException, steps: int = 1
    ) -> None:
        error = f"{type(exc).__name__}: {exc}"
        logger.warning("%s of %s by %s failed (%s); a rerun retries it", stage,
                       key["question"], key["system"], error)
        self.run.failures.append({**key, "stage": stage, "error": error})
        for _ in range(steps):
            self.progress.step(f"{key['question']} {key['system']}: {stage} failed")


def _in_thread(
    graph: CompiledStateGraph, history: QAHistory, protocol: Protocol, system: str
) -> Callable[[QAQuestion], Awaitable[Answer]]:
    return lambda question: aanswer_in_thread(graph, history, question, protocol, system)


async def _never(question: QAQuestion) -> Answer:
    raise AssertionError(f"{question.id} is journaled: it is never answered again")


def _answer_fields(answer: Answer) -> dict[str, Any]:
    return {
        "text": answer.text,
        "context": answer.context,
        "prompt_tokens": answer.prompt_tokens,
        "latency_ms": round(answer.latency_ms, 1),
        "left_out_messages": answer.left_out_messages,
        "left_out_tokens": answer.left_out_tokens,
    }
