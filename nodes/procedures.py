"""Procedures learned from tool runs that worked.

A run (a user's request and everything up to the final answer) whose tool calls all came back
without an error is a procedure candidate: the request's task (`engram.nodes.task.rules.
request_task`, its first sentence that asks for something, as the task state's goal) and its
tool calls in order (at least `MIN_CALLS`; engram's own memory and reading tools are not steps,
and a call repeated right after itself counts once). It is written as a `skill` memory
(`engram.stores.memory.procedures`) once the user's next message does not say it failed
(`engram.nodes.task.verdict.said_it_failed`), or when the session ends. Until then it waits in
the thread's state (`pending_procedures`) with the user whose run it was, redacted like every
persisted text, and is written under that user whoever runs the thread next; one the store could
not take waits for the next turn, and one kept without its user (by an older engram) is
dropped. The same task done again with the same tools is the same memory, its use counted.

Incognito runs learn nothing; with `Context.confirm_memories` a procedure waits for the user's
approval like any other memory.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    >>> def call(tool, id, **args):
    ...     return AIMessage("", tool_calls=[{"name": tool, "args": args, "id": id}])
    >>> found = run_procedure([
    ...     HumanMessage("Why is checkout failing? It broke on Monday.", id="h"),
    ...     call("fetch_logs", "1", service="checkout"), ToolMessage("...", tool_call_id="1"),
    ...     call("restart", "2", name="checkout"), ToolMessage("ok", tool_call_id="2"),
    ...     AIMessage("Restarted it: the pool was exhausted."),
    ... ])
    >>> found["task"], found["calls"]
    ('Why is checkout failing?', ['fetch_logs(service="checkout")', 'restart(name="checkout")'])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.runtime import Runtime

from engram.nodes.events import announce_pending, announce_writes
from engram.nodes.failures import RECOVERABLE_ERRORS, record_failure
from engram.nodes.state import PendingProcedure
from engram.nodes.task.rules import request_task
from engram.nodes.task.verdict import said_it_failed
from engram.nodes.text.tokens import message_content
from engram.nodes.tool_calls import MEMORY_TOOL_NAMES, READER_TOOLS, call_step
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.pending import PendingMemories
from engram.stores.memory.procedures import (
    MAX_CALL_CHARS,
    MAX_STEPS,
    MAX_TASK_CHARS,
    Procedure,
)
from engram.stores.memory.types import MemoryCandidate
from engram.stores.secrets import redact

if TYPE_CHECKING:
    from engram.nodes.context import Context
    from engram.nodes.state import EngramState

MIN_CALLS = 2
"""Tool calls a run needs to be a procedure: one call is a lookup, not a way of doing things."""
MAX_WAITING = 5
"""Procedures kept waiting at most (the store failing turn after turn)."""

NOT_STEPS = MEMORY_TOOL_NAMES | READER_TOOLS
"""Tools whose calls are left out of a procedure: managing memory and reading offloaded results
back are not steps of a task."""

def run_procedure(messages: Sequence[BaseMessage]) -> dict[str, Any] | None:
    """The last run's procedure as `{"task", "calls", "message_ids"}` (redacted), or None when the
    run is not one: no user request, a request that asks for nothing (`request_task`), a tool
    error, fewer than `MIN_CALLS` calls, or no final answer."""
    start = next(
        (i for i in range(len(messages) - 1, -1, -1) if isinstance(messages[i], HumanMessage)),
        None,
    )
    if start is None:
        return None
    run = messages[start:]
    final = run[-1]
    if not isinstance(final, AIMessage) or final.tool_calls:
        return None
    if any(isinstance(m, ToolMessage) and m.status == "error" for m in run):
        return None
    calls: list[str] = []
    for message in run:
        if not isinstance(message, AIMessage):
            continue
        for call in message.tool_calls:
            if call["name"] in NOT_STEPS:
                continue
            written = call_step(call["name"], call.get("args") or {}, limit=MAX_CALL_CHARS)
            if not calls or calls[-1] != written:
                calls.append(written)
    task = request_task(message_content(run[0]), limit=MAX_TASK_CHARS)
    if len(calls) < MIN_CALLS or not task:
        return None
    return {
        "task": redact(task).text,
        "calls": [redact(call).text for call in calls[:MAX_STEPS]],
        "message_ids": [m.id for m in run if m.id],
    }


async def learn_procedure(state: EngramState, runtime: Runtime[Context]) -> dict[str, Any]:
    """The `consolidate` step (module docstring): writes the waiting procedures, each under its
    own user, unless the user said the last one failed, and keeps this run's as the next one
    waiting. One the store could not take waits for the next turn (at most `MAX_WAITING` wait).
    Its state update."""
    ctx = runtime.context
    if ctx.incognito or runtime.store is None:
        return {}
    messages = state["messages"]
    # a thread is its owner's: one kept for anyone else (or, by an older engram, for nobody)
    # is not this run's to write, and is dropped
    waiting = [p for p in state.get("pending_procedures") or () if p.get("user_id") == ctx.user_id]
    found = None if state.get("end_session") else run_procedure(messages)
    fresh = None if found is None else PendingProcedure(**found, user_id=ctx.user_id)
    if fresh is not None and waiting and fresh["message_ids"] == waiting[-1]["message_ids"]:
        return {}  # the same run again (a replay): nothing new was said about it
    if (
        waiting
        and not state.get("end_session")
        and said_it_failed(_latest_request(messages))
    ):
        waiting.pop()  # what the user just answered is their last run's
    unwritten: list[PendingProcedure] = []
    failures = []
    for procedure in waiting:
        try:
            await _write(procedure, runtime)
        except RECOVERABLE_ERRORS as exc:
            unwritten.append(procedure)
            failures.append(record_failure("procedure", exc))
    update: dict[str, Any] = {
        "pending_procedures": [*unwritten, *([fresh] if fresh else [])][-MAX_WAITING:]
    }
    if failures:
        update["failures"] = failures
    return update


async def _write(waiting: PendingProcedure, runtime: Runtime[Context]) -> None:
    """Writes (or proposes) a waiting procedure of the run's user."""
    ctx = runtime.context
    user_id = ctx.user_id
    writer = runtime.stream_writer
    procedure = Procedure(waiting["task"], tuple(waiting["calls"]))
    candidate = MemoryCandidate(
        content=procedure.content,
        category="skill",
        key=procedure.key,
        structured_data=procedure.data(),
        message_ids=waiting["message_ids"],
    )
    thread_id = runtime.execution_info.thread_id if runtime.execution_info else None
    ltm = LongTermMemory(runtime.store)  # type: ignore[arg-type]
    if ctx.confirm_memories:
        proposed = await PendingMemories(runtime.store, ltm).apropose(  # type: ignore[arg-type]
            user_id, [candidate], thread_id=thread_id, message_ids=waiting["message_ids"]
        )
        announce_pending(writer, user_id, proposed)
        return
    results = await ltm.aupsert(
        user_id, [candidate], thread_id=thread_id, message_ids=waiting["message_ids"]
    )
    announce_writes(writer, user_id, results)


def _latest_request(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message_content(message)
    return ""
