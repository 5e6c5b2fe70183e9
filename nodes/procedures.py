"""Procedures learned from tool runs that worked (seed 004's `after_skill_success`).

A run (a user's request and everything up to the final answer) whose tool calls all came back
without an error is a procedure candidate: the request's task (`engram.nodes.task.rules.
request_task`, its first sentence that asks for something, as the task state's goal) and its
tool calls in order (at least `MIN_CALLS`; engram's own memory and reading tools are not steps,
and a call repeated right after itself counts once). It is written as a `skill` memory
(`engram.stores.memory.procedures`) once the user's next message does not say it failed
(`said_it_failed`), or when the session ends. Until then it waits in the thread's state
(`pending_procedures`) with the user whose run it was, redacted like every persisted text, and
is written under that user whoever runs the thread next; one the store could not take waits for
the next turn, and one kept without its user (by an older engram) is dropped. The same task done
again with the same tools is the same memory, its use counted.

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
    >>> said_it_failed("Works, thanks! Can you check why the nightly job failed?")
    False
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langgraph.runtime import Runtime

from engram.nodes.events import announce_pending, announce_writes
from engram.nodes.failures import RECOVERABLE_ERRORS, record_failure
from engram.nodes.state import PendingProcedure
from engram.nodes.task.rules import request_task
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

_NEG = (
    r"(?:(?:did|does|do|is|was|are|were|will|can|could|has|have)(?: not|n'?t)|won'?t|can'?t"
    r"|not|never|no longer)"
)
_SUBJECT = (
    r"(?:(?:^|[,;:]\s*|\b(?:and|but|so|now|hmm|nope|no|because)\s+)(?:that|this|which)"
    r"|\b(?:it|they|you))"
)
"""What was just done as a subject: "it", or "that" starting a clause (not "the tests that
failed")."""
_ABOUT_RESULT = re.compile(
    # "that didn't work", "it doesn't seem to help", "nope, not working", "you didn't fix it"
    rf"(?:^|[,;:]\s*|{_SUBJECT}(?:'s|'re| is| was| are| were| has| had)?\s+)"
    rf"(?:still\s+|also\s+)?{_NEG}\s+(?:\w+\s+){{0,2}}?"
    r"(?:work|working|worked|fix|fixed|help|helped|helping|solve|solved|right|correct"
    r"|change anything|do anything)\b"
    # "it failed", "that's wrong", "why is it still failing", "failed again", "same error"
    rf"|{_SUBJECT}(?:'s| is| was| has| had)?\s+(?:still\s+)?"
    r"(?:fail|failed|failing|fails|broken|wrong|crashing|crashed)\b"
    r"|\b(?:failed|fails|failing|broken|wrong|crashed) again\b"
    r"|\bstill (?:the )?same\b|\bsame (?:error|problem|issue|result|output)\b"
    r"|\bstill (?:getting|seeing|failing|fails|failed|broken|crashing|crashes|wrong|an error"
    r"|not\b|does ?n'?t|did ?n'?t)"
    r"|\bno luck\b|\bnot what i (?:asked|wanted|meant)\b|\bbroke (?:it|something|everything)\b"
    r"|\bmade it worse\b"
    r"|还是(?:不行|不对|报错|有问题|一样|失败|没用|错|老样子|不能|没)|没用|没有用|不管用|没效果|没有效果"
    r"|不起作用|没起作用|没解决|没有解决|没成功|没有成功|更糟"
)
"""A phrase about what was just done not working: it counts wherever the reply is judged."""
_VERDICT = re.compile(
    r"\b(?:fail|failed|fails|failing|broken|broke|wrong|incorrect|nope|stale"
    r"|not (?:right|correct|working|fixed|it)"
    r"|(?:did|does|do|is|was|has)(?: not|n'?t) (?:\w+ ){0,2}?(?:work|fix|help|solve|change)\w*"
    r"|still (?:down|there|broken|failing|wrong|stale|the same|happening|crashing|an? error)"
    r"|i still (?:get|see|have))\b"
    r"|不行|失败|(?<![报出])错了|不对|(?<!没)有问题|(?<![不没])报错|(?<![不没])出错"
)
"""A word that says something failed: a verdict on the last run only in a reply that is not a
new request ("失败了", "nope", but not "Now find out what is wrong with payments")."""
_WORKED = re.compile(
    r"(?:(?:ok(?:ay)?|yes|yep|yeah|wow|oh)\W+)*(?:(?:it|that|this)(?:'s| is| was)?\s+)?"
    r"(?:now\s+)?(?:works?|worked|working|fixed|solved|did it|did the trick|perfect|great"
    r"|awesome|excellent|nice|cool|thanks|thank you|thx|ty|done|good|looks good|lgtm)\b"
    r"|好了|可以了|行了|成功了|解决了|搞定|谢谢|多谢|完美|太好了|不错|好的|没问题"
)
"""How a reply that says it worked starts ("Works, thanks!", "thanks, that fixed it", "好了")."""
_REQUEST = re.compile(
    r"(?:(?:ok(?:ay)?|so|and|also|then|now|next|please|pls)\W+)*"
    r"(?:please|pls|can|could|would|will|let'?s|why|what|how|where|when"
    r"|which|who|is there|are there|find|check|look|fix|help|show|tell|make|add|write|create"
    r"|run|investigate|debug|figure|see|give|list|explain|update|deploy|build|open|read|search"
    r"|i need|i want|i'd like)\b"
    r"|现在|接下来|然后|下一步|再|请|帮我|帮忙|麻烦|看看|看一下|查一下|查查|为什么|怎么|如何|能不能|能否"
    r"|可以帮|另外|还有|顺便"
)
"""How a reply that asks for something new starts."""
_CONTRAST = re.compile(r"\b(?:but|however|though)\b|但是?|可是|不过")
_INTERJECTION = re.compile(
    r"(?:ok(?:ay)?|hmm*|well|so|uh+|um+|oh+|ah+|sorry|alright|嗯+|哦+|呃+|好吧)\W*"
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+")


def said_it_failed(text: str) -> bool:
    """Whether a user's message says that what was just done did not work.

    What judges the last run is the reply's first sentence (after an "ok." or "hmm."), and what
    a "but" or a "though" in it or in the next sentence says: a failure there counts ("Thanks,
    but the output is wrong", "ok thanks. the deploy failed though") unless it asks for
    something new. A reply that then starts by saying it worked ("Works, thanks!", "好了") did
    not fail; a phrase about the result ("that didn't work", "still the same error", "还是不行",
    "没用") counts, even in a question ("why did it fail?"); a new request names its own
    problems ("Perfect! Next: fix the failing tests", "Can you check why the nightly job
    failed?"); otherwise a failure word in the first sentence ("Now the login page is broken",
    "I still get a 502") or a phrase about the result later counts. Missing a failure stores
    steps that did not work, so the words lean that way.

    Example:
        >>> said_it_failed("Thanks! But it still doesn't work."), said_it_failed("还是不行")
        (True, True)
        >>> said_it_failed("Now find out what is wrong with payments")
        False
    """
    text = text.casefold().replace("\u2019", "'")
    sentences = [" ".join(s.split()) for s in _SENTENCE.split(text)]
    sentences = [s for s in sentences if s and not _INTERJECTION.fullmatch(s)]
    if not sentences:
        return False
    head, *rest = sentences
    # what follows a "but" (in the first sentence, or the next one) judges the run, unless it
    # asks for something new ("but can you check the failing lint job?")
    contrasts = [*_CONTRAST.split(head)[1:], *(_CONTRAST.split(rest[0])[1:] if rest else [])]
    contrasts += [  # "... the deploy failed though"
        s.rstrip(" .!?")[: -len("though")] for s in [head, *rest[:1]]
        if s.rstrip(" .!?").endswith(" though")
    ]
    for clause in (c.strip(" ,;:") for c in contrasts):
        if clause and not _REQUEST.match(clause) and (
            _ABOUT_RESULT.search(clause) or _VERDICT.search(clause)
        ):
            return True
    head = _CONTRAST.split(head)[0].strip()
    if _WORKED.match(head):
        return False
    if _ABOUT_RESULT.search(head):
        return True
    if _REQUEST.match(head):
        return False
    return bool(_VERDICT.search(head)) or any(_ABOUT_RESULT.search(s) for s in rest)


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
    # one kept without its user (an older engram) is nobody's to write: dropped
    waiting = [p for p in state.get("pending_procedures") or () if p.get("user_id")]
    found = None if state.get("end_session") else run_procedure(messages)
    fresh = None if found is None else PendingProcedure(**found, user_id=ctx.user_id)
    if fresh is not None and waiting and fresh["message_ids"] == waiting[-1]["message_ids"]:
        return {}  # the same run again (a replay): nothing new was said about it
    if (
        waiting
        and waiting[-1]["user_id"] == ctx.user_id
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
    """Writes (or proposes) a waiting procedure under its user. Another user's (the thread
    changed hands) is written quietly: this run's caller is not told about their memories."""
    ctx = runtime.context
    user_id = waiting["user_id"]
    writer = runtime.stream_writer if user_id == ctx.user_id else _quiet
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


def _quiet(_: Any) -> None:
    return None
