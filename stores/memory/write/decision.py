"""The memory model's say in the write policy's uncertain band: the merge decision.

Similarity alone cannot tell "The user moved the billing service to PostgreSQL 16" (an update of
"... uses PostgreSQL 15 ...": replace) from "The user has a cat named Milo" (next to "... a dog
named Rex": keep both). Below the duplicate threshold the rules add a second memory, and above it
they refuse to merge texts that state different specifics; with a merge decider configured, the
write policy (`engram.stores.memory.write.policy`) asks it instead about the candidate's most
similar current memories of any category (at most `PolicySettings.merge_pool`, best first) that
are at least `DECISION_FLOOR` similar and that the rules would not merge, one question each,
until it answers `replace` or `merge`:

- `replace`: the new memory supersedes the old one, which stays as history (`valid_until`,
  `superseded_by`), as a new value of a `key` does;
- `merge`: one memory with the decider's merged text, kept only when it passes `merge_problem`
  (not longer than both texts together, no number, name or identifier of either lost);
- `keep_both`: the new memory is added.

A decider that cannot decide raises `MergeDecisionError`; the policy then applies the threshold
rule (add) and says why in the result (`WriteResult.decision == "failed"`), and so does a merge
that `merge_problem` rejects.

The decider itself lives with the models (`engram.nodes.model.merge_decision`); here are only the
question, the answer and the checks, so that the store layer imports no model code.

Example:
    >>> merge_problem("The user uses Postgres", "The user uses Postgres 16", "... for project 3")
    'the merged text drops 16, 3'
    >>> print(merge_problem("The user uses Postgres 16 for project 3", "Uses Postgres 16",
    ...                     "The user's project 3"))
    None
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

from engram.stores.memory.content import MAX_CONTENT_CHARS, content_problem
from engram.stores.memory.types import Memory, joined_content
from engram.stores.memory.write.specifics import missing_specifics

MergeAction = Literal["replace", "merge", "keep_both"]

DECISION_FLOOR = 0.4
"""Similarity from which the decider is asked (up to the duplicate threshold, and above it when
the rules refuse to merge). Measured with all-MiniLM-L6-v2 (ChromaStore and InMemoryStore both
score `1 - cosine distance`): updates of a fact scored 0.44-0.88 against the fact they update
("we dropped buildium ... its turbotenant now": 0.49, a finished project and the next one:
0.44), mergeable details 0.65-0.68, different things of one kind 0.41-0.60 and unrelated
memories 0.05-0.30. Below 0.4 the 1.5B model answers `update` for unrelated pairs (a deploy
pipeline and a staging database at 0.18); other embedders need their own floor
(`LongTermMemory(..., decision_floor=...)`)."""
MERGE_SLACK_CHARS = 40
"""How much longer than both texts joined a merged text may be (rephrasing them as one sentence
adds a few words, a faithful merge never needs more)."""


@dataclass(frozen=True)
class MergeQuestion:
    """What the write policy asks a merge decider about one candidate."""

    existing: Memory
    """A current memory similar to the candidate (of any category)."""
    incoming: str
    """The candidate's text (secrets already redacted)."""
    similarity: float
    """The store's similarity score of the two."""


@dataclass(frozen=True)
class MergeDecision:
    """A merge decider's answer."""

    action: MergeAction
    merged_content: str | None = None
    """The merged text, for `merge`."""


class MergeDecisionError(RuntimeError):
    """The merge decider could not decide (a model error, a timeout, an unusable answer)."""


class MergeDecider(Protocol):
    """Decides what to keep of a new memory and a similar old one
    (`engram.nodes.model.merge_decision`)."""

    def decide(self, question: MergeQuestion) -> MergeDecision:
        """The decision; raises `MergeDecisionError`."""
        ...

    async def adecide(self, question: MergeQuestion) -> MergeDecision:
        """Async `decide`."""
        ...


def merge_problem(merged: str, existing: str, incoming: str) -> str | None:
    """What is wrong with `merged` as the merge of `existing` and `incoming`, or None.

    A merged memory is a memory (`content_problem`), is not longer than the two texts joined
    (plus `MERGE_SLACK_CHARS`), and keeps every number, name and identifier of both
    (`engram.stores.memory.write.specifics`).
    """
    if problem := content_problem(merged):
        return f"the merged text {problem}"
    limit = min(MAX_CONTENT_CHARS, len(joined_content(existing, incoming)) + MERGE_SLACK_CHARS)
    if len(merged.strip()) > limit:
        return f"the merged text has {len(merged.strip())} characters, more than {limit}"
    if lost := missing_specifics(merged, existing, incoming):
        return f"the merged text drops {', '.join(sorted(lost))}"
    return None


Answer = MergeDecision | MergeDecisionError
"""What the policy receives for its question: the decision, or why there is none."""


def answer_with(decider: MergeDecider) -> Callable[[MergeQuestion], Answer]:
    """`run_steps`'s `answer`: the decider's decision, or the error it raised."""

    def answer(question: MergeQuestion) -> Answer:
        try:
            return decider.decide(question)
        except MergeDecisionError as exc:
            return exc

    return answer


def aanswer_with(decider: MergeDecider) -> Callable[[MergeQuestion], Awaitable[Answer]]:
    """`arun_steps`'s `answer`: the decider's decision, or the error it raised."""

    async def answer(question: MergeQuestion) -> Answer:
        try:
            return await decider.adecide(question)
        except MergeDecisionError as exc:
            return exc

    return answer
