"""The long-term memory model: memories and their types, the write policy and recall ranking,
editing, restore, the maintenance journal, `memory.md` import/export, and a user's data as a whole.

`LongTermMemory` (`long_term`) is the entry point; everything below it is pure store steps
(`engram.stores.steps`) that work on any LangGraph `BaseStore`.
"""

from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.restore import RestoreResult
from engram.stores.memory.types import (
    CATEGORIES,
    Category,
    Memory,
    MemoryCandidate,
    ScoredMemory,
    WriteResult,
)
from engram.stores.memory.users import DeleteReport, UserStats, adelete_user, delete_user

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
    "adelete_user",
    "delete_user",
]
