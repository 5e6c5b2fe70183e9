"""The data of maintenance: its settings, the journal that makes it reversible, its report.

See `engram.stores.maintenance.maintain` for what a run does and `engram.stores.memory.manage.restore` for how
the journal is used to undo it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, Field

from engram.stores.memory.types import CATEGORIES, Memory


@dataclass(frozen=True)
class MaintenanceSettings:
    """Thresholds of a maintenance run: forgetting, the cap, compression.

    Raises:
        ValueError: A threshold out of range, or a TTL for an unknown category.
    """

    decay_per_day: float = 0.01
    """The `0.01` in `exp(-0.01 · days)`."""
    forget_below: float = 0.1
    """Relevance below which a memory is forgotten."""
    lower_below: float = 0.3
    """Relevance below which a memory's importance is lowered."""
    lower_factor: float = 0.5
    """What a lowered importance is multiplied by (once; the journal keeps the old value)."""
    max_memories: int | None = 10_000
    """Active memories kept per user at most; None: no cap."""
    max_episodes: int | None = 20_000
    """Archived messages (episodes) kept per user at most: above it the oldest are deleted
    for good, and purged from the store's files; None: no cap."""
    ttl_days: Mapping[str, float] = field(default_factory=dict)
    """Days a category's memories stay active without being written or confirmed, e.g.
    `{"goal": 180}`; categories not listed never expire."""
    compress_after_days: float = 90.0
    """Idle days after which a memory may be compressed."""
    compress_max_access: int = 5
    """Only memories recalled fewer times than this are compressed."""
    compress_min_group: int = 3
    """Fewer eligible memories of a category than this are left alone."""
    compress_max_group: int = 20
    """Memories per compression call at most."""

    def __post_init__(self) -> None:
        if not 0 <= self.forget_below <= self.lower_below:
            raise ValueError(
                f"need 0 <= forget_below <= lower_below, got {self.forget_below} and "
                f"{self.lower_below}"
            )
        if not 0 < self.lower_factor < 1:
            raise ValueError(f"lower_factor must be between 0 and 1, got {self.lower_factor}")
        if self.max_memories is not None and self.max_memories < 0:
            raise ValueError(f"max_memories must be >= 0 or None, got {self.max_memories}")
        if self.max_episodes is not None and self.max_episodes < 0:
            raise ValueError(f"max_episodes must be >= 0 or None, got {self.max_episodes}")
        for category, days in self.ttl_days.items():
            if category not in CATEGORIES:
                raise ValueError(
                    f"TTL for unknown category {category!r}: use one of {', '.join(CATEGORIES)}"
                )
            if days <= 0:
                raise ValueError(
                    f"TTL of {category!r} must be a positive number of days, got {days}"
                )
        if self.compress_min_group < 2 or self.compress_max_group < self.compress_min_group:
            raise ValueError(
                "need 2 <= compress_min_group <= compress_max_group, got "
                f"{self.compress_min_group} and {self.compress_max_group}"
            )


class CompressedDraft(BaseModel):
    """One memory a compressor proposes in place of several old ones."""

    content: str
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    """None: the highest importance of its sources."""
    sources: list[str]
    """Ids of the memories it replaces (from the group it was given)."""


class CompressionError(RuntimeError):
    """The compressor failed (model error) or answered with something unusable."""


class Compressor(Protocol):
    """Compresses old memories of one category into a few (`engram.nodes.model.compress`)."""

    def compress(self, category: str, memories: Sequence[Memory]) -> list[CompressedDraft]:
        """1-3 drafts; raises `CompressionError`."""
        ...

    async def acompress(self, category: str, memories: Sequence[Memory]) -> list[CompressedDraft]:
        """Async `compress`."""
        ...


@dataclass(frozen=True)
class Lowered:
    """An importance maintenance lowered."""

    memory_id: str
    importance_before: float
    importance_after: float
    relevance: float


@dataclass(frozen=True)
class Compressed:
    """One compression: the originals and the memories that replaced them."""

    category: str
    sources: list[str]
    created: list[str]
    """Empty in a dry run (the model is not called)."""


@dataclass
class MaintenanceReport:
    """What a maintenance run changed (or, in a dry run, would change), by memory id."""

    user_id: str
    at: str
    dry_run: bool
    active_before: int
    """Active memories when the run started."""
    expired: list[str] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    """Forgotten for low relevance."""
    lowered: list[Lowered] = field(default_factory=list)
    compressed: list[Compressed] = field(default_factory=list)
    capped: list[str] = field(default_factory=list)
    """Forgotten because the user had more than `max_memories`."""
    compression: str = ""
    """How the compression step ran: "llm", or why it did not."""
    failures: list[str] = field(default_factory=list)
    """Compression groups the model failed on (their memories are unchanged)."""
    skipped: list[str] = field(default_factory=list)
    """Memories written by someone else while the run decided (a merge, a recall, a new value):
    left as that write made them, and in none of the lists above; the next run sees them again."""
    episodes_deleted: list[str] = field(default_factory=list)
    """Keys of the oldest episodes deleted because the user had more than `max_episodes`."""

    @property
    def changed(self) -> int:
        """Memories changed (or created) by the run."""
        return (
            len(self.expired)
            + len(self.forgotten)
            + len(self.lowered)
            + len(self.capped)
            + sum(len(c.sources) + len(c.created) for c in self.compressed)
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {**asdict(self), "changed": self.changed}
