"""How `ChromaStore` searches by vector (`nearest`) and answers a `HybridSearchOp`.

`nearest` asks Chroma for distances only (reading metadata is what a Chroma query spends most
on). A filtered Chroma query costs as much as the records it filters, so when the lexical
mirror can list the namespace's items and no value filter is asked for, their count decides
how it asks:

- up to `EXACT_BELOW` items: their vectors are read and compared here;
- a namespace holding `BROAD_SHARE` of the collection or more (one user with most of an app's
  items): Chroma's unfiltered query, for enough neighbours that `n` of them are likely the
  namespace's own, which are kept; when too few are, one of the two below;
- up to `MAX_ID_FILTER` items: a query naming their ids, several times faster than a
  metadata filter;
- otherwise a metadata filter.

Ids and a metadata filter are never combined: Chroma 1.5 then takes seconds per query.

A hybrid search:

1. the dense channel: the `depth` nearest items of the namespace (`nearest`);
2. the lexical channel: the mirror's `depth` best BM25 documents;
3. candidates only the lexical channel found get their vectors read back, so that every
   candidate has its similarity to the query (its best vector);
4. both channels are fused (`engram.stores.lexical.fusion`); the best items are read whole and checked
   against the filter, in rank order, until `limit` of them pass; if too few pass (most
   candidates are, say, forgotten), both channels are asked for more.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import chromadb.errors
import numpy as np
from chromadb.api.models.Collection import Collection
from langgraph.store.base import Item, SearchItem

from engram.stores.chroma import metadata as md
from engram.stores.chroma.mirror import LexicalMirror
from engram.stores.lexical.fusion import fuse
from engram.stores.lexical.hybrid import HybridHit, HybridSearchOp

EXACT_BELOW = 1000
"""A namespace of at most this many vectors is searched exactly, its vectors read and compared
here: Chroma's filtered query costs about as much as the whole collection's size, reading a
few hundred vectors a few milliseconds."""
BROAD_SHARE = 0.05
"""A namespace with at least this share of the collection's records is searched unfiltered."""
MAX_ID_FILTER = 20_000
"""Above this many ids, a Chroma query filters by namespace metadata instead of by id list
(Chroma looks ids up with one SQL variable each, and SQLite allows 32,766)."""

FetchItems = Callable[[Sequence[str], float], dict[str, tuple[Item, dict[str, Any]]]]


def nearest(
    collection: Collection,
    mirror: LexicalMirror | None,
    prefix: tuple[str, ...],
    query_vector: list[float],
    n: int,
    *,
    exact: bool,
    where: list[dict[str, Any]],
    now: float,
    read: bool = False,
) -> tuple[dict[str, float], bool, dict[str, dict[str, Any]]]:
    """Similarity of the query to the items of the `n` nearest records under `prefix` (exactly
    `prefix` with `exact`) that pass the `where` clauses; an item scores by its best vector.

    Returns the similarities, whether the records ran out before `n`, and with `read` the
    metadata of each item whose own record came back (one round trip instead of
    a query and a get: worth it for a few results).
    """
    include = ["distances", "metadatas"] if read else ["distances"]
    ids = None
    if mirror is not None and not where:  # Chroma 1.5 takes seconds for ids and a where
        ids = mirror.candidate_ids(prefix, exact=exact, now=now)  # together: never both
    scope = md.namespace_clauses(prefix) if exact else md.prefix_clauses(prefix)
    if ids is not None and len(ids) > EXACT_BELOW:
        assert mirror is not None
        broad = _broad_nearest(collection, query_vector, ids, n, include, mirror.collection_size())
        if broad is not None:
            return _answer(broad, now, read, exhausted=False)
        if len(ids) > MAX_ID_FILTER:
            ids = None
    if ids is None:
        res = collection.query(
            query_embeddings=[query_vector],
            n_results=n,
            where=md.combine(scope + where),
            include=include,
        )
    elif not ids:
        return {}, True, {}
    elif len(ids) <= EXACT_BELOW:  # a few vectors: compared here, whatever the collection holds
        res = _exact_nearest(collection, query_vector, ids, n, include)
        present = set(res["ids"][0])
        if len(present) < min(n, len(ids)):  # an id of the index is not in Chroma
            mirror.forget_ghosts([i for i in ids if i not in present])
        return _answer(res, now, read, exhausted=len(ids) <= n)
    else:
        try:
            res = _query_ids(collection, query_vector, ids, n, include)
        except chromadb.errors.InternalError as exc:  # an id of the index is not in Chroma
            if "finding id" not in str(exc):
                raise
            present = set(collection.get(ids=ids, include=[])["ids"])
            mirror.forget_ghosts([i for i in ids if i not in present])
            ids = [i for i in ids if i in present]
            if not ids:
                return {}, True, {}
            res = _query_ids(collection, query_vector, ids, n, include)
    returned = len(res["ids"][0])
    exhausted = returned < n
    if exhausted:  # HNSW answers short when many vectors are equal: count before believing it
        if ids is None:
            ids = collection.get(where=md.combine(scope + where), include=[])["ids"]
        exhausted = len(ids) <= n
        if len(ids) > returned:
            res = _exact_nearest(collection, query_vector, ids, n, include)
    return _answer(res, now, read, exhausted=exhausted)


def _answer(
    res: dict[str, Any], now: float, read: bool, *, exhausted: bool
) -> tuple[dict[str, float], bool, dict[str, dict[str, Any]]]:
    """`nearest`'s answer from a Chroma query's (or `_exact_nearest`'s)."""
    similarity: dict[str, float] = {}
    for record_id, distance in zip(res["ids"][0], res["distances"][0]):
        item_id = md.record_owner(record_id)
        similarity[item_id] = max(1.0 - float(distance), similarity.get(item_id, -2.0))
    records = (
        {
            record_id: meta
            for record_id, meta in zip(res["ids"][0], res["metadatas"][0])
            if md.ITEM_ID not in meta and not md.expired(meta, now)
        }
        if read
        else {}
    )
    return similarity, exhausted, records


def hybrid_search(
    op: HybridSearchOp,
    query_vector: list[float],
    *,
    collection: Collection,
    mirror: LexicalMirror,
    fetch_items: FetchItems,
    now: float,
) -> list[HybridHit]:
    """The `op.limit` best items of `op.namespace` for `op.query`, best first.

    When the filter rejects so many candidates that fewer than `limit` pass, both channels are
    asked again for four times as many, until they run out.
    """
    depth = op.depth
    while True:
        similarity, exhausted, _ = nearest(
            collection, mirror, op.namespace, query_vector, depth, exact=True, where=[], now=now
        )
        mirror.ensure_fresh(op.namespace, now)  # done by `nearest` unless it used a filter
        lexical = dict(mirror.search(op.namespace, op.query, depth))
        exhausted = exhausted and len(lexical) < depth
        if others := [i for i in lexical if i not in similarity]:
            extras = mirror.has_extras(mirror.scope(op.namespace))
            found = _similarities(others, query_vector, collection, with_extras=extras)
            if ghosts := [i for i in others if i not in found]:
                mirror.forget_ghosts(ghosts)
                lexical = {i: score for i, score in lexical.items() if i not in ghosts}
            similarity.update(found)
        ranked = fuse(
            sorted(lexical.items(), key=lambda pair: -pair[1]),
            sorted(similarity.items(), key=lambda pair: -pair[1]),
            method=op.fusion,
            lexical_weight=op.lexical_weight,
        )
        hits = _winners(op, ranked, similarity, lexical, fetch_items, now)
        if len(hits) >= op.limit or exhausted:
            return hits
        depth *= 4


def _broad_nearest(
    collection: Collection,
    query_vector: list[float],
    ids: list[str],
    n: int,
    include: list[Any],
    size: int,
) -> dict[str, Any] | None:
    """The `n` records of `ids` nearest to the query, from an unfiltered query for enough of the
    collection's nearest that `n` of them are likely among `ids`; None when the namespace is too
    small a share of the collection for that, or too few came back."""
    share = len(ids) / max(size, len(ids))
    if share < BROAD_SHARE:
        return None
    res = collection.query(
        query_embeddings=[query_vector],
        n_results=min(size, math.ceil(2 * n / share) + 10),
        include=include,
    )
    members = set(ids)
    keep = [k for k, record_id in enumerate(res["ids"][0]) if record_id in members][:n]
    if len(keep) < n:
        return None
    return {
        field: [[res[field][0][k] for k in keep]] if res.get(field) else None
        for field in ("ids", "distances", "metadatas")
    }


def _query_ids(
    collection: Collection, query_vector: list[float], ids: list[str], n: int, include: list[Any]
) -> Any:
    return collection.query(
        query_embeddings=[query_vector], n_results=min(n, len(ids)), ids=ids, include=include
    )


def _exact_nearest(
    collection: Collection, query_vector: list[float], ids: list[str], n: int, include: list[Any]
) -> dict[str, Any]:
    """The `n` records of `ids` nearest to the query by brute force, shaped like a Chroma query
    answer: what HNSW fails to find among many equal vectors, found for sure."""
    got = collection.get(ids=ids, include=["embeddings", *[i for i in include if i != "distances"]])
    if not got["ids"]:
        return {"ids": [[]], "distances": [[]], "metadatas": [[]]}
    vectors = np.asarray(got["embeddings"], dtype=np.float64)
    query = np.asarray(query_vector, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1) * (np.linalg.norm(query) or 1.0)
    distances = 1.0 - (vectors @ query) / np.where(norms == 0, 1.0, norms)
    order = sorted(range(len(got["ids"])), key=lambda k: (distances[k], got["ids"][k]))[:n]
    metadatas = got.get("metadatas") or [None] * len(got["ids"])
    return {
        "ids": [[got["ids"][k] for k in order]],
        "distances": [[float(distances[k]) for k in order]],
        "metadatas": [[metadatas[k] for k in order]],
    }


def _similarities(
    item_ids: list[str], query_vector: list[float], collection: Collection, *, with_extras: bool
) -> dict[str, float]:
    """Cosine similarity of the query to each item's best vector, read back from Chroma (items
    Chroma does not have are left out); `with_extras` also reads the items' extra vectors."""
    records = list(item_ids)
    if with_extras:
        got = collection.get(ids=item_ids, include=["metadatas"])
        records += [
            md.extra_id(i, n)
            for i, meta in zip(got["ids"], got["metadatas"])
            if (record := md.record_of(meta)) is not None
            for n in range(1, record.extra_vectors + 1)
        ]
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
                hits.append(
                    HybridHit(
                        SearchItem(
                            item.namespace,
                            item.key,
                            item.value,
                            item.created_at,
                            item.updated_at,
                            relevance,
                        ),
                        similarity.get(item_id, 0.0),
                        lexical.get(item_id),
                    )
                )
        step *= 2
    return hits[: op.limit]
