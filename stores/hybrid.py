"""Hybrid search as a store operation: dense and lexical candidates of one namespace, both scored.

LangGraph's `SearchOp` ranks by one score. Hybrid recall needs two: the query's cosine similarity
to an item (the dense channel) and its BM25 score (the lexical channel), so that the caller can
fuse them (`engram.stores.fusion`) and still gate on similarity. A store that can answer it sets
`supports_hybrid = True` and accepts `HybridSearchOp` in `batch`/`abatch` (`ChromaStore` does, with
its `LexicalIndex`); `LongTermMemory` falls back to a plain `SearchOp` on other stores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from langgraph.store.base import BaseStore, SearchItem


class HybridSearchOp(NamedTuple):
    """Candidates for `query` in exactly `namespace`, from both channels.

    The result is a list of `HybridHit`: the union of the `depth` items most similar to the query
    and the `depth` items with the best BM25 scores, each passing `filter` (the same conditions
    as `SearchOp`), in no particular order. Every hit has its cosine similarity, also the ones
    only the lexical channel found.
    """

    namespace: tuple[str, ...]
    query: str
    filter: dict[str, Any] | None = None
    depth: int = 50
    """Candidates taken from each channel."""


@dataclass(frozen=True)
class HybridHit:
    """One candidate of a `HybridSearchOp`."""

    item: SearchItem
    """The item; its `score` is the query's cosine similarity (best vector of the item)."""
    lexical: float | None
    """BM25 score of the item for the query; None when the lexical channel did not return it."""

    @property
    def similarity(self) -> float:
        """The dense channel's score (0 for an item without vectors)."""
        return float(self.item.score or 0.0)


def supports_hybrid(store: BaseStore) -> bool:
    """Whether `store.batch` accepts `HybridSearchOp`."""
    return bool(getattr(store, "supports_hybrid", False))
