"""Memory extraction: the LLM extractor (structured output) and the choice between it and the rules.

`make_extractor(memory_model, choice)` returns the extractor `Context.extraction.mode` names:
`WritingExtractor` (the model writes the memories with `LLMExtractor`, the rules' candidates
added), `ReviewExtractor` (`engram.nodes.extract.review`: the rules propose, the model reviews)
or the offline `RuleExtractor` (`engram.nodes.extract.rules`); "auto" picks the rules without a
model, review for engram's own small local models and write for any other model. All turn a
window of messages into `MemoryCandidate`s; the write policy in `LongTermMemory` decides what to
store.

The LLM extractor asks for `SaveMemories` through `engram.nodes.model.calls`: the output is
bounded (`EXTRACT_MAX_TOKENS`, and the schema's `maxItems`/`maxLength`, which llama.cpp enforces
as a grammar), each call has a timeout, and an answer that does not parse gets one corrective
retry. After that it raises `ModelOutputError` (a `ValueError`) or `TimeoutError`; `consolidate`
records the failure and extracts that window with the offline rules instead. Secrets are redacted
from the transcript before it leaves the process.

Example:
    >>> import asyncio
    >>> from langchain_core.messages import HumanMessage
    >>> extractor = make_extractor(None)
    >>> [c.category for c in asyncio.run(extractor.aextract([HumanMessage("我喜欢用 Vim", id="m1")]))]
    ['preference']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal, Protocol, get_args

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from engram.nodes.context import ExtractionChoice
from engram.nodes.extract.review import ReviewExtractor
from engram.nodes.extract.rules import RuleExtractor
from engram.nodes.model.calls import LOCAL_MODEL_METADATA, BoundedCall, ModelOutputError
from engram.nodes.prompts import (
    EXTRACTION_CONTEXT_SECTION,
    EXTRACTION_SYSTEM_PROMPT,
    EXTRACTION_USER_PROMPT,
)
from engram.nodes.text.transcript import render_transcript
from engram.stores.memory.content import content_problem
from engram.stores.memory.types import Category, MemoryCandidate
from engram.stores.secrets import redact

ExtractionMode = Literal["llm", "offline"]

LLM_CONFIDENCE = 0.9
"""Confidence given to model-extracted memories."""
EXTRACT_MAX_TOKENS = 768
"""Output limit of one extraction call (the schema allows at most `MAX_MEMORIES` memories)."""
MAX_MEMORIES = 10
"""Memories one extraction call may return."""
MAX_CONTENT_CHARS = 300
"""Characters of one extracted memory at most."""


_KEY = re.compile(r"[a-z]+\.[a-z0-9_]+(\.[a-z0-9_]+)*")

ExtractionError = ModelOutputError
"""The memory model answered with something that is not a list of memories (also after the
corrective retry)."""


class ExtractedMemory(BaseModel):
    """One thing worth remembering about the user.

    `content` comes first: a model writing the fields in order decides the category after the
    statement, instead of walking down the list of categories.
    """

    content: str = Field(
        description=(
            "One self-contained statement about the user, in the language they used, keeping "
            "names, numbers, versions, paths and identifiers exactly as written."
        ),
        min_length=1,
        max_length=MAX_CONTENT_CHARS,
    )
    category: Category = Field(
        description=(
            "preference: tastes, habits, conventions, rules for working with the user; "
            "fact: stable facts about the user and their work; project: context of a project "
            "they work on (stack, structure, conventions, decisions); lesson: what failed, why, "
            "and what works instead; skill: a reusable way of doing something that worked; "
            "goal: plans and intentions."
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
            "'<category>.<attribute>'. The same attribute always gets the same key."
        ),
        max_length=64,
    )


class SaveMemories(BaseModel):
    """Save the long-term memories about the user found in the new messages of a conversation.

    Call it once with every memory worth keeping across conversations (an empty list when there is
    none). Never include passwords, API keys, tokens, card numbers or other secrets.
    """

    memories: list[ExtractedMemory] = Field(default_factory=list, max_length=MAX_MEMORIES)


class Extractor(Protocol):
    """Turns a window of messages into memory candidates."""

    mode: ExtractionMode

    async def aextract(
        self, messages: Sequence[BaseMessage], *, context: Sequence[BaseMessage] = ()
    ) -> list[MemoryCandidate]:
        """Candidates from `messages`; `context` holds earlier, already processed messages."""
        ...


def extraction_for(memory_model: BaseChatModel | None, choice: ExtractionChoice = "auto") -> str:
    """What `choice` means for `memory_model`: "write", "review" or "rules".

    Raises:
        ValueError: An unknown choice, or "write" or "review" without a memory model.

    Example:
        >>> extraction_for(None), extraction_for(None, "rules")
        ('rules', 'rules')
    """
    if choice not in get_args(ExtractionChoice):
        raise ValueError(f"unknown extraction {choice!r}: use auto, write, review or rules")
    if choice == "auto":
        if memory_model is None:
            return "rules"
        if (memory_model.metadata or {}).get(LOCAL_MODEL_METADATA) or is_small(memory_model):
            return "review"
        return "write"
    if choice != "rules" and memory_model is None:
        raise ValueError(
            f"Context.extraction.mode={choice!r} needs a memory model: pass memory_model= to the "
            "graph or the middleware (or --memory-model), or use 'auto' or 'rules'"
        )
    return choice


SMALL_MODEL_BILLIONS = 4.0
"""A model whose name gives its size as at most this many billion parameters ("qwen2.5:1.5b",
"llama3.2:3b", "phi3:3.8b", "gemma3:270m") is small: "auto" extraction has it review, not write
(measured: a 1.5B writing scores extraction F1 0.27, reviewing 0.61)."""
_SIZE = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", re.IGNORECASE)


def is_small(model: BaseChatModel) -> bool:
    """Whether the model's name says it is small (`SMALL_MODEL_BILLIONS`); a name that says
    nothing of its size (gpt-4o-mini, claude-...) is not.

    Example:
        >>> from langchain_core.language_models import FakeListChatModel
        >>> class Named(FakeListChatModel):
        ...     model_name: str = ""
        >>> [is_small(Named(responses=[], model_name=n)) for n in
        ...  ("qwen2.5:1.5b", "Qwen2.5-Coder-0.5B-Instruct-GGUF", "smollm2:135m", "llama3.1:8b",
        ...   "gpt-4o-mini")]
        [True, True, True, False, False]
    """
    for attribute in ("model_name", "model", "model_id"):
        name = getattr(model, attribute, None)
        if isinstance(name, str) and name:
            sizes = [
                float(size) / (1000 if unit.lower() == "m" else 1)
                for size, unit in _SIZE.findall(name.replace("_", "-"))
            ]
            return bool(sizes) and max(sizes) <= SMALL_MODEL_BILLIONS
    return False


def make_extractor(
    memory_model: BaseChatModel | None, choice: ExtractionChoice = "auto"
) -> Extractor:
    """The extractor `choice` names for `memory_model` (`extraction_for`): `WritingExtractor`,
    `ReviewExtractor` or the offline `RuleExtractor`.

    Small models write memories badly (Qwen2.5-Coder-1.5B writing: extraction F1 0.27 against
    the rules' 0.61 on unseen dialogs) but can review the rules' candidates; a capable model
    writing finds what the rules cannot."""
    match extraction_for(memory_model, choice):
        case "write":
            return WritingExtractor(memory_model)  # type: ignore[arg-type]
        case "review":
            return ReviewExtractor(memory_model)  # type: ignore[arg-type]
        case _:
            return RuleExtractor()


class LLMExtractor:
    """Extraction with a chat model's structured output.

    Args:
        model: The memory model; it must support
            `with_structured_output`.
        system_prompt: Overrides `EXTRACTION_SYSTEM_PROMPT`.
        user_prompt: Overrides `EXTRACTION_USER_PROMPT` (`{context_section}`, `{transcript}`).
        context_section: Overrides `EXTRACTION_CONTEXT_SECTION` (`{context}`).
        max_tokens: Output limit per call.
        timeout: Seconds per call (default: `call_timeout(model)`).
    """

    mode: ExtractionMode = "llm"

    def __init__(
        self,
        model: BaseChatModel,
        *,
        system_prompt: str = EXTRACTION_SYSTEM_PROMPT,
        user_prompt: str = EXTRACTION_USER_PROMPT,
        context_section: str = EXTRACTION_CONTEXT_SECTION,
        max_tokens: int = EXTRACT_MAX_TOKENS,
        timeout: float | None = None,
    ) -> None:
        self.call = BoundedCall(
            model, SaveMemories, max_tokens=max_tokens, run_name="engram_extract", timeout=timeout
        )
        self.system_prompt = system_prompt
        self.user_prompt = user_prompt
        self.context_section = context_section

    async def aextract(
        self, messages: Sequence[BaseMessage], *, context: Sequence[BaseMessage] = ()
    ) -> list[MemoryCandidate]:
        """Ask the model; raises `ModelOutputError` on unusable output, `TimeoutError` if slow."""
        if not messages:
            return []
        section = (
            self.context_section.format(context=_redacted_transcript(context)) if context else ""
        )
        user = self.user_prompt.format(
            context_section=section, transcript=_redacted_transcript(messages)
        )
        result = await self.call.ainvoke([SystemMessage(self.system_prompt), HumanMessage(user)])
        return [
            MemoryCandidate(
                content=m.content, category=m.category, importance=m.importance,
                key=_checked_key(m.key, m.category), confidence=LLM_CONFIDENCE,
                written_by_model=True,
            )
            for m in result.memories
            if content_problem(m.content) is None  # empty, punctuation only or too long: skipped
        ]


class WritingExtractor:
    """The memory model writes the memories (`LLMExtractor`), and the offline rules' candidates
    are added: what the model misses the rules may catch, and the write policy de-duplicates
    what both found. When the model's call fails, `consolidate` falls back to the rules alone.

    Args:
        model: The memory model; it must support `with_structured_output`.
        rules: The rule extractor whose candidates are added (default:
            `RuleExtractor(follow_changes=False)`: the merge decision judges changes).
    """

    mode: ExtractionMode = "llm"

    def __init__(self, model: BaseChatModel, *, rules: RuleExtractor | None = None) -> None:
        self.model = LLMExtractor(model)
        self.rules = rules if rules is not None else RuleExtractor(follow_changes=False)

    async def aextract(
        self, messages: Sequence[BaseMessage], *, context: Sequence[BaseMessage] = ()
    ) -> list[MemoryCandidate]:
        """The model's memories, then the rules' (raises as `LLMExtractor.aextract`)."""
        written = await self.model.aextract(messages, context=context)
        return [*written, *self.rules.extract(messages, context=context)]


def _checked_key(key: str | None, category: str) -> str | None:
    """`key` when it is a `<category>.<attribute>` slug of the memory's own category, else None.

    A key makes the write policy supersede the current memory with the same key; a malformed
    one (a bare category name, as small models answer) would supersede unrelated memories.
    """
    if key is None:
        return None
    slug = key.strip().lower()
    return slug if _KEY.fullmatch(slug) and slug.startswith(f"{category}.") else None


def _redacted_transcript(messages: Sequence[BaseMessage]) -> str:
    return redact(render_transcript(messages)).text
