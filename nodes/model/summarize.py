"""The running summary: an incremental LLM summarizer and an offline one.

`make_summarizer(memory_model)` returns the LLM summarizer when a model is configured and the
extractive summarizer otherwise. Both turn (previous summary, evicted messages) into a new
summary of at most `max_tokens` tokens.

The extractive summarizer needs no model: it keeps the most informative sentences of the
previous summary and the evicted messages — user statements first, sentences with names and
numbers next — within the token limit, in their original order, one "- role: sentence" line each.
It never writes more tokens than the previous summary and the messages cost in the prompt (so
compaction never grows the prompt), and keeps sentences only: a list item keeps its number ("2. Clone the
repository."), and code blocks, bullets' and headings' marks and lines without a word are left
out.

Example:
    >>> import asyncio
    >>> from langchain_core.messages import AIMessage, HumanMessage
    >>> from engram.nodes.text.tokens import counter_for_model
    >>> summarizer = make_summarizer(None)
    >>> msgs = [HumanMessage("Hi! I moved to Lisbon in 2021."), AIMessage("Welcome to Lisbon!")]
    >>> counter = counter_for_model(None)
    >>> print(asyncio.run(summarizer.asummarize("", msgs, max_tokens=18, counter=counter)))
    - user: I moved to Lisbon in 2021.

"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage

from engram.nodes.model.calls import MEMORY_CALL_TAGS, acall_sync, call_timeout, limited
from engram.nodes.prompts import SUMMARY_NEW_PROMPT, SUMMARY_SYSTEM_PROMPT, SUMMARY_UPDATE_PROMPT
from engram.nodes.text.tokens import TokenCounter, message_content
from engram.nodes.text.transcript import render_transcript, role_of

logger = logging.getLogger(__name__)

SummaryMode = Literal["llm", "offline"]

MAX_SENTENCE_TOKENS = 80
"""The offline summarizer cuts longer sentences to this many tokens."""
SUMMARY_SLACK_TOKENS = 64
"""Output allowed beyond the summary's budget (the model's tokenizer counts differently); the
summary is truncated to the budget afterwards."""

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])")
_CODE_BLOCK = re.compile(r"^[ \t]*(```|~~~).*?(?:^[ \t]*\1[^\n]*$|\Z)", re.MULTILINE | re.DOTALL)
_NUMBERED = re.compile(r"^(?:\d{1,3}|[a-z])[.)]\s+")
"""A numbered list item's marker ("2. ", "b) "), kept with the item's first sentence."""
_MARK = re.compile(r"^(?:[-*+•>]|#{1,6})\s+")
"""A bullet's, a quote's or a heading's mark, left out."""
_WORD = re.compile(r"\w")
_LINE = re.compile(r"^- (user|assistant|tool|system): (.*)$")
_NUMBER = re.compile(r"\d")
_NAME = re.compile(r"(?<!^)\b(?!I\b|I'm\b|I've\b|I'd\b)[A-Z][\w.+#-]*|\b\w*[a-z][A-Z]\w*|「|《|“")
_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|my|me|we|our|mine)\b|我", re.IGNORECASE)
_ROLE_WEIGHT = {"user": 3.0, "assistant": 1.0, "tool": 0.5, "system": 0.5}


class Summarizer(Protocol):
    """Turns the previous summary and the evicted messages into the new summary."""

    mode: SummaryMode

    async def asummarize(
        self,
        previous: str,
        messages: Sequence[BaseMessage],
        *,
        max_tokens: int,
        counter: TokenCounter,
    ) -> str:
        """The updated summary, at most `max_tokens` tokens by `counter`."""
        ...


def make_summarizer(memory_model: BaseChatModel | None) -> Summarizer:
    """The LLM summarizer on `memory_model`, or the extractive one when it is None."""
    if memory_model is None:
        return ExtractiveSummarizer()
    return LLMSummarizer(memory_model)


class LLMSummarizer:
    """The incremental summary on a chat model: the previous summary and the evicted messages
    make the new summary.

    Args:
        model: The memory model.
        system_prompt: Overrides `SUMMARY_SYSTEM_PROMPT` (a `{max_tokens}` field is filled in).
        new_prompt: Overrides `SUMMARY_NEW_PROMPT` (`{transcript}`).
        update_prompt: Overrides `SUMMARY_UPDATE_PROMPT` (`{previous_summary}`, `{transcript}`).
        timeout: Seconds per call, default `call_timeout(model)` (the output is limited to the summary's `max_tokens`).
    """

    mode: SummaryMode = "llm"

    def __init__(
        self,
        model: BaseChatModel,
        *,
        system_prompt: str = SUMMARY_SYSTEM_PROMPT,
        new_prompt: str = SUMMARY_NEW_PROMPT,
        update_prompt: str = SUMMARY_UPDATE_PROMPT,
        timeout: float | None = None,
    ) -> None:
        self.model = model
        self.timeout = timeout if timeout is not None else call_timeout(model)
        self.system_prompt = system_prompt
        self.new_prompt = new_prompt
        self.update_prompt = update_prompt

    async def asummarize(
        self,
        previous: str,
        messages: Sequence[BaseMessage],
        *,
        max_tokens: int,
        counter: TokenCounter,
    ) -> str:
        """Ask the model for the updated summary; raises ValueError if it returns nothing and
        TimeoutError if it takes longer than `timeout`."""
        transcript = render_transcript(messages)
        if previous:
            user = self.update_prompt.format(previous_summary=previous, transcript=transcript)
        else:
            user = self.new_prompt.format(transcript=transcript)
        system = self.system_prompt.format(max_tokens=max_tokens)
        # Tagged so that stream_mode="messages" does not stream the summary to the user.
        runnable = limited(self.model, max_tokens + SUMMARY_SLACK_TOKENS).with_config(
            tags=MEMORY_CALL_TAGS, run_name="engram_summarize"
        )
        reply = await acall_sync(
            runnable.invoke, [SystemMessage(system), HumanMessage(user)], timeout=self.timeout
        )
        text = reply.text.strip()
        if not text:
            raise ValueError("the summarizer model returned an empty summary")
        return counter.truncate(text, max_tokens)


class ExtractiveSummarizer:
    """The offline summarizer: the most informative sentences, no model involved."""

    mode: SummaryMode = "offline"

    async def asummarize(
        self,
        previous: str,
        messages: Sequence[BaseMessage],
        *,
        max_tokens: int,
        counter: TokenCounter,
    ) -> str:
        """Re-rank the previous summary's lines and the new sentences; keep what fits in
        `max_tokens` and in what `previous` and `messages` cost in the prompt."""
        replaced = counter.count_text(previous) + sum(counter.count_message(m) for m in messages)
        max_tokens = min(max_tokens, replaced)
        units = _previous_units(previous) + _message_units(messages, counter)
        ranked = sorted(range(len(units)), key=lambda i: (-units[i].score, -i))
        chosen: set[int] = set()
        seen: set[str] = set()
        used = 0
        for index in ranked:
            unit = units[index]
            key = unit.text.casefold()
            cost = counter.count_text(unit.line) + 1  # + the newline
            if key in seen or used + cost > max_tokens:
                continue
            seen.add(key)
            chosen.add(index)
            used += cost
        return "\n".join(units[i].line for i in sorted(chosen))


@dataclass(frozen=True)
class _Unit:
    role: str
    text: str
    score: float

    @property
    def line(self) -> str:
        return f"- {self.role}: {self.text}"


def _previous_units(previous: str) -> list[_Unit]:
    units = []
    for line in previous.splitlines():
        match = _LINE.match(line.strip())
        role, text = (match.group(1), match.group(2)) if match else ("system", line.strip())
        if text:
            units.append(_Unit(role, text, _score(role, text)))
    return units


def _message_units(messages: Sequence[BaseMessage], counter: TokenCounter) -> list[_Unit]:
    units = []
    for message in messages:
        role = role_of(message)
        text = message.content if isinstance(message.content, str) else message_content(message)
        if isinstance(message, ToolMessage):
            text = text[:500]
        for sentence in _sentences(text):
            sentence = counter.truncate(sentence, MAX_SENTENCE_TOKENS)
            units.append(_Unit(role, sentence, _score(role, sentence)))
    return units


def _sentences(text: str) -> list[str]:
    """The sentences of a message, line by line, without its code blocks.

    Example:
        >>> _sentences("Steps:\\n1. Install uv. It is fast.\\n```\\nuv sync\\n```\\n- Done!")
        ['Steps:', '1. Install uv.', 'It is fast.', 'Done!']
    """
    sentences = []
    for line in _CODE_BLOCK.sub("", text).splitlines():
        line = _MARK.sub("", " ".join(line.split()))
        number = _NUMBERED.match(line)
        marker, line = (number.group(0), line[number.end() :]) if number else ("", line)
        parts = [part for part in _SENTENCE_END.split(line) if _WORD.search(part)]
        if parts:
            parts[0] = marker + parts[0]
        sentences += parts
    return sentences


def _score(role: str, sentence: str) -> float:
    """User statements first; names, numbers and first-person facts add weight; chit-chat loses."""
    score = _ROLE_WEIGHT.get(role, 0.5)
    if _NUMBER.search(sentence):
        score += 2.0
    if _NAME.search(sentence):
        score += 1.5
    if _FIRST_PERSON.search(sentence):
        score += 1.0
    if sentence.endswith(("?", "？")):
        score -= 0.5
    if len(sentence) < 12 and not _NUMBER.search(sentence):
        score -= 2.0
    return score
