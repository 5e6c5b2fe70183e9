"""How `ChromaStore` answers a `HybridSearchOp`: both channels, fused, then only the winners read.

1. The dense channel asks Chroma for the `depth` nearest of the namespace's items, naming their
   ids (from the lexical mirror) instead of a metadata filter, which costs Chroma several times
   more, and asking for distances only (reading metadata is what a Chroma query spends most on).
2. The lexical channel asks the mirror's BM25 index for its `depth` best documents.
3. Candidates only the lexical channel found get their vectors read back, so that every
   candidate has its similarity to the query. The dense channel scores an item by its first
   vector (the first index field), which is all `LongTermMemory` writes.
4. Both channels are fused (`engram.stores.fusion`); the best items are read whole and checked
   against the filter, in rank order, until `limit` of them pass.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import chromadb.errors
import numpy as np
from chromadb.api.models.Collection import Collection
from langgraph.store.base import Item, SearchItem

from engram.stores import chroma_metadata as md
from engram.stores.chroma_lexical import LexicalMirror
from engram.stores.fusion import fuse
from engram.stores.hybrid import HybridHit, HybridSearchOp

FetchItems = Callable[[Sequence[str], float], dict[str, tuple[Item, dict[str, Any]]]]


def hybrid_search(
    op: HybridSearchOp,
    query_vector: list[float],
    *,
    collection: Collection,
    mirror: LexicalMirror,
    fetch_items: FetchItems,
    now: float,
) -> list[HybridHit]:
    """The `op.limit` best items of `op.namespace` for `op.query`, best first."""
    mirror.ensure_fresh(op.namespace, now)
    ids = mirror.item_ids(op.namespace)
    if not ids:
        return []
    try:
        similarity = _nearest(query_vector, ids, op.depth, collection)
    except chromadb.errors.InternalError as exc:  # an id of the index is not in Chroma
        if "finding id" not in str(exc):
            raise
        present = set(collection.get(ids=ids, include=[])["ids"])
        mirror.forget_ghosts(op.namespace, [i for i in ids if i not in present])
        ids = [i for i in ids if i in present]
        similarity = _nearest(query_vector, ids, op.depth, collection) if ids else {}
    lexical = dict(mirror.search(op.namespace, op.query, op.depth))
    if others := [i for i in lexical if i not in similarity]:
        found = _similarities(others, query_vector, collection)
        if ghosts := [i for i in others if i not in found]:
            mirror.forget_ghosts(op.namespace, ghosts)
            lexical = {i: score for i, score in lexical.items() if i not in ghosts}
        similarity.update(found)
    ranked = fuse(
        sorted(lexical.items(), key=lambda pair: -pair[1]),
        sorted(similarity.items(), key=lambda pair: -pair[1]),
        method=op.fusion,
        lexical_weight=op.lexical_weight,
    )
    return _winners(op, ranked, similarity, lexical, fetch_items, now)


def _nearest(
    query_vector: list[float], ids: list[str], depth: int, collection: Collection
) -> dict[str, float]:
    """Cosine similarity of the query to the `depth` nearest of the items `ids`."""
    res = collection.query(
        query_embeddings=[query_vector], n_results=min(depth, len(ids)), ids=ids,
        include=["distances"],
    )
    return {i: 1.0 - float(d) for i, d in zip(res["ids"][0], res["distances"][0])}


def _similarities(
    item_ids: list[str], query_vector: list[float], collection: Collection
) -> dict[str, float]:
    """Cosine similarity of the query to each item's first vector, read back from Chroma
    (items Chroma does not have are left out)."""
    query = np.asarray(query_vector, dtype=np.float64)
    query /= np.linalg.norm(query) or 1.0
    got = collection.get(ids=item_ids, include=["embeddings"])
    return {
        item_id: float(np.asarray(v, dtype=np.float64) @ query / (np.linalg.norm(v) or 1.0))
        for item_id, v in zip(got["ids"], got["embeddings"])
    }


def _winners(
    op: HybridSearchOp,
    ranked: list[tuple[str, float]],
    similarity: dict[str, float],
    lexical: dict[str, float],
    fetch_items: FetchItems,
    now: float,
) -> list[HybridHit]:
    """Read the best-ranked items whole, keep those the filter accepts, up to `limit`."""
    hits: list[HybridHit] = []
    position, step = 0, max(op.limit, 8)
    while position < len(ranked) and len(hits) < op.limit:
        chunk = ranked[position : position + step]
        position += len(chunk)
        found = fetch_items([item_id for item_id, _ in chunk], now)
        for item_id, relevance in chunk:
            if item_id in found and md.matches_filter(found[item_id][0].value, op.filter):
                item = found[item_id][0]
                hits.append(HybridHit(
                    SearchItem(item.namespace, item.key, item.value, item.created_at,
                               item.updated_at, relevance),
                    similarity.get(item_id, 0.0),
                    lexical.get(item_id),
                ))
        step *= 2
    return hits[: op.limit]
