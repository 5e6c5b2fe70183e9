"""Maintenance of a user's long-term memories: expiry, relevance decay, a count cap and
compression, all reversible through the journal (`engram.stores.memory.manage.journal`)."""

from engram.stores.maintenance.maintain import amaintain, maintain
from engram.stores.maintenance.types import (
    CompressedDraft,
    CompressionError,
    Compressor,
    MaintenanceReport,
    MaintenanceSettings,
)

__all__ = [
    "CompressedDraft",
    "CompressionError",
    "Compressor",
    "MaintenanceReport",
    "MaintenanceSettings",
    "amaintain",
    "maintain",
]
