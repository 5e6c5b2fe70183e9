"""The maintenance journal: what maintenance changed on a memory, so `restore` can undo it.

Maintenance (`engram.stores.maintenance`) writes one entry per memory it lowers, forgets or
compresses, under `("memory_maintenance", <user_id>)`; `engram.stores.memory.manage.restore` reads it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

ForgetReason = Literal["relevance", "ttl", "cap", "uncompressed"]
"""Why maintenance forgot a memory."""


class JournalEntry(BaseModel):
    """What maintenance changed on one memory (key: the memory id), so `restore` can undo it."""

    model_config = ConfigDict(extra="ignore")

    importance_before: float | None = None
    """The importance before maintenance lowered it."""
    lowered_to: float | None = None
    """The importance maintenance set; when the memory's importance differs (a later write
    confirmed it), the lowering is over and `importance_before` no longer applies."""
    forgotten_by: ForgetReason | None = None
    compressed_into: str | None = None
    """The memory that replaced this one in a compression."""
    compressed_from: list[str] = Field(default_factory=list)
    """The memories this one was compressed from."""
    relevance: float | None = None
    """Relevance when the entry was last written."""
    at: str
