"""engram.stores: the Chroma-backed LangGraph store, local embeddings, and long-term memory.

Rooms: `chroma/` (the `BaseStore` adapter), `lexical/` (BM25 index, fusion, hybrid search),
`memory/` (the long-term memory model and its policy), `maintenance/` (forgetting and
compression), `secrets/` (redaction), `working/` (a thread's offloaded tool results). Beside
them: `embeddings` (the local ONNX embedder), `namespaces` (where a user's data lives), `steps`
(the sync/async drivers of store steps) and `paths` (the default data folder).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram.stores.lazy import lazy_exports

if TYPE_CHECKING:
    from engram.stores.chroma import ChromaStore, default_index, make_store
    from engram.stores.embeddings import LocalEmbeddings
    from engram.stores.lexical import HybridHit, HybridSearchOp, LexicalIndex
    from engram.stores.maintenance import (
        MaintenanceReport,
        MaintenanceSettings,
        amaintain,
        maintain,
    )
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

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ChromaStore": "engram.stores.chroma",
        "default_index": "engram.stores.chroma",
        "make_store": "engram.stores.chroma",
        "LocalEmbeddings": "engram.stores.embeddings",
        "HybridHit": "engram.stores.lexical",
        "HybridSearchOp": "engram.stores.lexical",
        "LexicalIndex": "engram.stores.lexical",
        "MaintenanceReport": "engram.stores.maintenance",
        "MaintenanceSettings": "engram.stores.maintenance",
        "amaintain": "engram.stores.maintenance",
        "maintain": "engram.stores.maintenance",
        "LongTermMemory": "engram.stores.memory",
        "Memory": "engram.stores.memory",
        "MemoryCandidate": "engram.stores.memory",
        "RestoreResult": "engram.stores.memory",
        "ScoredMemory": "engram.stores.memory",
        "WriteResult": "engram.stores.memory",
        "default_data_dir": "engram.stores.paths",
    },
)
