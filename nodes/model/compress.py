"""Memory compression with the memory model: old memories of one category become 1-3.

`engram.stores.maintenance.maintain` decides which memories are old and rarely used enough and applies
the result; this module only asks the model, with bounded structured output (`CompressMemories`:
the schema's docstring is the tool description the model sees; `engram.nodes.model.calls` limits
the output, times the call out and retries once on an answer that does not parse). Memories are shown numbered, and
the model names the numbers each new memory replaces, which are mapped back to memory ids here.

Example:
    >>> import asyncio
    >>> from engram.stores.memory.types import Memory
    >>> class Canned:  # any chat model with structured output
    ...     def with_structured_output(self, schema):
    ...         from langchain_core.runnables import RunnableLambda
    ...         answer = {"memories": [{"content": "Uses Vim and tmux", "importance": 0.8,
    ...                                 "replaces": [1, 2]}]}
    ...         return RunnableLambda(lambda _: schema.model_validate(answer))
    >>> olds = [Memory.new(t, "preference", 0.8, now="2026-01-01T00:00:00+00:00", id=i)
    ...         for i, t in [("a", "Uses Vim"), ("b", "Uses tmux"), ("c", "Likes tea")]]
    >>> [d.sources for d in asyncio.run(LLMCompressor(Canned()).acompress("preference", olds))]
    [['a', 'b']]
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from engram.nodes.failures import RECOVERABLE_ERRORS
from engram.nodes.model.calls import BoundedCall
from engram.nodes.prompts import COMPRESSION_SYSTEM_PROMPT, COMPRESSION_USER_PROMPT
from engram.stores.maintenance.types import CompressedDraft, CompressionError
from engram.stores.memory.types import Memory

COMPRESS_MAX_TOKENS = 512
"""Output limit of one compression call (at most 3 core memories)."""


class CoreMemory(BaseModel):
    """One core memory that replaces several old ones."""

    content: str = Field(
        description="One self-contained statement about the user.", min_length=1, max_length=400
    )
    importance: float = Field(ge=0.0, le=1.0, description="How much it matters, 0 to 1.")
    replaces: list[int] = Field(
        description="The numbers of the old memories it replaces.", max_length=50
    )


class CompressMemories(BaseModel):
    """Save 1 to 3 core memories that replace the user's old memories listed in the message.

    Every core memory names the numbers of the old memories it replaces; old memories named by
    none are kept as they are.
    """

    memories: list[CoreMemory] = Field(min_length=1, max_length=3)


class LLMCompressor:
    """Compression with a chat model's structured output.

    Args:
        model: The memory model; it must support `with_structured_output`.
        system_prompt: Overrides `COMPRESSION_SYSTEM_PROMPT`.
        user_prompt: Overrides `COMPRESSION_USER_PROMPT` (`{category}`, `{count}`,
            `{memories}`).
        max_tokens: Output limit per call.
        timeout: Seconds per call (default: `call_timeout(model)`).
    """

    mode = "llm"

    def __init__(
        self,
        model: BaseChatModel,
        *,
        system_prompt: str = COMPRESSION_SYSTEM_PROMPT,
        user_prompt: str = COMPRESSION_USER_PROMPT,
        max_tokens: int = COMPRESS_MAX_TOKENS,
        timeout: float | None = None,
    ) -> None:
        self.call = BoundedCall(
            model, CompressMemories, max_tokens=max_tokens, run_name="engram_compress",
            timeout=timeout,
        )
        self.system_prompt = system_prompt
        self.user_prompt = user_prompt

    async def acompress(self, category: str, memories: Sequence[Memory]) -> list[CompressedDraft]:
        """Ask the model; raises `CompressionError` when it fails or answers unusably."""
        try:
            result = await self.call.ainvoke(self._messages(category, memories))
        except RECOVERABLE_ERRORS as exc:
            raise CompressionError(_describe(exc)) from exc
        return _drafts(result, memories)

    def compress(self, category: str, memories: Sequence[Memory]) -> list[CompressedDraft]:
        """Sync `acompress` (for callers without an event loop)."""
        return asyncio.run(self.acompress(category, memories))

    def _messages(self, category: str, memories: Sequence[Memory]) -> list[BaseMessage]:
        lines = "\n".join(
            f"{n}. {' '.join(m.content.split())} (importance {m.importance:.2f})"
            for n, m in enumerate(memories, 1)
        )
        user = self.user_prompt.format(category=category, count=len(memories), memories=lines)
        return [SystemMessage(self.system_prompt), HumanMessage(user)]


def make_compressor(memory_model: BaseChatModel | None) -> LLMCompressor | None:
    """The compressor on `memory_model`; None without a model (maintenance then skips
    compression: there is no offline way to write a faithful summary of several memories)."""
    return LLMCompressor(memory_model) if memory_model is not None else None


def _drafts(result: CompressMemories, memories: Sequence[Memory]) -> list[CompressedDraft]:
    return [
        CompressedDraft(
            content=core.content,
            importance=core.importance,
            sources=[
                memories[n - 1].id for n in dict.fromkeys(core.replaces) if 1 <= n <= len(memories)
            ],
        )
        for core in result.memories
    ]


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
