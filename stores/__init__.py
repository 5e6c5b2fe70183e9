"""engram.stores: the Chroma-backed LangGraph store, local embeddings, and long-term memory."""

from engram.stores.chroma import ChromaStore, make_store
from engram.stores.embeddings import LocalEmbeddings
from engram.stores.memories import LongTermMemory
from engram.stores.memory_types import Memory, MemoryCandidate, ScoredMemory, WriteResult
from engram.stores.paths import default_data_dir

__all__ = [
    "ChromaStore",
    "LocalEmbeddings",
    "LongTermMemory",
    "Memory",
    "MemoryCandidate",
    "ScoredMemory",
    "WriteResult",
    "default_data_dir",
    "make_store",
]
