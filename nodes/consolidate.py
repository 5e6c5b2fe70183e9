"""`consolidate`: the terminal node, where conversation becomes long-term memory.

It runs at the end of every turn and decides whether to extract:

- always at session end (`{"end_session": True}`);
- when `compact` evicted messages not yet extracted from (`pending_extraction`, "extract before
  evict");
- every `Context.extraction.every_turns` user turns (`turns_since_consolidation`, counted by
  `start`).

It extracts from the messages not extracted from yet (evicted ones first), in windows of at most
10 messages / about 4000 tokens cut at exchange boundaries (enough for a model to tell what a
statement refers to, at a fraction of the whole conversation's cost); a window shorter than
3 messages is shown with the messages before it as context, since a short reply ("yes, that
one") means little alone. Candidates go through
`LongTermMemory.aupsert` (redaction, duplicate, supersede, merge, add; importance below 0.5
dropped), and each change is announced on LangGraph's custom stream as `memory.created`,
`memory.updated` or `memory.superseded`. With `Context.confirm_memories` the candidates wait
for the user's approval instead (`engram.stores.memory.pending`), announced as
`memory.pending`. With a memory model, the write policy's uncertain
similarity band is settled by the merge decider (`engram.nodes.model.merge_decision`); its answers are
counted in `consolidation["decisions"]` and a decision that failed is recorded as a
`merge_decision` failure (the threshold rule applied).

Failures never lose a memory: when the memory model fails on a window (an unusable answer after
its corrective retry, a timeout, an unreachable server), the failure is recorded in
`state["failures"]` and that window is extracted with the offline rules instead; when the store
fails, the window's messages stay pending for the next trigger. Re-running over
the same messages writes nothing new (`consolidated_message_ids`, and the write policy is
idempotent). Incognito runs extract and write nothing, and their messages are never extracted
later. A graph compiled without a store extracts nothing (and keeps no evicted messages).

It also counts the turn's recall of the memories `start` put in the prompt (`access_count`,
`last_accessed`: what recency and forgetting read), here rather than in `start`, so that the write
never delays the reply.

In background mode (`Context.memory_work`, `engram.nodes.work.background`) the extraction and the
writes are a job: the node records which messages it covers (they leave `pending_extraction`
for the job's reference in `memory_jobs`) and returns; the thread's next `start` applies the
job's record and events, and messages it could not write come back to `pending_extraction`.
A session end waits for the thread's jobs and for its own.

A run whose tool calls all worked becomes a procedure, a `skill` memory of its steps, once the
user's next message does not say it failed (`engram.nodes.procedures`).

Each thread is also recorded once in the user's thread registry (`("threads", user_id)`,
`engram.stores.memory.users`), incognito runs included, so that deleting a user (`engram memory
delete --all`) finds the thread's checkpoints.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from engram.nodes.episodes import episode_ops
from engram.nodes.events import QUIET_ACTIONS as _QUIET
from engram.nodes.events import announce_pending, announce_writes
from engram.nodes.extract.grounding import split_grounded
from engram.nodes.extract.llm import MAX_MEMORIES, Extractor, extraction_for, make_extractor
from engram.nodes.extract.rules import RuleExtractor
from engram.nodes.failures import RECOVERABLE_ERRORS, record_failure
from engram.nodes.model.merge_decision import decision_counts, decision_failures, make_merge_decider
from engram.nodes.owner import claim
from engram.nodes.procedures import learn_procedure
from engram.nodes.text.tokens import TokenCounter, counter_for_model
from engram.nodes.text.transcript import from_pending, message_time, split_exchanges, to_pending
from engram.nodes.work.background import MemoryWork, applied_state, merge_updates
from engram.stores.memory.long_term import LongTermMemory, WriteResult
from engram.stores.memory.pending import PendingMemories, PendingMemory
from engram.stores.memory.types import MemoryCandidate
from engram.stores.memory.users import register_thread_op
from engram.stores.memory.write.decision import MergeDecider
from engram.stores.secrets import redact

if TYPE_CHECKING:
    from engram.nodes.context import Context
    from engram.nodes.state import EngramState

logger = logging.getLogger(__name__)

WINDOW_MESSAGES = 10
"""Messages per extraction window: five exchanges, enough to tell what a statement refers to."""
WINDOW_TOKENS = 4000
"""Tokens per extraction window, about."""
MIN_WINDOW_MESSAGES = 3
"""A window shorter than this is shown with earlier messages as context."""
MAX_PENDING = 200
"""Evicted messages kept for a retry at most (the default short-term hard cap,
`Context.compaction.max_messages`)."""
MAX_CONSOLIDATED_IDS = 1000
"""`consolidated_message_ids` keeps only ids still in the thread, and at most this many."""

Trigger = Literal["session_end", "eviction", "turns"]
ConsolidateNode = Callable[["EngramState", Runtime["Context"]], Awaitable[dict[str, Any]]]


def consolidation_trigger(state: EngramState, every_turns: int) -> Trigger | None:
    """Why this turn extracts long-term memories, or None when it does not."""
    if state.get("end_session"):
        return "session_end"
    if state.get("pending_extraction"):
        return "eviction"
    if state.get("turns_since_consolidation", 0) >= every_turns:
        return "turns"
    return None


@dataclass
class _Written:
    """What the windows of one extraction wrote, and what failed on the way."""

    message_ids: list[str] = field(default_factory=list)
    """The messages of the windows whose memories were written (or proposed)."""
    results: list[WriteResult] = field(default_factory=list)
    proposed: list[PendingMemory] = field(default_factory=list)
    """Memories waiting for the user's approval (`Context.confirm_memories`)."""
    failures: list[dict[str, str]] = field(default_factory=list)
    fallback_windows: int = 0
    """Windows the offline rules extracted from because the memory model failed on them."""


class Consolidator:
    """The `consolidate` node (see the module docstring) and its background jobs, with a method
    for each of the turn's records: the extraction, the recall counts, the session's archive
    and the thread's registration (the procedures are `engram.nodes.procedures`').

    Args:
        memory_model: Extracts memories with structured output; None uses the offline rules.
        extractor: Replaces the extractor `memory_model` and `Context.extraction.mode` would give.
        merge_decider: Replaces the merge decider `memory_model` would give (None without a
            memory model: the write policy's threshold rule alone).
        window_messages: Messages per extraction call at most.
        window_tokens: Tokens per extraction call, about (a single exchange is never cut).
        work: Background jobs: when the run's mode says so, the extraction becomes a job
            (`engram.nodes.work.background`); a session end first waits for the thread's jobs and
            applies them. None always extracts inline.
    """

    def __init__(
        self,
        memory_model: BaseChatModel | None,
        *,
        extractor: Extractor | None = None,
        merge_decider: MergeDecider | None = None,
        window_messages: int = WINDOW_MESSAGES,
        window_tokens: int = WINDOW_TOKENS,
        work: MemoryWork | None = None,
    ) -> None:
        self.memory_model = memory_model
        self.extractor = extractor
        self.window_messages = window_messages
        self.window_tokens = window_tokens
        self.work = work
        self._extractors: dict[str, Extractor] = {}
        self._fallback = RuleExtractor()
        self.merge_decider = (
            merge_decider if merge_decider is not None else make_merge_decider(memory_model)
        )
        if work is not None:
            work.register("consolidate", self.run_job)

    async def consolidate(self, state: EngramState, runtime: Runtime[Context]) -> dict[str, Any]:
        """The node: the extraction (inline, or submitted as a background job), then the turn's
        other records; the state update."""
        known_jobs = list(state.get("memory_jobs", ()))
        applied = await self._collect_at_session_end(state, runtime)
        state = applied_state(state, applied)
        submitted = await self._submit(state, runtime)
        if submitted is None:
            extracted = await self._extract_and_write(state, runtime)
        else:
            extracted = await self._wait_at_session_end(state, submitted, runtime)
        update = merge_updates(applied, extracted)
        update = merge_updates(update, await self._count_recalls(state, runtime))
        update = merge_updates(update, await self._archive_session(state, runtime))
        update = merge_updates(update, await learn_procedure(state, runtime))
        update = merge_updates(update, claim(state, runtime.context.user_id))
        update = merge_updates(update, await self._register_thread(state, runtime))
        jobs = [*known_jobs, *(submitted or {}).get("memory_jobs", ())]
        return merge_updates(update, await self._release(jobs, update, runtime))

    async def run_job(
        self, job: dict[str, Any], state: EngramState, runtime: Runtime[Context]
    ) -> dict[str, Any]:
        """A background consolidation: the job's messages extracted and written; the result
        `start` applies (the record, the `memory.*` events, what could not be written)."""
        ids = {m.get("data", {}).get("id") for m in job["messages"]}
        thread = state["messages"]
        snapshot: dict[str, Any] = {
            "messages": thread,
            "pending_extraction": job["messages"],
            "consolidated_message_ids": [m.id for m in thread if m.id not in ids],
        }
        events: list[dict[str, Any]] = []
        update = await self._extract_and_write(
            snapshot,  # type: ignore[arg-type]
            runtime.override(stream_writer=events.append),
        )
        return {
            "consolidation": {**update["consolidation"], "trigger": job["trigger"]},
            "unwritten_ids": [m.get("data", {}).get("id") for m in update["pending_extraction"]],
            "failures": list(update["failures"]),
            "events": events,
        }

    # -- background jobs ----------------------------------------------------------------------

    async def _collect_at_session_end(
        self, state: EngramState, runtime: Runtime[Context]
    ) -> dict[str, Any]:
        """At a session end, the thread's background jobs waited for and applied; the update."""
        if self.work is None or not state.get("end_session") or runtime.context.incognito:
            return {}
        return await self.work.collect(state, runtime, finish=True)

    async def _submit(self, state: EngramState, runtime: Runtime[Context]) -> dict[str, Any] | None:
        """Record the extraction as a background job when the run's mode says so; the state
        update, or None to extract inline."""
        ctx = runtime.context
        trigger = consolidation_trigger(state, ctx.extraction.every_turns)
        if (
            self.work is None
            or trigger is None
            or runtime.store is None
            or not self.work.in_background(ctx, "consolidate")
        ):
            return None
        done = list(state.get("consolidated_message_ids", ()))
        _, todo = _todo(state, set(done))
        if not todo:
            return None
        job = {"trigger": trigger, "messages": to_pending(todo)}
        recorded = await self.work.submit("consolidate", job, state, runtime)
        if recorded is None:
            return None
        return {
            "turns_since_consolidation": 0,
            "pending_extraction": [],  # the job holds them now
            "consolidated_message_ids": _bounded(done + [m.id for m in todo if m.id], state),
            **recorded,
        }

    async def _wait_at_session_end(
        self, state: EngramState, submitted: dict[str, Any], runtime: Runtime[Context]
    ) -> dict[str, Any]:
        """The update that submitted a job; at a session end (no reply to hurry), with the job
        waited for and applied."""
        if self.work is None or not state.get("end_session"):
            return submitted
        finished = await self.work.collect(applied_state(state, submitted), runtime, finish=True)
        update = merge_updates(submitted, finished)
        # A session-end run skips `start`, which otherwise resets the turn's failures.
        failures = update.get("failures", [])
        update["failures"] = failures if isinstance(failures, Overwrite) else Overwrite(failures)
        return update

    async def _release(
        self, jobs: list[dict[str, Any]], update: dict[str, Any], runtime: Runtime[Context]
    ) -> dict[str, Any]:
        """Delete the journal entries of the `jobs` that `update` applied
        (`MemoryWork.release`); the update of its failures."""
        if self.work is None:
            return {}
        failures = await self.work.release(jobs, update, runtime)
        return {"failures": failures} if failures else {}

    # -- the extraction -----------------------------------------------------------------------

    def _extractor_for(self, ctx: Context) -> tuple[str, Extractor]:
        """The run's extraction ("write", "review", "rules"; "given" for `extractor`) and its
        extractor."""
        if self.extractor is not None:
            return "given", self.extractor
        model = self.memory_model
        name = extraction_for(model, ctx.extraction.mode)
        if name not in self._extractors:
            self._extractors[name] = make_extractor(model, name)  # type: ignore[arg-type]
        return name, self._extractors[name]

    async def _extract_and_write(
        self, state: EngramState, runtime: Runtime[Context]
    ) -> dict[str, Any]:
        """Extract from the messages not extracted from yet and write what they hold, when this
        turn extracts; the state update."""
        ctx = runtime.context
        done = list(state.get("consolidated_message_ids", ()))
        if ctx.incognito:
            return {"consolidated_message_ids": _bounded(done + _this_turn_ids(state), state)}
        trigger = consolidation_trigger(state, ctx.extraction.every_turns)
        if trigger is None:
            return {}
        if runtime.store is None:
            logger.warning("no store: long-term memories are not extracted (compile with store=...)")
            return {"turns_since_consolidation": 0, "pending_extraction": []}

        seen = set(done)
        pending, todo = _todo(state, seen)
        extraction, extract = self._extractor_for(ctx)
        ltm = LongTermMemory(runtime.store, merge_decider=self.merge_decider)
        written = await self._write_windows(todo, state["messages"], seen, extract, ltm, runtime)
        announce_writes(runtime.stream_writer, ctx.user_id, written.results)
        announce_pending(runtime.stream_writer, ctx.user_id, written.proposed)
        logger.info(
            "consolidated %d of %d messages (%s, %s extractor): %s",
            len(written.message_ids), len(todo), trigger, extract.mode,
            _tally(written.results) or "nothing to remember",
        )
        failures = written.failures
        return {
            "turns_since_consolidation": 0,
            "pending_extraction": to_pending(_still_pending(pending, written.message_ids)),
            "consolidated_message_ids": _bounded(done + written.message_ids, state),
            "consolidation": self._record(trigger, extraction, extract.mode, written, ctx),
            # A session-end run skips `start`, which otherwise resets the turn's failures.
            "failures": Overwrite(failures) if state.get("end_session") else failures,
        }

    async def _write_windows(
        self,
        todo: Sequence[BaseMessage],
        thread: Sequence[BaseMessage],
        seen: set[str],
        extract: Extractor,
        ltm: LongTermMemory,
        runtime: Runtime[Context],
    ) -> _Written:
        """`todo` extracted from window by window (`windows`), each window's memories written
        (or proposed) as soon as it is extracted."""
        counter = counter_for_model(None)
        thread_id = runtime.execution_info.thread_id if runtime.execution_info else None
        written = _Written()
        for window in windows(
            todo, counter, max_messages=self.window_messages, max_tokens=self.window_tokens
        ):
            context = _context_for(window, thread, seen)
            candidates = await self._extract_window(window, context, extract, written)
            if candidates is None:
                continue
            candidates = said_when(
                _most_important(candidates, window, counter, self.window_tokens), window
            )
            await self._write_window(window, candidates, ltm, runtime, thread_id, written)
        return written

    async def _extract_window(
        self,
        window: list[BaseMessage],
        context: list[BaseMessage],
        extract: Extractor,
        written: _Written,
    ) -> list[MemoryCandidate] | None:
        """The window's candidates; when the memory model fails on it, the offline rules'
        (recorded in `written`). None when an offline extractor failed: the window is skipped.
        A memory the model wrote that does not rest on the user's words is dropped and recorded
        as an `ungrounded` failure (`engram.nodes.extract.grounding`)."""
        try:
            candidates = await extract.aextract(window, context=context)
        except RECOVERABLE_ERRORS as exc:
            written.failures.append(record_failure("extract", exc))
            if extract.mode != "llm":
                return None
            candidates = await self._fallback.aextract(window, context=context)
            written.fallback_windows += 1
            return candidates
        kept, dropped = split_grounded(candidates, [*context, *window])
        if dropped:
            logger.info("dropped %d memories the model wrote from nothing the user said", len(dropped))
            written.failures.extend(
                {"stage": "ungrounded", "error": redact(c.content).text} for c in dropped
            )
        return kept

    async def _write_window(
        self,
        window: list[BaseMessage],
        candidates: list[MemoryCandidate],
        ltm: LongTermMemory,
        runtime: Runtime[Context],
        thread_id: str | None,
        written: _Written,
    ) -> None:
        """Write the window's candidates, or propose them (`Context.confirm_memories`), and
        record the outcome in `written`; a store failure leaves the window unwritten."""
        ctx = runtime.context
        ids = [m.id for m in window if m.id]
        try:
            if ctx.confirm_memories:
                written.proposed.extend(await PendingMemories(ltm.store, ltm).apropose(
                    ctx.user_id, candidates, thread_id=thread_id, message_ids=ids
                ))
                results = []
            else:
                results = await ltm.aupsert(
                    ctx.user_id, candidates, thread_id=thread_id, message_ids=ids
                )
        except RECOVERABLE_ERRORS as exc:
            written.failures.append(record_failure("store", exc))
            return
        written.results.extend(results)
        written.failures.extend(decision_failures(results))
        written.message_ids.extend(ids)

    def _record(
        self, trigger: Trigger, extraction: str, mode: str, written: _Written, ctx: Context
    ) -> dict[str, Any]:
        """The record of the extraction (`ConsolidationInfo`)."""
        results = written.results
        return {
            "trigger": trigger,
            "mode": mode,
            "extraction": extraction,
            "fallback_windows": written.fallback_windows,
            "messages": len(written.message_ids),
            "actions": _counts(results),
            **({"decisions": decision_counts(results)} if self.merge_decider is not None else {}),
            "memory_ids": [r.memory.id for r in results if r.memory and r.action not in _QUIET],
            **({"pending_ids": [p.id for p in written.proposed]} if ctx.confirm_memories else {}),
            "at": datetime.now(UTC).isoformat(),
        }

    # -- the turn's other records -------------------------------------------------------------

    async def _count_recalls(self, state: EngramState, runtime: Runtime[Context]) -> dict[str, Any]:
        """Count this turn's recall of the memories `start` put in the prompt (their
        `access_count` and `last_accessed`), after the reply rather than before it; the update
        of its failure."""
        used = state.get("built_context", {}).get("memory_ids", [])
        if state.get("end_session") or runtime.store is None or not used:
            return {}
        try:
            await LongTermMemory(runtime.store).atouch(runtime.context.user_id, used)
        except RECOVERABLE_ERRORS as exc:
            return {"failures": [record_failure("recall_stats", exc)]}
        return {}

    async def _archive_session(
        self, state: EngramState, runtime: Runtime[Context]
    ) -> dict[str, Any]:
        """At a session end, archive the messages still in the thread as episodes (`compact`
        archived the ones it evicted), so every message of the session can be recalled by later
        threads; never in incognito runs. Archiving the same messages again overwrites them.
        The update of its failure."""
        ctx = runtime.context
        if not state.get("end_session") or ctx.incognito or runtime.store is None:
            return {}
        thread_id = runtime.execution_info.thread_id if runtime.execution_info else None
        ops = episode_ops(list(state.get("messages", ())), user_id=ctx.user_id, thread_id=thread_id)
        if not ops:
            return {}
        try:
            await runtime.store.abatch(ops)
        except RECOVERABLE_ERRORS as exc:
            return {"failures": [record_failure("archive", exc)]}
        return {}

    async def _register_thread(
        self, state: EngramState, runtime: Runtime[Context]
    ) -> dict[str, Any]:
        """Record this thread in the user's thread registry, once (`registered_user` marks it
        done), so that deleting the user also finds this thread's checkpoints. A failed write is
        retried on the next turn."""
        user_id = runtime.context.user_id
        thread_id = runtime.execution_info.thread_id if runtime.execution_info else None
        if runtime.store is None or state.get("registered_user") == user_id or thread_id is None:
            return {}
        try:
            await runtime.store.abatch(
                [register_thread_op(user_id, thread_id, datetime.now(UTC).isoformat())]
            )
        except RECOVERABLE_ERRORS as exc:
            logger.warning("could not register thread %s of user %s, retrying next turn: %s",
                           thread_id, user_id, exc)
            return {}
        return {"registered_user": user_id}


def make_consolidate(
    memory_model: BaseChatModel | None,
    *,
    extractor: Extractor | None = None,
    merge_decider: MergeDecider | None = None,
    window_messages: int = WINDOW_MESSAGES,
    window_tokens: int = WINDOW_TOKENS,
    work: MemoryWork | None = None,
) -> ConsolidateNode:
    """The `consolidate` node: `Consolidator(...).consolidate`, with the arguments of
    `Consolidator`."""
    return Consolidator(
        memory_model,
        extractor=extractor,
        merge_decider=merge_decider,
        window_messages=window_messages,
        window_tokens=window_tokens,
        work=work,
    ).consolidate


def _most_important(
    candidates: list[MemoryCandidate],
    window: Sequence[BaseMessage],
    counter: TokenCounter,
    window_tokens: int,
) -> list[MemoryCandidate]:
    """At most `MAX_MEMORIES` candidates per `window_tokens` of the window (the model's schema
    allows as many per call): the most important (the earlier of equals), in their order (a
    correction still comes after what it corrects). A pasted document of one message (a window
    is never cut inside a message) stays a bounded write.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> facts = [MemoryCandidate(content=f"fact {i}", category="fact") for i in range(30)]
        >>> facts[29].importance = 1.0
        >>> kept = _most_important(facts, [HumanMessage("short")], counter_for_model(None), 4000)
        >>> len(kept), kept[0].content, kept[-1].content
        (10, 'fact 0', 'fact 29')
    """
    limit = MAX_MEMORIES * max(1, -(-counter.count_messages(window) // window_tokens))
    if len(candidates) <= limit:
        return candidates
    logger.warning("kept the %d most important of %d memories found in one window", limit, len(candidates))
    ranked = sorted(range(len(candidates)), key=lambda i: -candidates[i].effective_importance())
    return [candidates[i] for i in sorted(ranked[:limit])]


def said_when(
    candidates: Sequence[MemoryCandidate], window: Sequence[BaseMessage]
) -> list[MemoryCandidate]:
    """The candidates with when the user said them (`MemoryCandidate.said_at`, what the memory
    block dates a memory by): the newest time of the messages each came from, else of the
    window's user messages; unchanged where no message has a time (`message_time`).

    Example:
        >>> said = {"timestamp": "2023-05-08T13:56:00"}
        >>> window = [HumanMessage("I moved to Lisbon", id="m1", additional_kwargs=said)]
        >>> [c.said_at for c in said_when([MemoryCandidate(content="I moved to Lisbon",
        ...                                                category="fact")], window)]
        ['2023-05-08T13:56:00+00:00']
    """
    times = {m.id: when for m in window if m.id and (when := _utc_time(m)) is not None}
    users = [when for m in window if isinstance(m, HumanMessage) and (when := _utc_time(m))]
    out = []
    for candidate in candidates:
        own = [times[i] for i in candidate.message_ids or () if i in times]
        when = max(own or users, default=None)
        if candidate.said_at is None and when is not None:
            candidate = candidate.model_copy(update={"said_at": when.isoformat()})
        out.append(candidate)
    return out


def _utc_time(message: BaseMessage) -> datetime | None:
    when = message_time(message)
    return when if when is None or when.tzinfo else when.replace(tzinfo=UTC)


def _todo(state: EngramState, seen: set[str]) -> tuple[list[BaseMessage], list[BaseMessage]]:
    """The evicted messages not extracted from yet, and with them the thread's: what to extract."""
    pending = [m for m in from_pending(state.get("pending_extraction", [])) if m.id not in seen]
    fresh = [m for m in state["messages"] if m.id not in seen]
    return pending, _unique(pending + fresh)



def _still_pending(pending: list[BaseMessage], written: list[str]) -> list[BaseMessage]:
    """The evicted messages whose memories were not written, at most the newest `MAX_PENDING`."""
    finished = set(written)
    still_pending = [m for m in pending if m.id not in finished]
    if len(still_pending) > MAX_PENDING:
        logger.warning(
            "dropping %d evicted messages that could not be extracted after repeated failures",
            len(still_pending) - MAX_PENDING,
        )
        still_pending = still_pending[-MAX_PENDING:]
    return still_pending


def windows(
    messages: Sequence[BaseMessage],
    counter: TokenCounter,
    *,
    max_messages: int = WINDOW_MESSAGES,
    max_tokens: int = WINDOW_TOKENS,
) -> list[list[BaseMessage]]:
    """Exchanges packed into windows of at most `max_messages` / `max_tokens` (an exchange whole)."""
    out: list[list[BaseMessage]] = []
    size = 0
    for exchange in split_exchanges(list(messages)):
        tokens = sum(counter.count_message(m) for m in exchange)
        if out and out[-1] and (len(out[-1]) + len(exchange) > max_messages or size + tokens > max_tokens):
            out.append([])
            size = 0
        if not out:
            out.append([])
        out[-1].extend(exchange)
        size += tokens
    return [w for w in out if w]


def _context_for(
    window: Sequence[BaseMessage], thread: Sequence[BaseMessage], consolidated: set[str]
) -> list[BaseMessage]:
    """Already-extracted messages right before `window`, so it has at least 3 messages to read."""
    missing = MIN_WINDOW_MESSAGES - len(window)
    if missing <= 0:
        return []
    first = window[0].id
    position = next((i for i, m in enumerate(thread) if m.id == first), None)
    if position is None:  # an evicted window: what came before it is gone from the thread
        return []
    before = [m for m in thread[:position] if m.id in consolidated]
    return before[-missing:]


def _this_turn_ids(state: EngramState) -> list[str]:
    """Ids from the last user message on: the messages of an incognito turn."""
    messages = state.get("messages", [])
    start = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=0)
    return [m.id for m in messages[start:] if m.id]


def _bounded(ids: list[str], state: EngramState) -> list[str]:
    """Ids still in the thread (evicted ones are never seen again), newest last, capped."""
    present = {m.id for m in state.get("messages", [])}
    kept = [i for i in dict.fromkeys(ids) if i in present]
    return kept[-MAX_CONSOLIDATED_IDS:]


def _unique(messages: list[BaseMessage]) -> list[BaseMessage]:
    seen: set[str] = set()
    out = []
    for message in messages:
        if message.id is None or message.id not in seen:
            out.append(message)
            if message.id is not None:
                seen.add(message.id)
    return out


def _counts(results: Sequence[WriteResult]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for result in results:
        counts[result.action] = counts.get(result.action, 0) + 1
    return counts


def _tally(results: Sequence[WriteResult]) -> str:
    return ", ".join(f"{n} {action}" for action, n in sorted(_counts(results).items()))
