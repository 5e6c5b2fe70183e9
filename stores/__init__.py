"""engram.stores: the Chroma-backed LangGraph store, local embeddings, and long-term memory.

Rooms: `chroma/` (the `BaseStore` adapter), `lexical/` (BM25 index, fusion, hybrid search),
`memory/` (the long-term memory model and its policy), `maintenance/` (forgetting and
compression), `bench/` (benchmarks). Beside them: `embeddings` (the local ONNX embedder),
`secrets` (redaction), `namespaces` (where a user's data lives), `steps` (the sync/async drivers of
store steps) and `paths` (the default data folder).
"""

from engram.stores.chroma import ChromaStore, default_index, make_store
from engram.stores.embeddings import LocalEmbeddings
from engram.stores.lexical import HybridHit, HybridSearchOp, LexicalIndex
from engram.stores.maintenance import MaintenanceReport, MaintenanceSettings, amaintain, maintain
from engram.stores.memory import (
    LongTermMemory,
    Memory,
    MemoryCandidate,
    RestoreResult,
    ScoredMemory,
    WriteResult,
)
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
