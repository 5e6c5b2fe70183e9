"""engram.stores: the Chroma-backed LangGraph store, local embeddings, and long-term memory."""

from engram.stores.chroma import ChromaStore, default_index, make_store
from engram.stores.embeddings import LocalEmbeddings
from engram.stores.hybrid import HybridHit, HybridSearchOp
from engram.stores.lexical import LexicalIndex
from engram.stores.maintenance import amaintain, maintain
from engram.stores.maintenance_types import MaintenanceReport, MaintenanceSettings
from engram.stores.memories import LongTermMemory
from engram.stores.memory_restore import RestoreResult
from engram.stores.memory_types import Memory, MemoryCandidate, ScoredMemory, WriteResult
from engram.stores.paths import default_data_dir

__all__ = [
    "ChromaStore",
    "HybridHit",
    "HybridSearchOp",
    "LexicalIndex",
    "LocalEmbeddings",
    "LongTermMemory",
    "MaintenanceReport",
    "MaintenanceSettings",
    "Memory",
    "MemoryCandidate",
    "RestoreResult",
    "ScoredMemory",
    "WriteResult",
    "amaintain",
    "default_data_dir",
    "default_index",
    "maintain",
    "make_store",
]
