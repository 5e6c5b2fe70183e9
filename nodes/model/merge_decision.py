"""The merge decider: the memory model chooses replace, merge or keep both.

The write policy asks it about a new memory and a similar current memory (of any category, the
most similar first, until one is replaced or merged) that is too similar to add blindly and not
similar enough (or too different in its specifics) to merge by rule
(`engram.stores.memory.write.decision`). The model names the relation of the two memories
(`update` -> replace, `more_detail` -> merge, `different_thing` -> keep both) and writes them as
one statement, in `MergeChoice`, through
`engram.nodes.model.calls`: the output is bounded (`DECISION_MAX_TOKENS`, the schema's enum and
`maxLength`, which llama.cpp enforces as a grammar), the call has a timeout, and an answer that
does not parse gets one corrective retry. After that `adecide` raises `MergeDecisionError`; the
policy then keeps today's threshold rule (add) and the result says so, which `consolidate`
records as a `merge_decision` failure (`decision_failures`).

Both memories are shown between their own tags, escaped (`engram.nodes.text.escape.escape_recalled`):
nothing in a memory can close its tag or open another, so a recalled text cannot change the
prompt's structure. The prompts hold no example memory a small model could copy, and a merged
text that copies the instructions instead of the memories is refused (`MergeDecisionError`).

Before a replacement, the model is asked the other way round whether the saved memory is still
true (`StillTrue`, the safe answer first); only `no_longer_true` lets the update replace it, and
`still_true` keeps both. On 10 pairs from dialogs written for the purpose (5 updates, 5 pairs that
only share a subject: a father's diagnosis and his blood-pressure pill, two different drugs, his
home town and a trip there), Qwen2.5-Coder-1.5B answered `update` for all 10 and `still_true` for
all 10: asked both ways it contradicts itself, and retires nothing. Without the check, its
updates lost a fifth of the memories that were current on time (the eval's lost-memory rate,
0.19 on those dialogs). A model that can judge answers both questions alike.

Small models (12 hand-made pairs, docs/cli.md "Users, merges and deleting"): asked "replace, merge or
keep_both?", Qwen2.5-Coder-0.5B answered `replace` for every pair, superseding memories about
different things; with `update` listed first, the 1.5B answered `update` for every pair. Asked
for the relation with the safe answer first, the 1.5B gets 9 of 12 right and the 0.5B answers
`different_thing` for every pair, the rule's outcome: a model that cannot tell fails safe.

Example:
    >>> import asyncio
    >>> from engram.stores.memory.types import Memory
    >>> class Canned:  # any chat model with structured output
    ...     def with_structured_output(self, schema):
    ...         from langchain_core.runnables import RunnableLambda
    ...         answer = {"relation": "update", "merged": ""}  # the decision
    ...         if schema is StillTrue:  # the check before replacing
    ...             answer = {"saved_memory": "no_longer_true"}
    ...         return RunnableLambda(lambda _: schema(**answer))
    >>> old = Memory.new("The user lives in Berlin", "fact", 0.8, now="2026-01-01T00:00:00+00:00")
    >>> question = MergeQuestion(old, "The user moved to Lisbon", similarity=0.51)
    >>> asyncio.run(LLMMergeDecider(Canned()).adecide(question)).action
    'replace'
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from typing import Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from engram.nodes.failures import RECOVERABLE_ERRORS, record_failure
from engram.nodes.model.calls import BoundedCall
from engram.nodes.prompts import (
    MERGE_CHECK_SYSTEM_PROMPT,
    MERGE_CHECK_USER_PROMPT,
    MERGE_DECISION_SYSTEM_PROMPT,
    MERGE_DECISION_USER_PROMPT,
)
from engram.nodes.text.escape import escape_recalled
from engram.stores.memory.types import WriteResult
from engram.stores.memory.write.decision import (
    MergeAction,
    MergeDecision,
    MergeDecisionError,
    MergeQuestion,
)

DECISION_MAX_TOKENS = 256
"""Output limit of one decision call (an action and at most `MERGED_MAX_CHARS` characters)."""
MERGED_MAX_CHARS = 600
"""Characters of a merged memory at most (two extracted memories are 300 each at most)."""
CHECK_MAX_TOKENS = 32
"""Output limit of the check before a replacement (one enum value)."""
COPIED_WORDS = 6
"""A merged text sharing this many consecutive words with the instructions copied them."""

Relation = Literal["different_thing", "more_detail", "update"]
ACTIONS: dict[str, MergeAction] = {
    "different_thing": "keep_both",
    "more_detail": "merge",
    "update": "replace",
}
"""The write policy's action for each relation the model names."""


class MergeChoice(BaseModel):
    """Compare a saved memory about the user with a new, similar memory."""

    relation: Relation = Field(
        description=(
            "different_thing: they are about different things; more_detail: the new memory "
            "adds detail about the same thing and the saved one stays true; update: it gives "
            "a new value for the same thing."
        )
    )
    merged: str = Field(
        max_length=MERGED_MAX_CHARS,
        description=(
            "Both memories as one statement about the user, every name, number and identifier "
            "kept as written."
        ),
    )


class StillTrue(BaseModel):
    """Whether a saved memory is still true after a newer one was said."""

    saved_memory: Literal["still_true", "no_longer_true"] = Field(
        description=(
            "still_true: the newer memory repeats it, adds to it, or is about something else; "
            "no_longer_true: the newer memory says it changed, ended or was wrong."
        )
    )


class LLMMergeDecider:
    """The merge decision with a chat model's structured output.

    Args:
        model: The memory model; it must support `with_structured_output`.
        system_prompt: Overrides `MERGE_DECISION_SYSTEM_PROMPT`.
        user_prompt: Overrides `MERGE_DECISION_USER_PROMPT` (`{existing}`, `{incoming}`).
        max_tokens: Output limit per call.
        timeout: Seconds per call (default: `call_timeout(model)`).
    """

    def __init__(
        self,
        model: BaseChatModel,
        *,
        system_prompt: str = MERGE_DECISION_SYSTEM_PROMPT,
        user_prompt: str = MERGE_DECISION_USER_PROMPT,
        max_tokens: int = DECISION_MAX_TOKENS,
        timeout: float | None = None,
    ) -> None:
        self.call = BoundedCall(
            model, MergeChoice, max_tokens=max_tokens, run_name="engram_merge_decision",
            timeout=timeout,
        )
        self.check = BoundedCall(
            model, StillTrue, max_tokens=CHECK_MAX_TOKENS, run_name="engram_merge_check",
            timeout=timeout,
        )
        self.system_prompt = system_prompt
        self.user_prompt = user_prompt

    async def adecide(self, question: MergeQuestion) -> MergeDecision:
        """Ask the model; raises `MergeDecisionError` when it fails or answers unusably."""
        try:
            choice = await self.call.ainvoke(self._messages(question))
        except RECOVERABLE_ERRORS as exc:
            raise MergeDecisionError(_describe(exc)) from exc
        action = ACTIONS[choice.relation]
        if action == "replace" and await self._still_true(question):
            return MergeDecision("keep_both")
        if action != "merge":
            return MergeDecision(action)
        merged = choice.merged.strip()
        if _copies(merged, self.system_prompt):
            raise MergeDecisionError("the merged text copies the instructions, not the memories")
        return MergeDecision(action, merged or None)

    def decide(self, question: MergeQuestion) -> MergeDecision:
        """Sync `adecide` (for callers without an event loop)."""
        return asyncio.run(self.adecide(question))

    async def _still_true(self, question: MergeQuestion) -> bool:
        """The check before a replacement: whether the model, asked the other way round, finds
        the saved memory still true (module docstring)."""
        messages = _messages(MERGE_CHECK_SYSTEM_PROMPT, MERGE_CHECK_USER_PROMPT, question)
        try:
            answer = await self.check.ainvoke(messages)
        except RECOVERABLE_ERRORS as exc:
            raise MergeDecisionError(f"the check before replacing: {_describe(exc)}") from exc
        return answer.saved_memory == "still_true"

    def _messages(self, question: MergeQuestion) -> list[BaseMessage]:
        return _messages(self.system_prompt, self.user_prompt, question)


def _messages(system: str, user: str, question: MergeQuestion) -> list[BaseMessage]:
    text = user.format(
        existing=escape_recalled(question.existing.content.strip()),
        incoming=escape_recalled(question.incoming.strip()),
    )
    return [SystemMessage(system), HumanMessage(text)]


def make_merge_decider(memory_model: BaseChatModel | None) -> LLMMergeDecider | None:
    """The merge decider on `memory_model`; None without a model (the write policy then merges
    by its threshold rule alone)."""
    return LLMMergeDecider(memory_model) if memory_model is not None else None


def decision_counts(results: Sequence[WriteResult]) -> dict[str, int]:
    """How often the merge decider answered each action ("failed": no usable answer)."""
    counts: dict[str, int] = {}
    for result in results:
        if result.decision is not None:
            counts[result.decision] = counts.get(result.decision, 0) + 1
    return counts


def decision_failures(results: Sequence[WriteResult]) -> list[dict[str, str]]:
    """A `merge_decision` failure entry (`engram.nodes.failures`) per candidate whose decision
    failed and fell back to the threshold rule."""
    return [
        record_failure("merge_decision", MergeDecisionError(result.reason))
        for result in results
        if result.decision == "failed"
    ]


def _copies(text: str, instructions: str) -> bool:
    """Whether `text` repeats `COPIED_WORDS` consecutive words of `instructions`."""
    words = _words(text)
    grams = {tuple(words[i : i + COPIED_WORDS]) for i in range(len(words) - COPIED_WORDS + 1)}
    source = _words(instructions)
    return any(
        tuple(source[i : i + COPIED_WORDS]) in grams
        for i in range(len(source) - COPIED_WORDS + 1)
    )


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.casefold())


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
