"""`ScriptedChatModel`: the answering model of an eval run, which replays a dialog's own replies.

Evals measure memory, not the answers: the assistant's turns are part of the test data, so the
graph's `respond` node gets them from this model, in order, one per call. The graph around it
(budget, recall, compaction, extraction) runs for real.

Example:
    >>> model = ScriptedChatModel(replies=["Hi!", "Noted."])
    >>> model.invoke("hello").content, model.invoke("I use pnpm").content, model.calls
    ('Hi!', 'Noted.', 2)
    >>> model.remaining
    0
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr


class ScriptExhaustedError(RuntimeError):
    """The graph asked for more replies than the script holds."""


class ScriptedChatModel(BaseChatModel):
    """Answers each call with the next scripted reply and counts its calls.

    Replies given as `AIMessage`s keep their ids (the LoCoMo adapter maps them back to turn ids);
    strings become `AIMessage`s with an id LangChain assigns.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    replies: Sequence[str | AIMessage] = Field(default_factory=list)
    """The assistant's turns, in the order the graph will ask for them."""
    model_name: str | None = None
    """The name of the model this run budgets for (its tokenizer); None: engram's defaults."""

    _next: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def calls(self) -> int:
        """How many replies were given so far."""
        return self._next

    @property
    def remaining(self) -> int:
        """How many scripted replies were not asked for (yet)."""
        return len(self.replies) - self._next

    @property
    def _llm_type(self) -> str:
        return "engram-scripted"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._take())])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return self._generate(messages, stop)

    def _take(self) -> AIMessage:
        with self._lock:
            if self._next >= len(self.replies):
                raise ScriptExhaustedError(
                    f"the script has {len(self.replies)} replies and all were used: the graph "
                    "called the answering model more often than the dialog has assistant turns"
                )
            reply = self.replies[self._next]
            self._next += 1
        if isinstance(reply, AIMessage):
            return reply.model_copy()
        return AIMessage(reply)
