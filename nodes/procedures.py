"""Procedures learned from tool runs that worked (seed 004's `after_skill_success`).

A run (a user's request and everything up to the final answer) whose tool calls all came back
without an error is a procedure candidate: the request's first sentence that says something as
the task, and its tool calls in order (at least `MIN_CALLS`; engram's own memory and reading
tools are not steps, and a call repeated right after itself counts once). It is written as a
`skill` memory (`engram.stores.memory.procedures`) once the user's next message does not say it
failed, or when the session ends; a next message that says it failed ("that didn't work",
"还是不行") drops it. Until then it waits in the thread's state (`pending_procedures`), redacted
like every persisted text; one the store could not take waits for the next turn. The same
workflow again is the same memory, its use counted.

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
    >>> said_it_failed("that didn't work, same error"), said_it_failed("great, thanks!")
    (True, False)
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.runtime import Runtime

from engram.nodes.events import announce_pending, announce_writes
from engram.nodes.failures import RECOVERABLE_ERRORS, record_failure
from engram.nodes.offload.offload import READER_TOOLS
from engram.nodes.text.tokens import message_content
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

MEMORY_TOOL_NAMES = frozenset(
    {"search_memory", "remember", "forget_memory", "restore_memory", "delete_memory",
     "confirm_memory"}
)
"""engram's memory tools (`engram.graph.tools`): managing memory is not a step of a task."""
NOT_STEPS = MEMORY_TOOL_NAMES | READER_TOOLS
"""Tools whose calls are left out of a procedure."""

_FAILED = re.compile(
    r"\b(?:did ?n[o']?t|does ?n[o']?t|is ?n[o']?t|was ?n[o']?t|wo ?n't|not|never|still)\s+"
    r"(?:work|working|worked|fix|fixed|help|helped|right|correct|solved?)\b"
    r"|\b(?:failed|fails|failing|broken|broke it|no luck|same error|still (?:fails|broken|failing|"
    r"seeing|getting)|wrong)\b"
    r"|不行|没用|没有用|失败|错了|不对|没成功|没有成功|没解决|没有解决|还是(?:不|报错|有问题|一样)",
    re.IGNORECASE,
)
"""What a message says when the previous run did not do what the user wanted."""
_SENTENCE = re.compile(r"(?<=[.!?。！？])\s*")


def said_it_failed(text: str) -> bool:
    """Whether a user's message says that what was just done did not work."""
    return bool(_FAILED.search(text))


def run_procedure(messages: Sequence[BaseMessage]) -> dict[str, Any] | None:
    """The last run's procedure as `{"task", "calls", "message_ids"}` (redacted), or None when the
    run is not one: no user request, a tool error, fewer than `MIN_CALLS` calls, or no final
    answer."""
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
            written = _written(call["name"], call.get("args") or {})
            if not calls or calls[-1] != written:
                calls.append(written)
    task = _task(message_content(run[0]))
    if len(calls) < MIN_CALLS or not task:
        return None
    return {
        "task": redact(task).text,
        "calls": [redact(call).text for call in calls[:MAX_STEPS]],
        "message_ids": [m.id for m in run if m.id],
    }


async def learn_procedure(state: EngramState, runtime: Runtime[Context]) -> dict[str, Any]:
    """The `consolidate` step (module docstring): writes the waiting procedure unless the user
    said it failed, and keeps this run's as the next one waiting. One the store could not take
    waits for the next turn (at most `MAX_WAITING` wait). Its state update."""
    ctx = runtime.context
    if ctx.incognito or runtime.store is None:
        return {}
    messages = state["messages"]
    waiting = list(state.get("pending_procedures") or ())
    fresh = None if state.get("end_session") else run_procedure(messages)
    if fresh is not None and waiting and fresh["message_ids"] == waiting[-1]["message_ids"]:
        return {}  # the same run again (a replay): nothing new was said about it
    if waiting and not state.get("end_session") and said_it_failed(_latest_request(messages)):
        waiting.pop()  # what the user just answered is the last run's
    unwritten: list[dict[str, Any]] = []
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


async def _write(waiting: dict[str, Any], runtime: Runtime[Context]) -> None:
    ctx = runtime.context
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
            ctx.user_id, [candidate], thread_id=thread_id, message_ids=waiting["message_ids"]
        )
        announce_pending(runtime.stream_writer, ctx.user_id, proposed)
        return
    results = await ltm.aupsert(
        ctx.user_id, [candidate], thread_id=thread_id, message_ids=waiting["message_ids"]
    )
    announce_writes(runtime.stream_writer, ctx.user_id, results)


def _latest_request(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message_content(message)
    return ""


def _task(text: str) -> str:
    """The request's first sentence that says something ("thanks! now publish the docs." ->
    "now publish the docs."), cut to `MAX_TASK_CHARS`."""
    sentences = [p for p in _SENTENCE.split(" ".join(text.split())) if p]
    first = next((p for p in sentences if _says_something(p)), " ".join(sentences))
    return first if len(first) <= MAX_TASK_CHARS else first[: MAX_TASK_CHARS - 1] + "…"


def _says_something(sentence: str) -> bool:
    words = re.findall(r"\w+", sentence)
    return len(words) >= 3 or bool(re.search(r"[\u3400-\u9fff]{4,}", sentence))


def _written(name: str, args: dict[str, Any]) -> str:
    """A call on one line: `name(key=value, ...)`, values as JSON (a model's arguments may hold
    anything, line breaks included)."""
    shown = ", ".join(f"{_flat(k)}={json.dumps(v, ensure_ascii=False)}" for k, v in args.items())
    call = f"{_flat(name)}({shown})"
    return call if len(call) <= MAX_CALL_CHARS else call[: MAX_CALL_CHARS - 2] + "…)"


def _flat(text: str) -> str:
    return " ".join(str(text).split())
