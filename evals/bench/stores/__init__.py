"""Benchmarks of engram's stores (`python -m engram.evals.bench stores`): embeddings and the store,
each against its raw chromadb and langgraph counterparts, measured side by side in one run."""

from engram.evals.bench.stores.run import code_state, main

__all__ = ["code_state", "main"]
