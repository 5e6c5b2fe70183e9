"""The dialog runner: each dialog replayed through the engram graph on a fresh embedded store.

For every dialog: a new `Sandbox` (ChromaStore on a PersistentClient and a SQLite checkpointer in
a temporary folder), a `ScriptedChatModel` that gives the dialog's assistant turns, and the
configured memory model (None: the offline summarizer and extractor). Each session is a thread
with `Context(incognito=session.incognito)`; its user turns go in one `ainvoke` each, then
`{"end_session": True}`. After every session the runner snapshots the long-term memories and runs
the session's probes through `start`'s own recall path. It records, per turn, the prompt tokens
`start` built (`built_context.token_stats.total`) next to the full-context baseline, and for the
whole dialog the node latencies, the model calls and the failures the graph worked around.

Dialogs run concurrently (`RunSettings.concurrency` at a time, longest first). Every message
carries its session's date (`additional_kwargs["timestamp"]`, which archived messages show);
memories themselves are stamped with the wall clock.

Example:
    >>> from engram.evals.dialogs.suite import bundled_suite_path, load_suite
    >>> dialogs = load_suite(bundled_suite_path() / "en" / "en-tabs-to-spaces.yaml")
    >>> runs = run_suite(dialogs)                                      # doctest: +SKIP
    >>> runs[0].user_turns                                             # doctest: +SKIP
    10
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore, SearchItem

from engram.evals.dialogs.metrics import (
    Shown,
    StoredMemory,
    TokenTrace,
    contains,
    full_context_tokens,
)
from engram.evals.dialogs.suite import Conflict, Dialog, ExpectedMemory, Session
from engram.evals.instrument import RunRecorder
from engram.evals.sandbox import Sandbox, sandbox
from engram.evals.scripted import ScriptedChatModel
from engram.graph import Context, Extraction, Recall
from engram.graph.models import DEFAULT_CONTEXT_WINDOW
from engram.nodes.context import ExtractionChoice
from engram.nodes.recalled import CHANGED, new_episodes, said_on, shown_episode
from engram.nodes.start import Budget, fit_recall, recall, recall_query
from engram.nodes.text.tokens import REPLY_PRIMING, counter_for_model
from engram.nodes.text.transcript import TIMESTAMP_KEY
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.types import ScoredMemory

logger = logging.getLogger(__name__)

USER_ID = "eval-user"
"""The user every dialog's memories belong to (each dialog has its own store)."""

PROBE_TIMEOUT_MS = 30_000
"""Recall timeout for probes: a probe measures what is recalled, not how fast (turns keep the
default `Context.recall.timeout_ms`, and their timeouts are reported as failures)."""

SNAPSHOT_LIMIT = 10_000
"""Memories read back per snapshot at most."""


class DialogRunError(RuntimeError):
    """Replaying a dialog failed; the message names the dialog, session and turn."""


@dataclass(frozen=True, kw_only=True)
class RunSettings:
    """How dialogs are replayed."""

    embeddings: Embeddings | None = None
    """The store's embedder (default: `LocalEmbeddings`, all-MiniLM-L6-v2, loaded once)."""
    memory_model: BaseChatModel | None = None
    """Summaries and extraction; None: the offline built-ins."""
    model_name: str | None = None
    """Name of the answering model to budget for (its tokenizer); replies stay scripted."""
    context_window: int | None = None
    """Its context window (None: engram's lookup, 8192 for an unknown model)."""
    concurrency: int = 2
    """Dialogs replayed at the same time."""
    extraction: ExtractionChoice = "auto"
    """`Extraction.mode`: who writes the memories ("auto", "write", "review", "rules")."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")


@dataclass(frozen=True)
class ProbeRun:
    """What a probe's query recalled, best first."""

    probe_id: str
    memories: list[str]
    """Contents of the recalled long-term memories."""
    episodes: list[str]
    """Contents of the recalled archived exchanges."""


@dataclass(frozen=True)
class StaleCheck:
    """What a new thread's first turn shows when it repeats the old statement of a correction,
    right after the session the correction is due by."""

    old: str
    new: str
    """The expected memory ids of the correction."""
    query: str
    """The old statement as the user said it (the first user turn holding all its details)."""
    shown: list[Shown]


@dataclass(frozen=True)
class SessionRun:
    """The store after one session, and the session's probes and stale checks."""

    session_id: str
    stored: list[StoredMemory]
    """Every long-term memory (superseded and forgotten ones included) after the session."""
    probes: list[ProbeRun]
    stale_checks: list[StaleCheck] = field(default_factory=list)


@dataclass
class DialogRun:
    """Everything measured while replaying one dialog."""

    dialog: Dialog
    sessions: list[SessionRun] = field(default_factory=list)
    episodes: list[str] = field(default_factory=list)
    """Contents of the archived exchanges in the store at the end."""
    trace: TokenTrace = field(default_factory=lambda: TokenTrace([], []))
    latencies: list[tuple[str, float]] = field(default_factory=list)
    model_calls: int = 0
    model_tokens: int = 0
    memory_calls: int = 0
    """Of `model_calls`, the memory model's."""
    memory_answers: int = 0
    """Memory-model calls that returned an answer."""
    user_turns: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)
    """Failures the graph recorded and worked around (`{"stage", "error"}`)."""
    encoding: str = ""
    """The token counter's encoding."""
    seconds: float = 0.0


async def arun_suite(
    dialogs: Sequence[Dialog],
    settings: RunSettings | None = None,
    *,
    on_turn: Callable[[], None] | None = None,
    on_dialog: Callable[[DialogRun], None] | None = None,
) -> list[DialogRun]:
    """Replay every dialog; results in the order of `dialogs`.

    Args:
        dialogs: The suite.
        settings: Models, embedder and concurrency (default: offline, all-MiniLM-L6-v2).
        on_turn: Called after every user turn (progress).
        on_dialog: Called when a dialog is done.

    Raises:
        DialogRunError: A dialog could not be replayed (the graph raised).
    """
    settings = settings or RunSettings()
    if settings.embeddings is None:
        settings = dataclasses.replace(settings, embeddings=_local_embeddings())
    gate = asyncio.Semaphore(settings.concurrency)

    async def one(dialog: Dialog) -> DialogRun:
        async with gate:
            run = await arun_dialog(dialog, settings, on_turn=on_turn)
        if on_dialog is not None:
            on_dialog(run)
        return run

    longest_first = sorted(range(len(dialogs)), key=lambda i: -dialogs[i].user_turns)
    tasks = {i: asyncio.create_task(one(dialogs[i])) for i in longest_first}
    try:
        await asyncio.gather(*tasks.values())
    finally:
        for task in tasks.values():
            task.cancel()
    return [tasks[i].result() for i in range(len(dialogs))]


def run_suite(
    dialogs: Sequence[Dialog],
    settings: RunSettings | None = None,
    *,
    on_turn: Callable[[], None] | None = None,
    on_dialog: Callable[[DialogRun], None] | None = None,
) -> list[DialogRun]:
    """Synchronous `arun_suite`."""
    return asyncio.run(arun_suite(dialogs, settings, on_turn=on_turn, on_dialog=on_dialog))


async def arun_dialog(
    dialog: Dialog, settings: RunSettings, *, on_turn: Callable[[], None] | None = None
) -> DialogRun:
    """Replay one dialog on a fresh sandbox (see the module docstring)."""
    if settings.embeddings is None:
        raise ValueError("arun_dialog needs RunSettings.embeddings (arun_suite fills it in)")
    began = time.perf_counter()
    replies = [
        AIMessage(reply, additional_kwargs={TIMESTAMP_KEY: session.date.isoformat()})
        for session in dialog.sessions
        for _, reply in session.exchanges()
    ]
    model = ScriptedChatModel(replies=replies, model_name=settings.model_name)
    replay = _Replay(DialogRun(dialog), settings, RunRecorder(), on_turn)
    async with sandbox(
        model, embeddings=settings.embeddings, memory_model=settings.memory_model
    ) as box:
        for session in dialog.sessions:
            await replay.session(box, session)
        replay.run.episodes = await _episodes(box.store)
    if model.remaining:
        raise DialogRunError(
            f"dialog {dialog.id}: the graph asked for {model.calls} replies but the dialog has "
            f"{len(replies)} assistant turns"
        )
    return replay.finished(time.perf_counter() - began)


@dataclass
class _Replay:
    """One dialog's replay as it goes: the run so far and the prompt sizes of both sides."""

    run: DialogRun
    settings: RunSettings
    recorder: RunRecorder
    on_turn: Callable[[], None] | None
    engram_tokens: list[int] = field(default_factory=list)
    baseline: list[int] = field(default_factory=list)
    thread_baseline: list[int] = field(default_factory=list)
    earlier: int = 0
    """Tokens of the earlier sessions' messages (not incognito ones)."""
    sessions_by_thread: dict[str, str] = field(default_factory=dict)
    checked: list[Conflict] = field(default_factory=list)
    """Corrections whose stale check ran (once each, after the session they are due by)."""

    async def session(self, box: Sandbox, session: Session) -> None:
        """Run the session's turns and its end, then snapshot the store, ask its probes and
        check the corrections due by now."""
        dialog = self.run.dialog
        thread = f"{dialog.id}/{session.id}"
        self.sessions_by_thread[thread] = session.id
        ctx = Context(
            user_id=USER_ID,
            incognito=session.incognito,
            context_window=self.settings.context_window,
            memory_work="inline",  # each turn's memories are measured right after it
            extraction=Extraction(mode=self.settings.extraction),
        )
        config: RunnableConfig = {
            "configurable": {"thread_id": thread},
            "callbacks": [self.recorder],
            "metadata": {"eval_dialog": dialog.id, "eval_session": session.id},
        }
        for n, (user, _) in enumerate(session.exchanges()):
            message = HumanMessage(
                user,
                id=f"{session.id}-u{n}",
                additional_kwargs={TIMESTAMP_KEY: session.date.isoformat()},
            )
            state = await _invoke(box.graph, {"messages": [message]}, config, ctx, thread, n)
            self.engram_tokens.append(state["built_context"]["token_stats"]["total"])
            self.run.encoding = state["built_context"]["encoding"]
            self.run.failures.extend(state.get("failures", []))
            self.run.user_turns += 1
            if self.on_turn is not None:
                self.on_turn()
        state = await _invoke(box.graph, {"end_session": True}, config, ctx, thread, None)
        self.run.failures.extend(state.get("failures", []))
        self._count_full_context(session, ctx)
        due = [c for c in dialog.conflicts_after(session.id) if c not in self.checked]
        self.checked.extend(due)
        self.run.sessions.append(
            SessionRun(
                session.id,
                await _snapshot(box.store, self.sessions_by_thread),
                [
                    await _probe(box.store, p.id, p.query, self.settings)
                    for p in dialog.probes_after(session.id)
                ],
                [await _stale_check(box.store, dialog, c, self.settings) for c in due],
            )
        )

    def _count_full_context(self, session: Session, ctx: Context) -> None:
        """The prompts a model without engram would have been sent in this session."""
        thread_prompts, session_tokens = _full_context(session, ctx, self.settings.model_name)
        self.thread_baseline.extend(thread_prompts)
        self.baseline.extend(n + (0 if session.incognito else self.earlier) for n in thread_prompts)
        self.earlier += 0 if session.incognito else session_tokens

    def finished(self, seconds: float) -> DialogRun:
        """The run, with its token trace, latencies and model calls."""
        run = self.run
        run.trace = TokenTrace(self.engram_tokens, self.baseline, self.thread_baseline)
        run.latencies = self.recorder.samples
        run.model_calls = self.recorder.model_calls
        run.model_tokens = self.recorder.model_tokens
        run.memory_calls = self.recorder.memory_calls
        run.memory_answers = self.recorder.memory_answers
        run.seconds = seconds
        return run


async def _invoke(
    graph: CompiledStateGraph,
    payload: dict[str, Any],
    config: RunnableConfig,
    ctx: Context,
    thread: str,
    turn: int | None,
) -> dict[str, Any]:
    try:
        return await graph.ainvoke(payload, config, context=ctx)
    except Exception as exc:  # the runner's boundary: say which dialog, session and turn broke
        where = f"turn {turn + 1}" if turn is not None else "session end"
        raise DialogRunError(f"{thread}, {where}: {type(exc).__name__}: {exc}") from exc


def _full_context(
    session: Session, ctx: Context, model_name: str | None
) -> tuple[list[int], int]:
    """The thread-only baseline prompt per user turn of a session (system prompt plus the whole
    thread so far), and the tokens of all the session's messages."""
    counter = counter_for_model(model_name)
    kinds = {"user": HumanMessage, "assistant": AIMessage}
    tokens = [counter.count_message(kinds[turn.role](turn.content)) for turn in session.turns]
    system = counter.count_message(SystemMessage(ctx.system_prompt)) + REPLY_PRIMING
    return full_context_tokens(tokens, system), sum(tokens)


async def _snapshot(store: BaseStore, sessions_by_thread: dict[str, str]) -> list[StoredMemory]:
    memories = await LongTermMemory(store).alist(
        USER_ID, include_superseded=True, include_forgotten=True, limit=SNAPSHOT_LIMIT
    )
    return [
        StoredMemory.from_value(m.to_value(), sessions_by_thread.get(m.source_thread_id or ""))
        for m in memories
    ]


async def _probe(
    store: BaseStore, probe_id: str, query: str, settings: RunSettings
) -> ProbeRun:
    """The probe's query as the first message of a new thread: the memories, and the episodes
    as the memory block shows them (cut, escaped)."""
    memories, episodes = await _first_turn_recall(store, query, settings)
    return ProbeRun(
        probe_id,
        [scored.memory.content for scored in memories],
        [shown_episode(item.value) for item in episodes],
    )


async def _stale_check(
    store: BaseStore, dialog: Dialog, conflict: Conflict, settings: RunSettings
) -> StaleCheck:
    """The old statement of `conflict` as the first message of a new thread, and what the
    block shows for it, each statement with its day and whether it is marked replaced."""
    query = _statement(dialog, dialog.memory(conflict.old))
    memories, episodes = await _first_turn_recall(store, query, settings)
    shown = [
        Shown(m.content, _day(said_on(m)), replaced=m is not s.memory)
        for s in memories
        for m in (s.memory, *s.earlier)
    ]
    for item in episodes:
        line = shown_episode(item.value)
        day = _SHOWN_DAY.match(line)
        shown.append(Shown(line, _day(day[1]) if day else None, bool(item.value.get(CHANGED))))
    return StaleCheck(conflict.old, conflict.new, query, shown)


async def _first_turn_recall(
    store: BaseStore, query: str, settings: RunSettings
) -> tuple[list[ScoredMemory], list[SearchItem]]:
    """What `start` would show for `query` on a new thread's first turn: its recall, the
    episodes it shows, cut to the memory budget of the eval model's window."""
    ctx = Context(user_id=USER_ID, recall=Recall(timeout_ms=PROBE_TIMEOUT_MS))
    memories, episodes = await recall(
        store, ctx, recall_query([HumanMessage(query)], 0), first_turn=True
    )
    episodes = new_episodes(episodes, memories, [])  # as `start` shows them
    window = settings.context_window or DEFAULT_CONTEXT_WINDOW
    memories, episodes, _, _ = fit_recall(
        memories, episodes, Budget.for_window(window).memories,
        counter_for_model(settings.model_name),
    )
    return memories, episodes


def _statement(dialog: Dialog, memory: ExpectedMemory) -> str:
    """The user turn that first said all of `memory`'s details (its content when none did)."""
    for session in dialog.sessions:
        if session.incognito:
            continue
        for user, _ in session.exchanges():
            if all(contains(user, detail) for detail in memory.details):
                return user
    return memory.content


_SHOWN_DAY = re.compile(r"^\[(\d{1,2} \w+ \d{4})\]")


def _day(text: str) -> date | None:
    try:
        return datetime.strptime(text, "%d %B %Y").date()
    except ValueError:
        return None


async def _episodes(store: BaseStore) -> list[str]:
    items = await store.asearch(LongTermMemory.episode_namespace(USER_ID), limit=SNAPSHOT_LIMIT)
    return [str(item.value.get("content", "")) for item in items]


def _local_embeddings() -> Embeddings:
    from engram.stores.embeddings import LocalEmbeddings

    return LocalEmbeddings()
