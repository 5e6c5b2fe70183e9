"""How `ChromaStore` answers a `HybridSearchOp`: both channels, fused, then only the winners read.

1. The dense channel asks Chroma for the `depth` nearest of the namespace's items, naming their
   ids (from the lexical mirror) instead of a metadata filter, which costs Chroma several times
   more; their metadata comes back with them and pre-filters (`may_match`).
2. The lexical channel asks the mirror's BM25 index for its `depth` best documents.
3. Candidates only the lexical channel found get their metadata read back (and pre-filtered),
   and their vectors, so that every candidate has its exact similarity (an item's best vector,
   extra vectors included).
4. Both channels are fused (`engram.stores.fusion`) and only the best items are read whole and
   checked exactly against the filter, until `limit` of them pass.
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
        similarity, metas = _nearest(op, query_vector, ids, collection, now)
    except chromadb.errors.InternalError as exc:  # an id of the index is not in Chroma
        if "finding id" not in str(exc):
            raise
        present = set(collection.get(ids=ids, include=[])["ids"])
        mirror.forget_ghosts(op.namespace, [i for i in ids if i not in present])
        ids = [i for i in ids if i in present]
        similarity, metas = _nearest(op, query_vector, ids, collection, now) if ids else ({}, {})
    lexical = dict(mirror.search(op.namespace, op.query, op.depth))
    others = [i for i in lexical if i not in metas]
    if others:
        found = collection.get(ids=others, include=["metadatas"])
        read = dict(zip(found["ids"], found["metadatas"]))
        if ghosts := [i for i in others if i not in read]:
            mirror.forget_ghosts(op.namespace, ghosts)
        for item_id, meta in read.items():
            if meta.get(md.INDEXED) and not md.expired(meta, now) and md.may_match(meta, op.filter):
                metas[item_id] = meta
    lexical = {i: score for i, score in lexical.items() if i in metas}
    similarity.update(_best_similarities(
        [i for i in metas if i not in similarity or metas[i].get(md.EXTRA_VECTORS)],
        query_vector, metas, collection,
    ))
    ranked = fuse(
        sorted(lexical.items(), key=lambda pair: -pair[1]),
        sorted(similarity.items(), key=lambda pair: -pair[1]),
        method=op.fusion,
        lexical_weight=op.lexical_weight,
    )
    return _winners(op, ranked, similarity, lexical, fetch_items, now)


def _nearest(
    op: HybridSearchOp,
    query_vector: list[float],
    ids: list[str],
    collection: Collection,
    now: float,
) -> tuple[dict[str, float], dict[str, dict[str, Any]]]:
    """Similarity and metadata of the `op.depth` nearest items that may pass the filter."""
    n = op.depth
    while True:
        res = collection.query(
            query_embeddings=[query_vector], n_results=min(n, len(ids)), ids=ids,
            include=["distances", "metadatas"],
        )
        similarity: dict[str, float] = {}
        metas: dict[str, dict[str, Any]] = {}
        for item_id, distance, meta in zip(res["ids"][0], res["distances"][0], res["metadatas"][0]):
            if meta.get(md.INDEXED) and not md.expired(meta, now) and md.may_match(meta, op.filter):
                similarity[item_id] = 1.0 - float(distance)
                metas[item_id] = meta
        if len(similarity) >= op.depth or n >= len(ids):
            return similarity, metas
        n *= 4


def _best_similarities(
    item_ids: list[str],
    query_vector: list[float],
    metas: dict[str, dict[str, Any]],
    collection: Collection,
) -> dict[str, float]:
    """Cosine similarity of the query to each item's best vector, read back from Chroma."""
    records = [
        record
        for item_id in item_ids
        for record in [
            item_id,
            *(md.extra_id(item_id, n) for n in range(1, int(metas[item_id].get(md.EXTRA_VECTORS, 0)) + 1)),
        ]
    ]
    if not records:
        return {}
    query = np.asarray(query_vector, dtype=np.float64)
    query /= np.linalg.norm(query) or 1.0
    got = collection.get(ids=records, include=["embeddings"])
    best: dict[str, float] = {}
    for record_id, vector in zip(got["ids"], got["embeddings"]):
        v = np.asarray(vector, dtype=np.float64)
        owner = md.record_owner(record_id)
        best[owner] = max(float(v @ query / (np.linalg.norm(v) or 1.0)), best.get(owner, -2.0))
    return best


def _winners(
    op: HybridSearchOp,
    ranked: list[tuple[str, float]],
    similarity: dict[str, float],
    lexical: dict[str, float],
    fetch_items: FetchItems,
    now: float,
) -> list[HybridHit]:
    """Read the best-ranked items whole, keep those the filter really accepts, up to `limit`."""
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
