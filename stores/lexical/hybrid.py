"""Hybrid search as a store operation: lexical and dense candidates of one namespace, fused.

LangGraph's `SearchOp` ranks by one score. Hybrid recall needs two channels, the query's cosine
similarity to an item (dense) and its BM25 score (lexical), fused into one relevance
(`engram.stores.lexical.fusion`), while the caller can still see, and gate on, the similarity. A store
that can answer it sets `supports_hybrid = True` and accepts `HybridSearchOp` in
`batch`/`abatch` (`ChromaStore` does, with its lexical index); `LongTermMemory` falls back to a
plain `SearchOp` on other stores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

from langgraph.store.base import BaseStore, SearchItem

from engram.stores.lexical.fusion import DEFAULT_LEXICAL_WEIGHT, FusionMethod


class HybridSearchOp(NamedTuple):
    """The `limit` items of exactly `namespace` that best match `query`, by fused relevance.

    Candidates are the `depth` items most similar to the query and the `depth` items with the
    best BM25 scores, each passing `filter` (the same conditions as `SearchOp`). The result is a
    list of `HybridHit`, best first.
    """

    namespace: tuple[str, ...]
    query: str
    filter: dict[str, Any] | None = None
    limit: int = 10
    depth: int = 50
    """Candidates taken from each channel before fusing."""
    fusion: FusionMethod = "relative"
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT
    """The lexical channel's share of the fused relevance (1: lexical only, 0: dense only)."""


@dataclass(frozen=True)
class HybridHit:
    """One result of a `HybridSearchOp`."""

    item: SearchItem
    """The item; its `score` is the fused relevance."""
    similarity: float
    """Cosine similarity of the query to the item's best vector."""
    lexical: float | None
    """BM25 score of the item for the query; None when the lexical channel did not return it."""

    @property
    def relevance(self) -> float:
        """The fused relevance (the item's score)."""
        return float(self.item.score or 0.0)


def supports_hybrid(store: BaseStore) -> bool:
    """Whether `store.batch` accepts `HybridSearchOp`."""
    return bool(getattr(store, "supports_hybrid", False))
