"""`consolidate`: the terminal node, where conversation becomes long-term memory.

It runs at the end of every turn and decides whether to extract:

- always at session end (`{"end_session": True}`);
- when `compact` evicted messages not yet extracted from (`pending_extraction`, "extract before
  evict");
- every `Context.consolidate_every_turns` user turns (`turns_since_consolidation`, counted by
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
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.runtime import Runtime
from langgraph.types import Overwrite

from engram.nodes.episodes import episode_ops
from engram.nodes.events import QUIET_ACTIONS as _QUIET
from engram.nodes.events import announce_pending, announce_writes
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
`Context.max_messages`)."""
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


def make_consolidate(
    memory_model: BaseChatModel | None,
    *,
    extractor: Extractor | None = None,
    merge_decider: MergeDecider | None = None,
    window_messages: int = WINDOW_MESSAGES,
    window_tokens: int = WINDOW_TOKENS,
    work: MemoryWork | None = None,
) -> ConsolidateNode:
    """The `consolidate` node.

    Args:
        memory_model: Extracts memories with structured output; None uses the offline rules.
        extractor: Replaces the extractor `memory_model` and `Context.extraction` would give.
        merge_decider: Replaces the merge decider `memory_model` would give (None without a
            memory model: the write policy's threshold rule alone).
        window_messages: Messages per extraction call at most.
        window_tokens: Tokens per extraction call, about (a single exchange is never cut).
        work: Background jobs: when the run's mode says so, the extraction becomes a job
            (`engram.nodes.work.background`); a session end first waits for the thread's jobs and
            applies them. None always extracts inline.
    """
    extractors: dict[str, Extractor] = {}

    def extractor_for(ctx: Context) -> tuple[str, Extractor]:
        """The run's extraction ("write", "review", "rules"; "given" for `extractor`) and its
        extractor."""
        if extractor is not None:
            return "given", extractor
        name = extraction_for(memory_model, ctx.extraction)  # type: ignore[arg-type]
        if name not in extractors:
            extractors[name] = make_extractor(memory_model, name)  # type: ignore[arg-type]
        return name, extractors[name]

    fallback = RuleExtractor()
    decider = merge_decider if merge_decider is not None else make_merge_decider(memory_model)

    async def consolidate(state: EngramState, runtime: Runtime[Context]) -> dict[str, Any]:
        applied: dict[str, Any] = {}
        known_jobs = list(state.get("memory_jobs", ()))
        if work is not None and state.get("end_session") and not runtime.context.incognito:
            applied = await work.collect(state, runtime, finish=True)
            state = applied_state(state, applied)
        update = await _submit(state, runtime) if work is not None else None
        submitted = update or {}
        if update is None:
            update = await _extract_and_write(state, runtime)
        elif work is not None and state.get("end_session"):  # no reply to hurry: wait for it
            finished = await work.collect(applied_state(state, update), runtime, finish=True)
            update = merge_updates(update, finished)
            # A session-end run skips `start`, which otherwise resets the turn's failures.
            failures = update.get("failures", [])
            update["failures"] = failures if isinstance(failures, Overwrite) else Overwrite(failures)
        update = merge_updates(applied, update)
        if failure := await _count_recalls(state, runtime):
            update["failures"] = [*update.get("failures", []), failure]
        if failure := await _archive_session(state, runtime):
            update = merge_updates(update, {"failures": [failure]})
        update = merge_updates(update, await learn_procedure(state, runtime))
        update.update(claim(state, runtime.context.user_id))
        if runtime.store is not None and state.get("registered_user") != runtime.context.user_id:
            update.update(await _register_thread(runtime))
        if work is not None:
            jobs = [*known_jobs, *submitted.get("memory_jobs", ())]
            if failures := await work.release(jobs, update, runtime):
                update = merge_updates(update, {"failures": failures})
        return update

    async def _submit(state: EngramState, runtime: Runtime[Context]) -> dict[str, Any] | None:
        """Record the extraction as a background job when the run's mode says so; the state
        update, or None to extract inline."""
        ctx = runtime.context
        trigger = consolidation_trigger(state, ctx.consolidate_every_turns)
        if (
            work is None
            or trigger is None
            or runtime.store is None
            or not work.in_background(ctx, "consolidate")
        ):
            return None
        done = list(state.get("consolidated_message_ids", ()))
        _, todo = _todo(state, set(done))
        if not todo:
            return None
        job = {"trigger": trigger, "messages": to_pending(todo)}
        recorded = await work.submit("consolidate", job, state, runtime)
        if recorded is None:
            return None
        return {
            "turns_since_consolidation": 0,
            "pending_extraction": [],  # the job holds them now
            "consolidated_message_ids": _bounded(done + [m.id for m in todo if m.id], state),
            **recorded,
        }

    async def run_job(
        job: dict[str, Any], state: EngramState, runtime: Runtime[Context]
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
        update = await _extract_and_write(
            snapshot,  # type: ignore[arg-type]
            runtime.override(stream_writer=events.append),
        )
        return {
            "consolidation": {**update["consolidation"], "trigger": job["trigger"]},
            "unwritten_ids": [m.get("data", {}).get("id") for m in update["pending_extraction"]],
            "failures": list(update["failures"]),
            "events": events,
        }

    async def _extract_and_write(state: EngramState, runtime: Runtime[Context]) -> dict[str, Any]:
        ctx = runtime.context
        done = list(state.get("consolidated_message_ids", ()))
        if ctx.incognito:
            return {"consolidated_message_ids": _bounded(done + _this_turn_ids(state), state)}
        trigger = consolidation_trigger(state, ctx.consolidate_every_turns)
        if trigger is None:
            return {}
        if runtime.store is None:
            logger.warning("no store: long-term memories are not extracted (compile with store=...)")
            return {"turns_since_consolidation": 0, "pending_extraction": []}

        seen = set(done)
        pending, todo = _todo(state, seen)
        counter = counter_for_model(None)
        extraction, extract = extractor_for(ctx)
        ltm = LongTermMemory(runtime.store, merge_decider=decider)
        thread_id = runtime.execution_info.thread_id if runtime.execution_info else None
        failures: list[dict[str, str]] = []
        written: list[str] = []
        results: list[WriteResult] = []
        proposed: list[PendingMemory] = []
        fallbacks = 0
        for window in windows(todo, counter, max_messages=window_messages, max_tokens=window_tokens):
            context = _context_for(window, state["messages"], seen)
            try:
                candidates = await extract.aextract(window, context=context)
            except RECOVERABLE_ERRORS as exc:
                failures.append(record_failure("extract", exc))
                if extract.mode != "llm":
                    continue
                candidates = await fallback.aextract(window, context=context)
                fallbacks += 1
            candidates = said_when(_most_important(candidates, window, counter, window_tokens), window)
            ids = [m.id for m in window if m.id]
            try:
                if ctx.confirm_memories:
                    proposed.extend(await PendingMemories(runtime.store, ltm).apropose(
                        ctx.user_id, candidates, thread_id=thread_id, message_ids=ids
                    ))
                    window_results = []
                else:
                    window_results = await ltm.aupsert(
                        ctx.user_id, candidates, thread_id=thread_id, message_ids=ids
                    )
            except RECOVERABLE_ERRORS as exc:
                failures.append(record_failure("store", exc))
                continue
            results.extend(window_results)
            failures.extend(decision_failures(window_results))
            written.extend(ids)

        announce_writes(runtime.stream_writer, ctx.user_id, results)
        announce_pending(runtime.stream_writer, ctx.user_id, proposed)
        logger.info(
            "consolidated %d of %d messages (%s, %s extractor): %s",
            len(written), len(todo), trigger, extract.mode, _tally(results) or "nothing to remember",
        )
        finished = set(written)
        still_pending = [m for m in pending if m.id not in finished]
        if len(still_pending) > MAX_PENDING:
            logger.warning(
                "dropping %d evicted messages that could not be extracted after repeated failures",
                len(still_pending) - MAX_PENDING,
            )
            still_pending = still_pending[-MAX_PENDING:]
        return {
            "turns_since_consolidation": 0,
            "pending_extraction": to_pending(still_pending),
            "consolidated_message_ids": _bounded(done + written, state),
            "consolidation": {
                "trigger": trigger,
                "mode": extract.mode,
                "extraction": extraction,
                "fallback_windows": fallbacks,
                "messages": len(written),
                "actions": _counts(results),
                **({"decisions": decision_counts(results)} if decider is not None else {}),
                "memory_ids": [r.memory.id for r in results if r.memory and r.action not in _QUIET],
                **({"pending_ids": [p.id for p in proposed]} if ctx.confirm_memories else {}),
                "at": datetime.now(UTC).isoformat(),
            },
            # A session-end run skips `start`, which otherwise resets the turn's failures.
            "failures": Overwrite(failures) if state.get("end_session") else failures,
        }

    if work is not None:
        work.register("consolidate", run_job)
    return consolidate


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


async def _count_recalls(state: EngramState, runtime: Runtime[Context]) -> dict[str, str] | None:
    """Count this turn's recall of the memories `start` put in the prompt (their
    `access_count` and `last_accessed`), after the reply rather than before it."""
    used = state.get("built_context", {}).get("memory_ids", [])
    if state.get("end_session") or runtime.store is None or not used:
        return None
    try:
        await LongTermMemory(runtime.store).atouch(runtime.context.user_id, used)
    except RECOVERABLE_ERRORS as exc:
        return record_failure("recall_stats", exc)
    return None


async def _archive_session(state: EngramState, runtime: Runtime[Context]) -> dict[str, str] | None:
    """At a session end, archive the messages still in the thread as episodes (`compact`
    archived the ones it evicted), so every message of the session can be recalled by later
    threads; never in incognito runs. Archiving the same messages again overwrites them."""
    ctx = runtime.context
    if not state.get("end_session") or ctx.incognito or runtime.store is None:
        return None
    thread_id = runtime.execution_info.thread_id if runtime.execution_info else None
    ops = episode_ops(list(state.get("messages", ())), user_id=ctx.user_id, thread_id=thread_id)
    if not ops:
        return None
    try:
        await runtime.store.abatch(ops)
    except RECOVERABLE_ERRORS as exc:
        return record_failure("archive", exc)
    return None


async def _register_thread(runtime: Runtime[Context]) -> dict[str, Any]:
    """Record this thread in the user's thread registry, once (`registered_user` marks it done),
    so that deleting the user also finds this thread's checkpoints. A failed write is retried
    on the next turn."""
    thread_id = runtime.execution_info.thread_id if runtime.execution_info else None
    if thread_id is None or runtime.store is None:
        return {}
    user_id = runtime.context.user_id
    try:
        await runtime.store.abatch(
            [register_thread_op(user_id, thread_id, datetime.now(UTC).isoformat())]
        )
    except RECOVERABLE_ERRORS as exc:
        logger.warning("could not register thread %s of user %s, retrying next turn: %s",
                       thread_id, user_id, exc)
        return {}
    return {"registered_user": user_id}


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
