"""The long-term memory value model, write candidates and results, and the combined recall score.

A memory is a store item under `("memories", <user_id>)` whose value is `Memory.to_value()`.
Timestamps are ISO-8601 strings in UTC. `current` is derived from `valid_until` and stored so
that stores can filter on it (Chroma metadata cannot hold None, so nothing filters on
`valid_until` itself).
"""

from __future__ import annotations

import hashlib
import logging
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar
from uuid import uuid4

from langgraph.store.base import Item, PutOp
from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field, field_validator

from engram.stores.memory.categories import CATEGORIES, Category  # noqa: F401  (re-exported)
from engram.stores.memory.content import MAX_CONTENT_CHARS, content_problem
from engram.stores.text import valid_unicode

logger = logging.getLogger(__name__)

ItemT = TypeVar("ItemT", bound=Item)

DEFAULT_IMPORTANCE: dict[str, float] = {
    "preference": 0.9,
    "fact": 0.8,
    "lesson": 0.85,
    "goal": 0.7,
    "project": 0.8,
    "skill": 0.75,
}
"""Importance of a candidate that gives none. `project` is a fact about the user's work, so it
gets fact's 0.8; `skill` (a reusable way of doing something) sits between goal and lesson at
0.75."""


WriteAction = Literal["created", "merged", "duplicate", "superseded", "unchanged", "dropped"]

_KEY_CHARS = re.compile(r"[^a-z0-9_.]+")


class Memory(BaseModel):
    """One long-term memory, as stored (the store item's key is `id`).

    Example:
        >>> m = Memory.new("I prefer dark mode", "preference", 0.9, now="2026-01-01T00:00:00+00:00")
        >>> (m.category, m.current, m.forgotten)
        ('preference', True, False)
    """

    model_config = ConfigDict(extra="ignore")

    id: str
    content: str
    category: Category
    importance: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    access_count: int = 0
    last_accessed: str | None = None
    source_thread_id: str | None = None
    source_message_ids: list[str] = Field(default_factory=list)
    valid_from: str
    """When the user said it (the newest of its source messages' times,
    `MemoryCandidate.said_at`), else when it was written; the memory block shows its date."""
    valid_until: str | None = None
    """When a newer memory with the same `key` replaced this one; None while current."""
    supersedes: list[str] = Field(default_factory=list)
    """Ids of the memories this one replaced."""
    superseded_by: str | None = None
    replaced_as: Literal["changed", "edited", "compressed"] | None = None
    """Why `superseded_by` replaced it: a later statement changed it (the write policy), the
    person edited it, or maintenance compressed it into a summary. Only a change is history
    that recall shows ("earlier: ..."); None, for memories replaced before this was recorded,
    counts as a change."""
    kept_as: str | None = None
    """When a change retired only part of this memory, the memory that holds the rest (with this
    one's date and sources); undoing the change forgets it."""
    forgotten: bool = False
    """Soft delete: kept and restorable, but not recalled by default."""
    key: str | None = None
    """Subject/attribute slug, e.g. `preference.frontend_framework`: a new value supersedes."""
    structured_data: dict[str, Any] | None = None
    content_hashes: list[str] = Field(default_factory=list)
    """Normalised hashes of every text this memory absorbed (exact-duplicate detection)."""
    created_at: str
    updated_at: str

    @computed_field  # type: ignore[prop-decorator]
    @property
    def current(self) -> bool:
        """Not superseded (stored, so that a store can filter on it)."""
        return self.valid_until is None

    @classmethod
    def new(
        cls,
        content: str,
        category: Category,
        importance: float,
        *,
        now: str,
        id: str | None = None,
        valid_from: str | None = None,
        **fields: Any,
    ) -> Memory:
        """A fresh memory written `now`, valid from `valid_from` (default: `now`)."""
        return cls(
            id=id or str(uuid4()),
            content=content,
            category=category,
            importance=importance,
            valid_from=valid_from or now,
            created_at=now,
            updated_at=now,
            content_hashes=[content_hash(content)],
            **fields,
        )

    @classmethod
    def from_item(cls, item: Item) -> Memory:
        """Read a memory back from a store item.

        Raises:
            pydantic.ValidationError: The item is not a memory.
        """
        return cls.model_validate({**item.value, "id": item.key})

    @classmethod
    def readable(cls, items: Iterable[Item]) -> tuple[list[Memory], list[str]]:
        """The items that read as memories, and the keys of those that do not: an item that
        something other than engram put in a memory namespace (through a store API, say) is
        skipped, so that it cannot hide the others.

        Example:
            >>> from langgraph.store.base import Item
            >>> now = datetime.now(timezone.utc)
            >>> stamps = dict.fromkeys(["created_at", "updated_at", "valid_from"], now.isoformat())
            >>> good = {"content": "I use Vim", "category": "preference", "importance": 0.9, **stamps}
            >>> items = [Item(value=v, key=k, namespace=("memories", "a"), created_at=now,
            ...               updated_at=now) for k, v in [("m1", good), ("x", {"junk": 1})]]
            >>> memories, unreadable = Memory.readable(items)
            >>> ([m.content for m in memories], unreadable)
            (['I use Vim'], ['x'])
        """
        memories: list[Memory] = []
        unreadable: list[str] = []
        for item in items:
            try:
                memories.append(cls.from_item(item))
            except ValidationError:
                unreadable.append(item.key)
        if unreadable:
            logger.warning(
                "skipped %d store items that are not memories (keys: %s)",
                len(unreadable),
                ", ".join(unreadable[:5]),
            )
        return memories, unreadable

    @classmethod
    def only_readable(cls, items: list[ItemT]) -> list[ItemT]:
        """The items that read as memories (`readable`), as they are."""
        readable = {m.id for m in cls.readable(items)[0]}
        return [item for item in items if item.key in readable]

    def to_value(self) -> dict[str, Any]:
        """The store value (JSON-safe; includes the derived `current` flag)."""
        return self.model_dump(mode="json")


class MemoryCandidate(BaseModel):
    """Something an extractor proposes to remember, before the write policy decides what to do.

    The content is checked when the candidate is built (`content_problem`): words, at most
    `MAX_CONTENT_CHARS` characters; lone surrogates become U+FFFD and surrounding whitespace
    goes.

    Example:
        >>> MemoryCandidate(content="  I use Vim ", category="preference").content
        'I use Vim'
        >>> MemoryCandidate(content=".", category="fact")
        Traceback (most recent call last):
        ...
        pydantic_core._pydantic_core.ValidationError: 1 validation error for MemoryCandidate
        content
          Value error, a memory's content has no letters or digits ...

    Raises:
        pydantic.ValidationError: A `ValueError` saying what is wrong with the content.
    """

    content: str
    category: Category
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    """None takes the category's default (`DEFAULT_IMPORTANCE`)."""
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    key: str | None = None
    structured_data: dict[str, Any] | None = None
    message_ids: list[str] | None = None
    """The messages this came from; None uses the ids given to `upsert`."""
    said_at: str | None = None
    """When the user said it (ISO 8601; `consolidate` sets the newest time of its messages):
    the memory's `valid_from`. None: when it is written."""
    replaces: str | None = None
    """What this changes: as the assistant's question named it when the user answered it with a
    change ("saving for the GPU?" from "Still saving for the GPU?" - "scratch the gpu, getting a
    steam deck instead"), or the clause of the statement that names it ("the ingress-nginx idea"
    from "scratch the ingress-nginx idea", `engram.nodes.extract.retired`): the current memory
    that matches it best is superseded by this one (the write policy's stated-change step,
    `engram.stores.memory.write.policy.upsert_steps`)."""
    written_by_model: bool = False
    """The memory model wrote its words (`engram.nodes.extract.llm.LLMExtractor`): `consolidate`
    keeps it only when it rests on the user's messages (`engram.nodes.extract.grounding`)."""
    update_only: bool = False
    """Written only as the update of a similar current memory: the one its `replaces` names
    (the stated-change step), or the one the merge decider says it replaces; it then takes that
    memory's category, and is otherwise dropped. A statement the rules found nothing else in
    (`engram.nodes.extract.updates`)."""

    @field_validator("content")
    @classmethod
    def _words(cls, content: str) -> str:
        content = valid_unicode(content)
        problem = content_problem(content)
        if problem:
            raise ValueError(f"a memory's content {problem}")
        return content.strip()

    @field_validator("key")
    @classmethod
    def _slug(cls, key: str | None) -> str | None:
        if key is None:
            return None
        slug = _KEY_CHARS.sub("_", key.strip().lower()).strip("._")
        return slug or None

    @field_validator("said_at")
    @classmethod
    def _iso_time(cls, said_at: str | None) -> str | None:
        if said_at is None:
            return None
        try:
            return parse_time(said_at).isoformat()
        except (TypeError, ValueError):
            raise ValueError(
                f"said_at {said_at!r} is not an ISO 8601 time (e.g. 2026-05-01T09:30:00+00:00)"
            ) from None

    def effective_importance(self) -> float:
        """The importance the policy uses."""
        return self.importance if self.importance is not None else DEFAULT_IMPORTANCE[self.category]


@dataclass(frozen=True)
class ScoredMemory:
    """A recalled memory and why it ranked where it did."""

    memory: Memory
    score: float
    """The combined score: weights · (relevance, importance, recency)."""
    similarity: float
    """Cosine similarity of the query to the memory (the store's score; 0 when it gave none)."""
    recency: float
    """`0.5 ** (days since last updated or recalled / half_life_days)`."""
    relevance: float | None = None
    """How well the memory matches the query: the lexical and dense channels fused (in [0, 1]),
    or `similarity` when the store has no lexical channel; None means `similarity`."""
    earlier: tuple[Memory, ...] = ()
    """Memories this one replaced that the recall matched, oldest first (a turn's context shows
    them as its history: `engram.stores.memory.history.current_versions_steps`)."""


@dataclass(frozen=True)
class WriteResult:
    """What the write policy did with one candidate."""

    action: WriteAction
    memory: Memory | None = None
    """The memory written or confirmed (None when dropped)."""
    superseded: tuple[Memory, ...] = ()
    """Memories this write replaced (action `superseded`), as stored afterwards."""
    kept: tuple[Memory, ...] = ()
    """What the change did not touch of the memories it replaced, each a memory of its own with
    the replaced one's date and sources (`engram.stores.memory.clauses`)."""
    reason: str = ""
    decision: str | None = None
    """What a merge decider said about this candidate (`engram.stores.memory.write.decision`):
    "replace", "merge" or "keep_both"; "failed" when it gave no usable answer and the threshold
    rule applied (`reason` says why); None when it was not asked."""


@dataclass(frozen=True)
class ScoreWeights:
    """Weights of the combined recall score."""

    similarity: float = 0.6
    importance: float = 0.25
    recency: float = 0.15


def recency(updated_at: datetime, now: datetime, half_life_days: float = 30.0) -> float:
    """Exponential decay with the given half-life; 1.0 for a memory updated now (or later).

    Example:
        >>> from datetime import timedelta
        >>> now = datetime(2026, 1, 31, tzinfo=timezone.utc)
        >>> recency(now - timedelta(days=30), now)
        0.5
    """
    age_days = max(0.0, (now - updated_at).total_seconds() / 86400.0)
    return 0.5 ** (age_days / half_life_days)


def combined_score(
    similarity: float,
    importance: float,
    recency_value: float,
    weights: ScoreWeights = ScoreWeights(),
) -> float:
    """`0.6 similarity + 0.25 importance + 0.15 recency` by default.

    Example:
        >>> round(combined_score(0.5, 0.8, 1.0), 3)
        0.65
    """
    return (
        weights.similarity * similarity
        + weights.importance * importance
        + weights.recency * recency_value
    )


def normalize_text(text: str) -> str:
    """Unicode-normalised, case-folded, whitespace-collapsed text without trailing punctuation."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return re.sub(r"\s+", " ", folded).strip().rstrip(".。!！?？;；,，、 ")


def content_hash(text: str) -> str:
    """The exact-duplicate key of a text (`normalize_text`, then SHA-256)."""
    return hashlib.sha256(normalize_text(text).encode()).hexdigest()[:32]


def merge_content(existing: str, incoming: str) -> str:
    """The merge rule: keep the text that contains the other (it says all the other does, and
    more), else both lines (capped).

    Example:
        >>> merge_content("I use Vim", "I use Vim with the LazyVim config")
        'I use Vim with the LazyVim config'
    """
    merged = joined_content(existing, incoming)
    return incoming.strip() if len(merged) > MAX_CONTENT_CHARS else merged


def joined_content(existing: str, incoming: str) -> str:
    """The text that contains the other, else both lines: a merge before the cap."""
    a, b = existing.strip(), incoming.strip()
    if not a or not b:
        return a or b
    na, nb = normalize_text(a), normalize_text(b)
    if nb in na:
        return a
    if na in nb:
        return b
    return f"{a}\n{b}"


def utc_now() -> datetime:
    """The current time, timezone-aware UTC."""
    return datetime.now(timezone.utc)


def parse_time(value: str) -> datetime:
    """Parse an ISO timestamp written by `Memory`; naive ones are taken as UTC."""
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)


INDEX_FIELDS = ["content"]
"""What is embedded (and indexed for BM25) of a memory: its content only."""


def memory_put(namespace: tuple[str, ...], memory: Memory) -> PutOp:
    """The store write of a memory (indexed on its content).

    Every write of a memory goes through here, so its content, `key` and `structured_data` are
    redacted here too (`engram.stores.secrets`): whichever path wrote it (the write policy, an edit, a
    merge, maintenance, an import, an access update of a memory stored before a redaction rule
    existed), no secret reaches the store or its BM25 index.
    """
    # loaded on the first write: commands that only read never compile the redaction rules
    from engram.stores.secrets import redact, redact_data

    value = memory.to_value()
    value["content"] = redact(value["content"]).text
    value["key"] = redact(value["key"]).text if value.get("key") else value.get("key")
    value["structured_data"] = redact_data(value["structured_data"])
    return PutOp(namespace, memory.id, value, index=INDEX_FIELDS)


def hash_put(hash_namespace: tuple[str, ...], digest: str, memory_id: str) -> PutOp:
    """The duplicate-registry write pointing a normalised text hash at a memory (not indexed)."""
    return PutOp(hash_namespace, digest, {"memory_id": memory_id}, index=False)
