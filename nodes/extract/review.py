"""Memory extraction by rules and model together: the rules propose, the model reviews.

A small local model (0.5-1.5B) asked to write memories from a transcript narrates it ("The user
asked about ...") or pastes messages; the offline rules find most durable statements but also keep
passing remarks and guess categories from wording. `ReviewExtractor` gives each side the part it
does well:

1. the offline rules (`RuleExtractor`) propose candidates from the window's user messages
   (secrets already redacted, wording verbatim, supersede keys from `keys`);
2. the model gets the numbered candidates with the rules' guess of their kind, and answers, for
   each one and in order, a `category` (an enum) and `keep`. The schema has exactly as many
   reviews as there are candidates, so a grammar (llama.cpp's `json_schema`) makes even a 0.5B
   model answer every candidate once. The transcript is not sent: shown the conversation as
   well, Qwen2.5-Coder-1.5B judged the conversation's last messages instead of its candidates;
3. kept candidates take the model's category and keep the user's own words (redacted) and the
   rules' key, so corrections still supersede. The model does not reword: a 1.5B model's
   rewordings that kept every detail still added narration or a second statement, which then
   matched no question about the memory;
4. the user's messages the rules found nothing in are offered as updates
   (`engram.nodes.extract.updates`): written only where one names the memory it changes (as
   offline, `engram.nodes.extract.retired`) or the merge decider says it replaces a similar
   memory. A small model cannot judge changes on its own: asked whether a new memory updates a
   saved one, Qwen2.5-Coder-1.5B answered `update` for every pair, true or not, so the rules'
   safe reading of changes stays on (the decider's check then keeps both, see
   `engram.nodes.model.merge_decision`).

A window where the rules find nothing costs no review call. The call is bounded like every
memory-model call (`engram.nodes.model.calls`): an output limit, a timeout, one corrective retry;
then it raises, and `consolidate` stores the rules' own candidates for that window.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field, create_model

from engram.nodes.extract.rules import RuleExtractor
from engram.nodes.model.calls import BoundedCall
from engram.nodes.prompts import REVIEW_SYSTEM_PROMPT, REVIEW_USER_PROMPT
from engram.stores.memory.types import Category, MemoryCandidate

REVIEW_CONFIDENCE = 0.85
"""Confidence of a memory the rules proposed and the model kept."""
MAX_CANDIDATES = 12
"""Candidates reviewed in one call at most; the rest of a window's candidates are kept as the rules
proposed them (a window is short, so this is rare)."""
TOKENS_PER_CANDIDATE = 32
"""Output tokens allowed per reviewed candidate (`{"n": 12, "category": "preference", "keep": true}`
is about 20, indentation included)."""


class Review(BaseModel):
    """The model's verdict on one candidate."""

    n: int = Field(ge=1, description="The candidate's number.")
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
    """Rules propose, the model keeps or drops and classifies (module docstring).

    Args:
        model: The memory model; it must support `with_structured_output`.
        rules: The proposing extractor (default: `RuleExtractor()`, which also marks what a
            statement says it changes, `engram.nodes.extract.retired`).
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
        self.timeout = timeout
        self._calls: dict[int, BoundedCall[Any]] = {}

    async def aextract(
        self, messages: Sequence[BaseMessage], *, context: Sequence[BaseMessage] = ()
    ) -> list[MemoryCandidate]:
        """The rules' candidates as reviewed by the model.

        Raises:
            ModelOutputError: The answer was unusable, also after the corrective retry.
            TimeoutError: The call took longer than the timeout.
        """
        proposed, updates = self.rules.propose(messages, context=context)
        if not proposed:
            return updates
        reviewed, rest = proposed[:MAX_CANDIDATES], proposed[MAX_CANDIDATES:]
        numbered = "\n".join(
            f"{i}. [{c.category}] {c.content}" for i, c in enumerate(reviewed, 1)
        )
        user = REVIEW_USER_PROMPT.format(candidates=numbered, count=len(reviewed))
        result = await self._call(len(reviewed)).ainvoke(
            [SystemMessage(REVIEW_SYSTEM_PROMPT), HumanMessage(user)]
        )
        kept = [
            _reviewed(candidate, review)
            for candidate, review in zip(reviewed, result.reviews, strict=True)  # type: ignore[attr-defined]
            if review.keep
        ]
        return [*kept, *rest, *updates]

    def _call(self, count: int) -> BoundedCall[Any]:
        """The call for `count` candidates (its schema asks for exactly `count` reviews)."""
        if count not in self._calls:
            self._calls[count] = BoundedCall(
                self.model, review_schema(count), max_tokens=64 + TOKENS_PER_CANDIDATE * count,
                run_name="engram_extract", timeout=self.timeout,
            )
        return self._calls[count]


def _reviewed(candidate: MemoryCandidate, review: Review) -> MemoryCandidate:
    """The kept candidate, in the user's words, with the model's category."""
    return candidate.model_copy(
        update={"category": review.category, "confidence": REVIEW_CONFIDENCE}
    )
