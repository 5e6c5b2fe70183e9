"""The Chroma adapter: `ChromaStore`, a LangGraph `BaseStore` over a Chroma collection.

Rooms: `store` (the `BaseStore`: batch/abatch, TTL), `plan` (ops to a pure write/read plan),
`write` (records and extra vectors), `search` (dense and hybrid search), `metadata` (the record
layout: namespace labels, values, item facts, filters), `upgrade` (older layouts on open) and
`mirror` (the BM25 index that mirrors the collection's texts).
"""

from engram.stores.chroma.mirror import LexicalIndexError
from engram.stores.chroma.store import ChromaStore, default_index, make_store

__all__ = ["ChromaStore", "LexicalIndexError", "default_index", "make_store"]
