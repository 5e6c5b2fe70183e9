"""Benchmarks of engram's stores (`python -m engram.stores.bench`): embeddings and the store,
each against its raw chromadb and langgraph counterparts, measured side by side in one run."""

from engram.stores.bench.run import code_state, main

__all__ = ["code_state", "main"]
