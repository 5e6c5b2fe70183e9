"""Memory extraction by rules and model together: the rules propose, the model reviews.

A small local model (0.5-1.5B) asked to write memories from a transcript narrates it ("The user
asked about ...") or pastes messages; the offline rules find most durable statements but also keep
passing remarks and guess categories from wording. `ReviewExtractor` gives each side the part it
does well:

1. the offline rules (`RuleExtractor`) propose candidates from the window's user messages
   (secrets already redacted, wording verbatim, supersede keys from `keys`);
2. the model gets the numbered candidates with the rules' guess of their kind, and answers, for
   each one and in order, a `note` (the candidate as a standalone sentence), a `category` (an
   enum) and `keep`. The schema has exactly as many reviews as there are candidates, so a grammar
   (llama.cpp's `json_schema`) makes even a 0.5B model answer every candidate once. The
   transcript is not sent: shown the conversation as well, Qwen2.5-Coder-1.5B wrote every note
   about the conversation's last messages instead of its candidate, and dropped or misfiled the
   candidates accordingly;
3. kept candidates take the model's category; the model's wording replaces the rules' only when
   it keeps every detail of the candidate (names, numbers, versions, paths: `details`), stays in
   the candidate's script (Chinese or not) and does not describe the conversation; otherwise the
   user's own words stay. The rules' key stays, so corrections still supersede.

A window where the rules find nothing costs no model call. The call is bounded like every
memory-model call (`engram.nodes.model_calls`): an output limit, a timeout, one corrective retry;
then it raises, and `consolidate` stores the rules' own candidates for that window.

Example:
    >>> from engram.nodes.extract.review import accepted_note
    >>> accepted_note("ruff, and I indent with tabs", "Uses ruff and indents with tabs.")
    'Uses ruff and indents with tabs.'
    >>> accepted_note("we run Node 20 on EKS", "The user runs Node on Kubernetes.") is None
    True
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from engram.nodes.extract.rules import RuleExtractor
from engram.nodes.extract.text import details, has_cjk
from engram.nodes.model_calls import ainvoke_structured, call_timeout, structured
from engram.nodes.prompts import REVIEW_SYSTEM_PROMPT, REVIEW_USER_PROMPT
from engram.nodes.tokens import message_content
from engram.stores.memory.content import content_problem
from engram.stores.memory.types import Category, MemoryCandidate
from engram.stores.secrets import is_only_secret, redact

REVIEW_CONFIDENCE = 0.85
"""Confidence of a memory the rules proposed and the model kept."""
MAX_CANDIDATES = 12
"""Candidates reviewed in one call at most; the rest of a window's candidates are kept as the rules
proposed them (a window is short, so this is rare)."""
MAX_NOTE_CHARS = 240
"""Characters of the model's wording of one candidate at most."""
TOKENS_PER_CANDIDATE = 110
"""Output tokens allowed per reviewed candidate (its note is at most `MAX_NOTE_CHARS`)."""

_NARRATION = re.compile(
    r"\b(?:assistant|conversation|chat|asked|asks|mentioned|mentions|explained|says|said)\b"
    r"|candidates?|notes?"
    r"|助手|助理|对话|聊天|提到|问了|询问|说道|候选",
    re.IGNORECASE,
)
"""Words that describe the conversation instead of the user: such a note is not used."""
_KANA = re.compile(r"[\u3040-\u30ff]")
_HANGUL = re.compile(r"[\uac00-\ud7af]")


class Review(BaseModel):
    """The model's verdict on one candidate: it restates the candidate first, so that its
    category and keep follow from the candidate it just wrote."""

    n: int = Field(ge=1, description="The candidate's number.")
    note: str = Field(
        min_length=1,
        max_length=MAX_NOTE_CHARS,
        description="The candidate as one standalone sentence, details exactly as written.",
    )
    category: Category = Field(description="The kind of memory.")
    keep: bool = Field(description="Whether the candidate is worth remembering.")


def review_schema(count: int) -> type[BaseModel]:
    """`{"reviews": [Review, ...]}` with exactly `count` items (a grammar enforces the count)."""
    return create_model(
        "ReviewCandidates",
        __doc__="The verdict on each candidate note, in the order given.",
        reviews=(list[Review], Field(min_length=count, max_length=count)),
    )


class ReviewExtractor:
    """Rules propose, the model keeps or drops, classifies and words (module docstring).

    Args:
        model: The memory model; it must support `with_structured_output`.
        rules: The proposing extractor (default: `RuleExtractor()`).
        timeout: Seconds per call (default: `call_timeout(model)`).
    """

    mode = "llm"
    """Extraction by the memory model: `consolidate` falls back to the rules when a call fails."""

    def __init__(
        self, model: BaseChatModel, *, rules: RuleExtractor | None = None,
        timeout: float | None = None,
    ) -> None:
        self.model = model
        self.rules = rules if rules is not None else RuleExtractor()
        self.timeout = timeout if timeout is not None else call_timeout(model)
        self._runnables: dict[int, tuple[type[BaseModel], Any]] = {}

    async def aextract(
        self, messages: Sequence[BaseMessage], *, context: Sequence[BaseMessage] = ()
    ) -> list[MemoryCandidate]:
        """The rules' candidates as reviewed by the model.

        Raises:
            ModelOutputError: The answer was unusable, also after the corrective retry.
            TimeoutError: The call took longer than the timeout.
        """
        proposed = self.rules.extract(messages, context=context)
        if not proposed:
            return []
        reviewed, rest = proposed[:MAX_CANDIDATES], proposed[MAX_CANDIDATES:]
        schema, runnable = self._runnable(len(reviewed))
        numbered = "\n".join(
            f"{i}. [{c.category}] {c.content}" for i, c in enumerate(reviewed, 1)
        )
        user = REVIEW_USER_PROMPT.format(candidates=numbered, count=len(reviewed))
        result = await ainvoke_structured(
            runnable, schema, [SystemMessage(REVIEW_SYSTEM_PROMPT), HumanMessage(user)],
            timeout=self.timeout,
        )
        said = redact("\n".join(
            message_content(m) for m in [*context, *messages] if isinstance(m, HumanMessage)
        )).text
        kept = [
            _reviewed(candidate, review, said)
            for candidate, review in zip(reviewed, result.reviews, strict=True)  # type: ignore[attr-defined]
            if review.keep
        ]
        return [*kept, *rest]

    def _runnable(self, count: int) -> tuple[type[BaseModel], Any]:
        if count not in self._runnables:
            schema = review_schema(count)
            self._runnables[count] = schema, structured(
                self.model, schema, max_tokens=64 + TOKENS_PER_CANDIDATE * count,
                run_name="engram_extract",
            )
        return self._runnables[count]


def _reviewed(candidate: MemoryCandidate, review: Review, said: str) -> MemoryCandidate:
    """The kept candidate with the model's category and, when acceptable, its wording."""
    note = accepted_note(candidate.content, review.note, said)
    return candidate.model_copy(
        update={
            "content": note if note is not None else candidate.content,
            "category": review.category,
            "confidence": REVIEW_CONFIDENCE,
        }
    )


def accepted_note(original: str, note: str, said: str | None = None) -> str | None:
    """The model's `note` for a candidate, or None when the candidate's own words must stay.

    A note is used when it keeps every detail of `original` and names no detail that the user
    did not say (`said`, the user's messages; default: `original`), compared case- and
    whitespace-insensitively; when it is written in the same scripts (Chinese, Japanese kana,
    Korean or none of them), is at most about twice as long, does not describe the conversation,
    and is a valid memory with no secret in it.
    """
    text = " ".join(note.split())
    if not text or content_problem(text) is not None or len(text) > 2 * len(original) + 40:
        return None
    if _scripts(text) != _scripts(original):
        return None
    if _NARRATION.search(text) or is_only_secret(text) or redact(text).text != text:
        return None
    folded, heard = _fold(text), _fold(said if said is not None else original)
    if not all(_fold(d) in folded for d in details(original)):
        return None
    if not all(_fold(d) in heard for d in details(text)):
        return None
    return text


def _scripts(text: str) -> tuple[bool, bool, bool]:
    """Whether `text` holds Chinese characters, Japanese kana, Korean hangul."""
    return has_cjk(text), bool(_KANA.search(text)), bool(_HANGUL.search(text))


def _fold(text: str) -> str:
    return "".join(text.casefold().split())
