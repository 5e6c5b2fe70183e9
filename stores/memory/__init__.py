"""The long-term memory model: memories and their types, the write policy and recall ranking,
editing, restore, the maintenance journal, `memory.md` import/export, and a user's data as a whole.

`LongTermMemory` (`long_term`) is the entry point; everything below it is pure store steps
(`engram.stores.steps`) that work on any LangGraph `BaseStore`. Names are imported on first use,
so that a module of this room (`categories`) loads without the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram.stores.lazy import lazy_exports

if TYPE_CHECKING:
    from engram.stores.memory.categories import CATEGORIES, Category
    from engram.stores.memory.long_term import LongTermMemory
    from engram.stores.memory.manage.restore import RestoreResult
    from engram.stores.memory.types import Memory, MemoryCandidate, ScoredMemory, WriteResult
    from engram.stores.memory.users import (
        DeleteReport,
        UserStats,
        adelete_thread,
        adelete_user,
        delete_thread,
        delete_user,
    )

__all__ = [
    "CATEGORIES",
    "Category",
    "DeleteReport",
    "LongTermMemory",
    "Memory",
    "MemoryCandidate",
    "RestoreResult",
    "ScoredMemory",
    "UserStats",
    "WriteResult",
    "adelete_thread",
    "adelete_user",
    "delete_thread",
    "delete_user",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "CATEGORIES": "engram.stores.memory.categories",
        "Category": "engram.stores.memory.categories",
        "LongTermMemory": "engram.stores.memory.long_term",
        "RestoreResult": "engram.stores.memory.manage.restore",
        "Memory": "engram.stores.memory.types",
        "MemoryCandidate": "engram.stores.memory.types",
        "ScoredMemory": "engram.stores.memory.types",
        "WriteResult": "engram.stores.memory.types",
        "DeleteReport": "engram.stores.memory.users",
        "UserStats": "engram.stores.memory.users",
        "adelete_thread": "engram.stores.memory.users",
        "adelete_user": "engram.stores.memory.users",
        "delete_thread": "engram.stores.memory.users",
        "delete_user": "engram.stores.memory.users",
    },
)
