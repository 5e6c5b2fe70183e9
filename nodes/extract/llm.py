"""Memory extraction: the LLM extractor (structured output) and the choice between it and the rules.

`make_extractor(memory_model)` returns `LLMExtractor` when a memory model is configured and the
offline `RuleExtractor` (`engram.nodes.extract.rules`) otherwise. Both turn a window of messages
into `MemoryCandidate`s; the write policy in `LongTermMemory` decides what to store.

The LLM extractor calls `memory_model.with_structured_output(SaveMemories)`: the schema's
docstring is the tool description the model sees. Secrets are redacted from the transcript before
it leaves the process. Output that is not a `SaveMemories` raises `ExtractionError`; the model's
own validation and parsing errors (pydantic `ValidationError`, `OutputParserException`) propagate
as the `ValueError`s they are, so the caller records them as failures and stores nothing.

Example:
    >>> import asyncio
    >>> from langchain_core.messages import HumanMessage
    >>> extractor = make_extractor(None)
    >>> [c.category for c in asyncio.run(extractor.aextract([HumanMessage("我喜欢用 Vim", id="m1")]))]
    ['preference']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel, Field

from engram.nodes.extract.rules import RuleExtractor
from engram.nodes.prompts import (
    EXTRACTION_CONTEXT_SECTION,
    EXTRACTION_SYSTEM_PROMPT,
    EXTRACTION_USER_PROMPT,
)
from engram.nodes.transcript import render_transcript
from engram.stores.memory.content import content_problem
from engram.stores.memory.types import Category, MemoryCandidate
from engram.stores.secrets import redact

ExtractionMode = Literal["llm", "offline"]

LLM_CONFIDENCE = 0.9
"""Confidence given to model-extracted memories."""


class ExtractionError(ValueError):
    """The memory model answered with something that is not a list of memories."""


class ExtractedMemory(BaseModel):
    """One thing worth remembering about the user."""

    category: Category = Field(
        description=(
            "preference: tastes, habits, conventions, rules for working with the user; "
            "fact: stable facts about the user and their work; project: context of a project "
            "they work on (stack, structure, conventions, decisions); lesson: what failed, why, "
            "and what works instead; skill: a reusable way of doing something that worked; "
            "goal: plans and intentions."
        )
    )
    content: str = Field(
        description=(
            "One self-contained statement about the user, in the language they used, keeping "
            "names, numbers, versions, paths and identifiers exactly as written."
        )
    )
    importance: float = Field(
        ge=0.0,
        le=1.0,
        description=(
            "0.8-1.0: an explicit rule or strong preference; 0.5-0.7: useful context; "
            "below 0.5: probably not worth keeping."
        ),
    )
    key: str | None = Field(
        default=None,
        description=(
            "Only for a single-valued attribute that can change later: a lowercase slug "
            "'<category>.<attribute>', e.g. preference.frontend_framework, fact.employer, "
            "project.database. The same attribute always gets the same key."
        ),
    )


class SaveMemories(BaseModel):
    """Save the long-term memories about the user found in the new messages of a conversation.

    Call it once with every memory worth keeping across conversations (an empty list when there is
    none). Never include passwords, API keys, tokens, card numbers or other secrets.
    """

    memories: list[ExtractedMemory] = Field(default_factory=list)


class Extractor(Protocol):
    """Turns a window of messages into memory candidates."""

    mode: ExtractionMode

    async def aextract(
        self, messages: Sequence[BaseMessage], *, context: Sequence[BaseMessage] = ()
    ) -> list[MemoryCandidate]:
        """Candidates from `messages`; `context` holds earlier, already processed messages."""
        ...


def make_extractor(memory_model: BaseChatModel | None) -> Extractor:
    """The LLM extractor on `memory_model`, or the offline rule extractor when it is None."""
    if memory_model is None:
        return RuleExtractor()
    return LLMExtractor(memory_model)


class LLMExtractor:
    """Extraction with a chat model's structured output (seed 000/002/003's extraction prompt).

    Args:
        model: The memory model (seed 000's "fast" slot); it must support
            `with_structured_output`.
        system_prompt: Overrides `EXTRACTION_SYSTEM_PROMPT`.
        user_prompt: Overrides `EXTRACTION_USER_PROMPT` (`{context_section}`, `{transcript}`).
        context_section: Overrides `EXTRACTION_CONTEXT_SECTION` (`{context}`).
    """

    mode: ExtractionMode = "llm"

    def __init__(
        self,
        model: BaseChatModel,
        *,
        system_prompt: str = EXTRACTION_SYSTEM_PROMPT,
        user_prompt: str = EXTRACTION_USER_PROMPT,
        context_section: str = EXTRACTION_CONTEXT_SECTION,
    ) -> None:
        # Tagged so that stream_mode="messages" does not stream the extraction to the user.
        self.runnable = model.with_structured_output(SaveMemories).with_config(
            tags=[TAG_NOSTREAM], run_name="engram_extract"
        )
        self.system_prompt = system_prompt
        self.user_prompt = user_prompt
        self.context_section = context_section

    async def aextract(
        self, messages: Sequence[BaseMessage], *, context: Sequence[BaseMessage] = ()
    ) -> list[MemoryCandidate]:
        """Ask the model; raises `ExtractionError` (or the parser's `ValueError`) on bad output."""
        if not messages:
            return []
        section = (
            self.context_section.format(context=_redacted_transcript(context)) if context else ""
        )
        user = self.user_prompt.format(
            context_section=section, transcript=_redacted_transcript(messages)
        )
        result = await self.runnable.ainvoke([SystemMessage(self.system_prompt), HumanMessage(user)])
        if isinstance(result, dict):
            result = SaveMemories.model_validate(result)
        if not isinstance(result, SaveMemories):
            raise ExtractionError(
                f"the memory model returned {type(result).__name__} instead of SaveMemories; "
                "use a model that supports tool calling or JSON mode"
            )
        return [
            MemoryCandidate(
                content=m.content, category=m.category, importance=m.importance, key=m.key,
                confidence=LLM_CONFIDENCE,
            )
            for m in result.memories
            if content_problem(m.content) is None  # empty, punctuation only or too long: skipped
        ]


def _redacted_transcript(messages: Sequence[BaseMessage]) -> str:
    return redact(render_transcript(messages)).text
