"""Updating the task state at compaction: the memory model's answer, or the offline rules.

With a memory model, one bounded structured call (`engram.nodes.model.calls.BoundedCall`: an
output limit, a timeout, one corrective retry; lists and items bounded by the schema) reads
the previous state and the messages being folded (redacted by `compact`, escaped here, at most
`TRANSCRIPT_TOKENS` of them, the newest kept) and answers the new state. When it fails, the
offline rules (`engram.nodes.task.rules`) update the state and the failure is recorded. Without
a memory model, the rules do it.

Whatever wrote it, the state is redacted and bounded (`MAX_ITEMS` items of `MAX_ITEM_CHARS`
characters per list) before it is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from engram.nodes.failures import RECOVERABLE_ERRORS, record_failure
from engram.nodes.model.calls import BoundedCall
from engram.nodes.prompts import TASK_STATE_SYSTEM_PROMPT, TASK_STATE_USER_PROMPT
from engram.nodes.state import TaskState
from engram.nodes.task.block import task_lines
from engram.nodes.task.rules import MAX_ITEM_CHARS, MAX_ITEMS, empty_task_state, offline_update
from engram.nodes.text.escape import escape_recalled
from engram.nodes.text.tokens import TokenCounter
from engram.nodes.text.transcript import render_transcript
from engram.stores.secrets import redact

TRANSCRIPT_TOKENS = 3000
"""Tokens of the folded messages the model reads (the newest ones when there are more)."""
ANSWER_TOKENS = 700
"""Output limit of the call."""

Item = Annotated[str, Field(max_length=MAX_ITEM_CHARS)]


class TaskStateAnswer(BaseModel):
    """What the assistant is working on, after these messages."""

    current_goal: str = Field(max_length=MAX_ITEM_CHARS, description="What the user wants done now.")
    completed_steps: list[Item] = Field(max_length=MAX_ITEMS, description="Steps done, oldest first.")
    pending_steps: list[Item] = Field(max_length=MAX_ITEMS, description="Steps still to do.")
    key_findings: list[Item] = Field(max_length=MAX_ITEMS, description="Facts the task needs.")


class TaskUpdater:
    """Turns the previous task state and the messages being folded into the new task state.

    Args:
        memory_model: Writes the state; None: the offline rules.
    """

    def __init__(self, memory_model: BaseChatModel | None) -> None:
        self.call = (
            BoundedCall(memory_model, TaskStateAnswer, max_tokens=ANSWER_TOKENS,
                        run_name="engram_task_state")
            if memory_model is not None
            else None
        )

    async def aupdate(
        self, previous: TaskState | None, messages: Sequence[BaseMessage], counter: TokenCounter
    ) -> tuple[TaskState, list[dict[str, str]]]:
        """The new task state and the failures worked around (the model's, then the rules
        wrote it). `messages` are redacted already."""
        if self.call is None:
            return offline_update(previous, messages), []
        try:
            answer = await self.call.ainvoke(_prompt(previous, messages, counter))
        except RECOVERABLE_ERRORS as exc:
            return offline_update(previous, messages), [record_failure("task_state", exc)]
        return _kept(answer), []


def _prompt(
    previous: TaskState | None, messages: Sequence[BaseMessage], counter: TokenCounter
) -> list[BaseMessage]:
    transcript = render_transcript(messages)
    kept = counter.truncate_start(transcript, TRANSCRIPT_TOKENS)  # the newest part
    if kept != transcript:
        transcript = "[…]\n" + kept
    old = "\n".join(task_lines(previous or empty_task_state())) or "(nothing yet)"
    return [
        SystemMessage(TASK_STATE_SYSTEM_PROMPT.format(max_items=MAX_ITEMS)),
        HumanMessage(TASK_STATE_USER_PROMPT.format(
            previous=escape_recalled(old), transcript=escape_recalled(transcript)
        )),
    ]


def _kept(answer: TaskStateAnswer) -> TaskState:
    def clean(items: list[str]) -> list[str]:
        return [text for item in items[:MAX_ITEMS] if (text := _text(item))]

    return TaskState(
        current_goal=_text(answer.current_goal),
        completed_steps=clean(answer.completed_steps),
        pending_steps=clean(answer.pending_steps),
        key_findings=clean(answer.key_findings),
        mode="llm",
    )


def _text(item: str) -> str:
    return redact(" ".join(item.split())).text[:MAX_ITEM_CHARS]
