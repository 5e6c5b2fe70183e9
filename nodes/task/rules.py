"""The task state offline: read from plan-like messages and tool results, no model involved.

Over the messages a compaction folds, oldest first, on top of the previous state:

- **goal**: the task of the user's latest request (`request_task`: its first sentence with
  three words at least besides fillers such as "ok", "thanks", "go ahead", "what next");
- **plans**: an assistant or user message with a checklist (`- [ ] step`, `- [x] step`) or at
  least two numbered items (`1. step`) is a plan: its open items become the steps to do, its
  checked items steps done;
- **tool calls**: a call whose result came back without an error is a step done
  (`name(key=value, ...)`, `engram.nodes.tool_calls.call_step`); its result gives a finding:
  the pointer's summary for an offloaded result (engram wrote it), else the result's first line.
  A result that is an error is a finding ("name failed: ...").

Each list keeps its newest `MAX_ITEMS` items (the steps to do: the first ones), each item at most
`MAX_ITEM_CHARS` characters; a step done leaves the steps to do. The messages are redacted
before they get here (`compact`), and the block that shows the state escapes it.

Example:
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> state = offline_update(None, [
    ...     HumanMessage("Find why the checkout service fails since Monday."),
    ...     AIMessage("Plan:\\n1. Read the logs\\n2. Check the database pool"),
    ... ])
    >>> state["current_goal"], state["pending_steps"]
    ('Find why the checkout service fails since Monday.', ['Read the logs', 'Check the database pool'])
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from engram.nodes.offload.pointer import pointer_of
from engram.nodes.state import TaskState
from engram.nodes.text.sentences import split_sentences
from engram.nodes.text.tokens import message_content
from engram.nodes.tool_calls import call_step

MAX_ITEMS = 8
"""Items per list."""
MAX_ITEM_CHARS = 200
"""Characters per item (and of the goal)."""

_CHECKED = re.compile(r"^\s*[-*]\s*\[[xX✓✔]\]\s+(.+)$", re.MULTILINE)
_UNCHECKED = re.compile(r"^\s*[-*]\s*\[\s\]\s+(.+)$", re.MULTILINE)
_NUMBERED = re.compile(r"^\s*\d{1,2}[.)]\s+(.+)$", re.MULTILINE)
_FILLER = frozenset({
    "ahead", "and", "anything", "bye", "continue", "cool", "else", "fine", "go", "good", "great",
    "hello", "hey", "hi", "next", "nice", "no", "now", "ok", "okay", "on", "perfect", "please",
    "so", "sure", "thank", "thanks", "then", "thx", "what", "yes", "you",
})
"""Words that make no request on their own ("Go ahead.", "What next?", "Thanks, bye now.")."""


def empty_task_state() -> TaskState:
    """A task state with nothing in it."""
    return TaskState(current_goal="", completed_steps=[], pending_steps=[], key_findings=[])


def offline_update(previous: TaskState | None, messages: Sequence[BaseMessage]) -> TaskState:
    """`previous` updated with `messages` (module docstring)."""
    state = previous or empty_task_state()
    goal = state["current_goal"]
    done, todo, findings = (list(state[k]) for k in ("completed_steps", "pending_steps",
                                                      "key_findings"))
    calls: dict[str, str] = {}
    for message in messages:
        text = message_content(message) if not isinstance(message, ToolMessage) else ""
        if isinstance(message, HumanMessage) and (task := request_task(text)):
            goal = task
        if isinstance(message, AIMessage | HumanMessage):
            open_items, checked = _plan(message.content if isinstance(message.content, str) else text)
            if open_items or checked:
                todo = open_items
                done += checked
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                step = call_step(call["name"], call.get("args") or {}, limit=MAX_ITEM_CHARS)
                calls[call["id"] or ""] = step
        if isinstance(message, ToolMessage):
            step = calls.get(message.tool_call_id, _item(f"{message.name or 'a tool'}()"))
            finding = _finding(message)
            if message.status == "error":
                findings.append(_item(f"{step} failed: {finding}"))
                continue
            done.append(step)
            if finding:
                findings.append(_item(f"{message.name or 'a tool'}: {finding}"))
    finished = {step.casefold() for step in done}
    todo = [step for step in todo if step.casefold() not in finished]
    return TaskState(
        current_goal=goal,
        completed_steps=_newest(done),
        pending_steps=_unique(todo)[:MAX_ITEMS],
        key_findings=_newest(findings),
        mode="offline",
    )


def request_task(text: str, *, limit: int = MAX_ITEM_CHARS) -> str:
    """The task a user's message asks for: its first sentence that makes a request (three words
    at least besides fillers such as "ok", "thanks", "go ahead", or four Chinese characters), cut
    to `limit` characters; "" when no sentence does. The task state's goal and a procedure's task
    (`engram.nodes.procedures`) are both this.

    Example:
        >>> request_task("Thanks! Now publish the docs to the staging site. Use the CLI.")
        'Now publish the docs to the staging site.'
        >>> request_task("好的，谢谢！帮我把文档发布到测试站点。"), request_task("ok, go ahead")
        ('帮我把文档发布到测试站点。', '')
    """
    # a line break does not end a request ("deploy it\nto staging"): only sentence ends do
    sentences = split_sentences(" ".join(text.split()))
    return _cut(next((s for s in sentences if _is_request(s)), ""), limit)


def _is_request(text: str) -> bool:
    words = [w for w in re.findall(r"\w+", text.casefold()) if w not in _FILLER]
    return len(words) >= 3 or bool(re.search(r"[\u3400-\u9fff]{4,}", text))


def _plan(text: str) -> tuple[list[str], list[str]]:
    """(open items, checked items) of a plan-like message; nothing when it is not one."""
    checked = [_item(m) for m in _CHECKED.findall(text)]
    unchecked = [_item(m) for m in _UNCHECKED.findall(text)]
    if checked or unchecked:
        return unchecked, checked
    numbered = [_item(m) for m in _NUMBERED.findall(text)]
    return (numbered, []) if len(numbered) >= 2 else ([], [])


def _finding(message: ToolMessage) -> str:
    pointer = pointer_of(message.content)
    if pointer is not None:
        return str(pointer.get("summary", ""))
    text = message_content(message)
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _item(text: str) -> str:
    return _cut(" ".join(text.split()), MAX_ITEM_CHARS)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _unique(items: Iterable[str]) -> list[str]:
    """Items without repeats, each where it last appears."""
    items = list(items)
    last = {item.casefold(): n for n, item in enumerate(items)}
    return [item for n, item in enumerate(items) if last[item.casefold()] == n]


def _newest(items: Iterable[str]) -> list[str]:
    return _unique(items)[-MAX_ITEMS:]
