"""The compaction edge after `respond`, and `compact`: incremental summary plus eviction.

The edge fires when the messages not yet summarized reach `Context.compaction.message_threshold`
OR their tokens exceed `Context.compaction.token_threshold`: the count catches many short
messages, the tokens a few long ones. "Not yet summarized" excludes the tail the last compaction
kept, so the counters restart after a compaction; and the edge never fires on the turn right after
one, so a tail that is itself over the threshold cannot compact turn after turn. Above the hard cap
`Context.compaction.max_messages` it fires regardless.

`compact` keeps the last `Context.compaction.keep_recent_messages` messages verbatim (more when
the cut would separate an AI message with tool calls from its results) and, for everything before them:

1. folds them into the running summary (the LLM or the offline summarizer), secrets redacted
   from the messages it reads and from the summary it writes, whichever summarizer wrote it,
   and, when the thread has a task state or its messages hold a tool-using run (a tool call
   or its result, folded or kept), updates the task state (`task_state`: goal, steps done and
   to do, findings) from them (the memory model's bounded call or the offline rules,
   `engram.nodes.task`), so what the agent is doing survives as structure, not only as prose;
   a plain chat has no task state and no call for it;
2. archives them as episodes under `("episodes", user_id)` — one per message, with the thread
   id, the message id and the two messages before it as lexical context — so details the
   summary dropped stay recallable;
3. removes them from `messages` (`RemoveMessage`) and queues them in `pending_extraction` for
   `consolidate` ("extract before evict");
4. emits `{"event": "context.compacted", "evicted", "kept", "episodes", "summary_tokens",
   "mode", "lossy"}` on LangGraph's custom stream.

When only the tail is left (a few huge messages crossed the token threshold), nothing is evicted:
the counters restart and no event is emitted.

In background mode (`Context.memory_work`, `engram.nodes.work.background`) steps 1-2 are a job:
`compact` records which messages it folds, restarts the counters and returns; the thread's next
`start` applies the job's summary, steps 3-4 included (`engram.nodes.work.results`). No new
compaction starts while one is pending.

If the summarizer or the archive fails, nothing is evicted, the failure is recorded, and the
next trigger tries again. Only above the hard cap are messages evicted anyway, with a
lossy "[N messages ...]" note in the summary.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.runtime import Runtime

from engram.nodes.episodes import episode_ops
from engram.nodes.failures import RECOVERABLE_ERRORS, record_failure
from engram.nodes.model.summarize import Summarizer, make_summarizer
from engram.nodes.prompts import PENDING_MESSAGES_NOTE
from engram.nodes.task import TaskUpdater
from engram.nodes.text.redaction import redact_messages
from engram.nodes.text.tokens import TokenCounter, counter_for_model
from engram.nodes.work.background import MemoryWork
from engram.nodes.work.results import compaction_update
from engram.stores.secrets import redact

if TYPE_CHECKING:
    from engram.nodes.context import Context
    from engram.nodes.state import EngramState

logger = logging.getLogger(__name__)

CompactNode = Callable[["EngramState", Runtime["Context"]], Awaitable[dict[str, Any]]]
Route = Literal["tools", "compact", "consolidate"]


def make_route_after_respond(
    *, model_name: str | None, has_tools: bool
) -> Callable[[EngramState, Runtime[Context]], Route]:
    """The conditional edge after `respond`: the tool loop, then the compaction check."""

    def route_after_respond(state: EngramState, runtime: Runtime[Context]) -> Route:
        last = state["messages"][-1]
        if has_tools and isinstance(last, AIMessage) and last.tool_calls:
            return "tools"
        if should_compact(state, runtime.context, counter_for_model(model_name)):
            return "compact"
        return "consolidate"

    return route_after_respond


def should_compact(state: EngramState, ctx: Context, counter: TokenCounter) -> bool:
    """Whether this turn compacts (see the module docstring)."""
    messages = state["messages"]
    if any(job["kind"] == "compact" for job in state.get("memory_jobs", ())):
        return False  # one fold at a time: the next one starts from its summary
    if len(messages) > ctx.compaction.max_messages:
        return True
    last = state.get("last_compaction_turn")
    if last is not None and state.get("turn", 0) - last < 2:
        return False
    tail = set(state.get("kept_tail_ids", ()))
    fresh = [m for m in messages if m.id not in tail]
    if len(fresh) >= ctx.compaction.message_threshold:
        return True
    return ctx.compaction.token_threshold is not None and (
        sum(map(counter.count_message, fresh)) > ctx.compaction.token_threshold
    )


def eviction_cut(messages: Sequence[BaseMessage], keep: int) -> int:
    """Index of the first kept message: the last `keep` stay, and a kept tool result keeps the
    AI message that called it (and that message's other results)."""
    cut = max(0, len(messages) - keep)
    while 0 < cut < len(messages) and isinstance(messages[cut], ToolMessage):
        cut -= 1
    return cut


class Compactor:
    """The `compact` node (see the module docstring) and its background jobs, a method per
    concern: the trigger (`due`), the fold (`_fold`: the summary, the task state, the archive)
    and the node itself (`compact`: what to evict, and its eviction by `compaction_update`,
    which applies background jobs' folds too).

    Args:
        memory_model: Writes the summary; None uses the offline extractive summarizer.
        model_name: The answering model's name (token counts use its encoding).
        summarizer: Overrides the summarizer `make_summarizer(memory_model)` would pick.
        work: Background jobs: when the run's mode says so, the fold becomes a job the next
            turn applies (`engram.nodes.work.background`); None always folds inline.
        task_updater: Overrides the task-state update `TaskUpdater(memory_model)` would do.
    """

    def __init__(
        self,
        memory_model: BaseChatModel | None,
        *,
        model_name: str | None,
        summarizer: Summarizer | None = None,
        work: MemoryWork | None = None,
        task_updater: TaskUpdater | None = None,
    ) -> None:
        self.model_name = model_name
        self.summarizer = summarizer or make_summarizer(memory_model)
        self.task_updater = task_updater or TaskUpdater(memory_model)
        self.work = work
        if work is not None:
            work.register("compact", self.run_job)

    def due(self, state: EngramState, ctx: Context) -> bool:
        """Whether this turn compacts (`should_compact`, with the answering model's counts)."""
        return should_compact(state, ctx, counter_for_model(self.model_name))

    async def compact(self, state: EngramState, runtime: Runtime[Context]) -> dict[str, Any]:
        """The node: everything before the kept tail folded into the summary and evicted,
        inline or by a background job; the state update."""
        ctx = runtime.context
        messages = state["messages"]
        turn = state.get("turn", 0)
        cut = eviction_cut(messages, ctx.compaction.keep_recent_messages)
        evicted, kept = messages[:cut], messages[cut:]
        restart = {"last_compaction_turn": turn, "kept_tail_ids": [m.id for m in kept]}
        if not evicted:
            return restart
        over_cap = len(messages) > ctx.compaction.max_messages
        evicted_ids = [m.id for m in evicted if m.id]
        if (recorded := await self._submit(state, evicted_ids, over_cap, runtime)) is not None:
            return {**restart, **recorded}
        fold = await self._fold(state, evicted, over_cap, runtime)
        if not fold["ok"]:
            return {"failures": fold["failures"]}
        update = compaction_update(
            state, evicted_ids, fold, incognito=ctx.incognito, writer=runtime.stream_writer
        )
        return {**restart, **update}

    async def run_job(
        self, job: dict[str, Any], state: EngramState, runtime: Runtime[Context]
    ) -> dict[str, Any]:
        """A background compaction: the fold of the job's messages (applied by `start`)."""
        ids = set(job["message_ids"])
        evicted = [m for m in state["messages"] if m.id in ids]
        return await self._fold(state, evicted, job["over_cap"], runtime)

    async def _submit(
        self,
        state: EngramState,
        evicted_ids: list[str],
        over_cap: bool,
        runtime: Runtime[Context],
    ) -> dict[str, Any] | None:
        """Record the fold as a background job when the run's mode says so; the state update
        that records it, or None to fold inline."""
        if self.work is None or not self.work.in_background(runtime.context, "compact"):
            return None
        turn = state.get("turn", 0)
        job = {
            "message_ids": evicted_ids,
            "over_cap": over_cap,
            "restore": {
                "last_compaction_turn": state.get("last_compaction_turn", turn - 2),
                "kept_tail_ids": list(state.get("kept_tail_ids", ())),
            },
        }
        return await self.work.submit("compact", job, state, runtime)

    async def _fold(
        self, state: EngramState, evicted: Sequence[BaseMessage], over_cap: bool,
        runtime: Runtime[Context],
    ) -> dict[str, Any]:
        """The new summary of the state's summary + `evicted`, the new task state (when the
        thread's messages hold a tool-using run), and `evicted` archived as episodes. `ok` is
        False when the summarizer or the archive failed (nothing may be evicted then), unless
        the hard cap forces the eviction (a lossy note in the summary then)."""
        ctx = runtime.context
        counter = counter_for_model(self.model_name)
        failures: list[dict[str, str]] = []
        lossy = False
        previous = state.get("summary", "")
        readable = redact_messages(evicted)
        try:
            summary = await self.summarizer.asummarize(
                redact(previous).text,
                readable,
                max_tokens=ctx.compaction.max_summary_tokens,
                counter=counter,
            )
        except RECOVERABLE_ERRORS as exc:
            failures.append(record_failure("summarize", exc))
            if not over_cap:
                return {"ok": False, "failures": failures}
            summary = _lossy_summary(
                previous, len(evicted), ctx.compaction.max_summary_tokens, counter
            )
            lossy = True
        # Whatever the summarizer wrote (a model may restate a secret it was not shown).
        summary = counter.truncate(redact(summary).text, ctx.compaction.max_summary_tokens)
        task, task_failures = await self._task_update(state, readable, counter)
        failures += task_failures
        episode_keys, failure = await self._archive(evicted, runtime)
        if failure is not None:
            failures.append(failure)
            if not over_cap:
                return {"ok": False, "failures": failures}
        return {
            "ok": True,
            "summary": summary,
            "summary_tokens": counter.count_text(summary),
            **task,
            "mode": self.summarizer.mode,
            "lossy": lossy,
            "episodes": len(episode_keys),
            "episode_keys": episode_keys,
            "failures": failures,
        }

    async def _task_update(
        self, state: EngramState, readable: Sequence[BaseMessage], counter: TokenCounter
    ) -> tuple[dict[str, Any], list[dict[str, str]]]:
        """The update of the task state from the folded messages, when the thread has one or its
        messages hold a tool-using run (a plain chat has none), and its failures."""
        if not (state.get("task_state") or _uses_tools(state["messages"])):
            return {}, []
        task_state, failures = await self.task_updater.aupdate(
            state.get("task_state"), readable, counter
        )
        return {"task_state": task_state}, failures

    async def _archive(
        self, evicted: Sequence[BaseMessage], runtime: Runtime[Context]
    ) -> tuple[list[str], dict[str, str] | None]:
        """Archive `evicted` as episodes (not in incognito runs, nor without a store): their
        keys, or the store's failure."""
        ctx = runtime.context
        if runtime.store is None or ctx.incognito:
            return [], None
        thread_id = runtime.execution_info.thread_id if runtime.execution_info else None
        ops = episode_ops(evicted, user_id=ctx.user_id, thread_id=thread_id)
        try:
            await runtime.store.abatch(ops)
        except RECOVERABLE_ERRORS as exc:
            return [], record_failure("archive", exc)
        return [op.key for op in ops], None


def make_compact(
    memory_model: BaseChatModel | None,
    *,
    model_name: str | None,
    summarizer: Summarizer | None = None,
    work: MemoryWork | None = None,
    task_updater: TaskUpdater | None = None,
) -> CompactNode:
    """The `compact` node: `Compactor(...).compact`, with the arguments of `Compactor`."""
    return Compactor(
        memory_model,
        model_name=model_name,
        summarizer=summarizer,
        work=work,
        task_updater=task_updater,
    ).compact


def _uses_tools(messages: Sequence[BaseMessage]) -> bool:
    """Whether a tool-using run is in `messages`: an AI message that calls a tool, or a result."""
    return any(
        isinstance(m, ToolMessage) or (isinstance(m, AIMessage) and m.tool_calls) for m in messages
    )


def _lossy_summary(previous: str, count: int, max_tokens: int, counter: TokenCounter) -> str:
    note = PENDING_MESSAGES_NOTE.format(count=count)
    kept = counter.truncate(previous, max_tokens - counter.count_text(note) - 1)
    return f"{kept}\n{note}" if kept else note
