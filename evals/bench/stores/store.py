"""The ``store`` section of `engram.evals.bench.stores`: ChromaStore vs raw chromadb vs InMemoryStore.

All contenders get the same items (a short text, a few fields, one 384-dimensional vector each)
and the same queries. Vectors are precomputed and served by a lookup "embedding", so the section
measures the stores, not a model. Raw chromadb is what a hand-written integration would do: one
`PersistentClient` collection, `upsert` with ids, embeddings, documents (the value as JSON) and
metadatas (namespace, root label, one field); `query` with a `where` on the namespace and the
documents and metadatas included. `ChromaStore` is built as an app builds it (a
`PersistentClient` folder and an index config), so whatever it does on a put or a search
(reading `created_at`, filterable metadata, a lexical mirror, ...) counts as its overhead.

Two more contenders show where the differences come from. `ChromaStore(lexical=False)` is the
same store without its BM25 mirror (what `HybridSearchOp` needs and a plain `BaseStore` user
does not). Raw chromadb without documents keeps the value in a metadata field instead of the
document, as `ChromaStore` does (Chroma builds a trigram full-text index of every document, which
neither uses), so `x_vs_raw_no_document` is the cost of engram's own work alone.

Measures, at each size:

- batched put: 500 items per call until the size is reached. Small sizes are filled several
  times into fresh collections so that every size has at least `MIN_PUT_BATCHES` batches;
- search top-10 in one user's namespace (a tenth of the items), `NAMESPACE_QUERIES` queries;
- search top-10 across every user (namespace prefix `("memories",)`), `GLOBAL_QUERIES` queries.

The contenders take turns call by call (the order rotates), each call timed with the garbage
collector off, in wall-clock time and in this process's CPU time. Ratios are medians of paired
ratios (ChromaStore's time over the other's for the same batch or query, measured back to back),
so load from other processes, which hits neighbours alike, mostly cancels out. Each row also
says how many of the exact top 10 (InMemoryStore's) each Chroma contender returned, to show that
the Chroma contenders do the same search.
"""

from __future__ import annotations

import gc
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import chromadb
import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from engram.stores.chroma.store import ChromaStore

Row = dict[str, Any]
DIMS = 384
PUT_BATCH = 500
MIN_PUT_BATCHES = 10
NAMESPACE_QUERIES = 60
GLOBAL_QUERIES = 15
USERS = 10
CONTENDERS = (
    "chroma_store",
    "chroma_store_no_bm25",
    "raw_chromadb",
    "raw_no_document",
    "in_memory",
)
CHROMA_CONTENDERS = CONTENDERS[:4]


class LookupEmbeddings(Embeddings):
    """Returns precomputed vectors for known texts: embedding costs nothing in the benchmark."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]


@dataclass
class Samples:
    """Wall and CPU seconds per contender, one entry per call; calls of a round share an index."""

    wall: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CONTENDERS})
    cpu: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CONTENDERS})
    overlap: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CONTENDERS})

    def paired_ratio(self, other: str, clock: str = "wall", of: str = "chroma_store") -> float:
        """Median over rounds of `of`'s time divided by `other`'s."""
        times = self.wall if clock == "wall" else self.cpu
        pairs = zip(times[of], times[other], strict=True)
        return statistics.median(a / b for a, b in pairs if b > 0)


def bench_store(
    sizes: tuple[int, ...] = (1_000, 10_000, 50_000),
    seed: int = 0,
    min_put_batches: int = MIN_PUT_BATCHES,
) -> list[Row]:
    """Batched put throughput and search latency at each size, with ratios side by side.

    Args:
        sizes: Item counts.
        seed: Seed of the generated vectors.
        min_put_batches: Sizes too small for this many batches are filled several times.
    """
    rows: list[Row] = []
    for size in sizes:
        data = _dataset(size, seed)
        fills = max(1, -(-min_put_batches * PUT_BATCH // size))
        put, in_namespace, everywhere = Samples(), Samples(), Samples()
        for fill in range(fills):
            with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
                contenders = _contenders(tmp, data["lookup"])
                _put_in_turns(contenders, data, put)
                if fill == fills - 1:
                    user = ("memories", "user3")
                    _search_in_turns(contenders, data, user, NAMESPACE_QUERIES, in_namespace)
                    _search_in_turns(contenders, data, ("memories",), GLOBAL_QUERIES, everywhere)
                for contender in contenders.values():
                    contender["close"]()
                del contenders
                gc.collect()
        rows.append(_put_row(size, fills, put))
        rows.append(_search_row(size, "search top-10 in 1 user's namespace", in_namespace))
        rows.append(_search_row(size, "search top-10 across all users", everywhere))
    return rows


def _put_row(size: int, fills: int, samples: Samples) -> Row:
    rate = {c: fills * size / sum(samples.wall[c]) for c in CONTENDERS}
    return {
        "items": size,
        "measure": "batched put, items/s",
        **{c: round(rate[c], 1) for c in CONTENDERS},
        "calls": len(samples.wall["chroma_store"]),
        **_ratios(samples),
    }


def _search_row(size: int, measure: str, samples: Samples) -> Row:
    return {
        "items": size,
        "measure": measure + ", p50 ms",
        **{c: round(statistics.median(samples.wall[c]) * 1000, 2) for c in CONTENDERS},
        "calls": len(samples.wall["chroma_store"]),
        **_ratios(samples),
        "exact_top10_found": "/".join(
            f"{statistics.mean(samples.overlap[c]):.1f}" for c in CHROMA_CONTENDERS
        ),
    }


def _ratios(samples: Samples) -> Row:
    """ChromaStore's cost relative to each other contender (above 1: ChromaStore is slower)."""
    return {
        "x_vs_raw": round(samples.paired_ratio("raw_chromadb"), 3),
        "x_vs_raw_cpu": round(samples.paired_ratio("raw_chromadb", "cpu"), 3),
        "x_vs_raw_no_document": round(samples.paired_ratio("raw_no_document"), 3),
        "x_vs_in_memory": round(samples.paired_ratio("in_memory"), 3),
        "no_bm25_x_vs_raw": round(
            samples.paired_ratio("raw_chromadb", of="chroma_store_no_bm25"), 3
        ),
    }


def _dataset(size: int, seed: int) -> dict[str, Any]:
    queries = max(NAMESPACE_QUERIES, GLOBAL_QUERIES)
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(size + queries, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [f"memory {i}: the user mentioned topic {i % 97} on day {i % 31}" for i in range(size)]
    query_texts = [f"query {i}" for i in range(queries)]
    lookup = dict(zip(texts + query_texts, vectors.tolist()))
    users = [f"user{i % USERS}" for i in range(size)]
    return {"texts": texts, "queries": query_texts, "lookup": lookup, "users": users}


def _contenders(tmp: str, lookup: dict[str, list[float]]) -> dict[str, dict[str, Callable]]:
    index = {"dims": DIMS, "embed": LookupEmbeddings(lookup), "fields": ["text"]}
    chroma_store = ChromaStore(path=f"{tmp}/store", collection="bench", index=index)
    no_bm25 = ChromaStore(path=f"{tmp}/plain", collection="bench", index=index, lexical=False)
    raw = chromadb.PersistentClient(path=f"{tmp}/raw").get_or_create_collection(
        "bench", embedding_function=None, metadata={"hnsw:space": "cosine"}
    )
    raw_no_document = chromadb.PersistentClient(path=f"{tmp}/raw_meta").get_or_create_collection(
        "bench", embedding_function=None, metadata={"hnsw:space": "cosine"}
    )
    contenders = {
        "chroma_store": _StoreContender(chroma_store, chroma_store.close),
        "chroma_store_no_bm25": _StoreContender(no_bm25, no_bm25.close),
        "raw_chromadb": _RawContender(raw, lookup, documents=True),
        "raw_no_document": _RawContender(raw_no_document, lookup, documents=False),
        "in_memory": _StoreContender(InMemoryStore(index=index), lambda: None),
    }
    return {
        name: {"put": c.put, "search": c.search, "close": c.close}
        for name, c in contenders.items()
    }


class _StoreContender:
    """A LangGraph store: puts through its batch, searches with a query."""

    def __init__(self, store: Any, close: Callable[[], None]) -> None:
        self.store = store
        self.close = close

    def put(self, data: dict[str, Any], start: int) -> None:
        texts = data["texts"][start : start + PUT_BATCH]
        users = data["users"][start : start + PUT_BATCH]
        self.store.batch(
            [
                PutOp(("memories", user), str(start + i), {"text": text, "importance": 0.5})
                for i, (text, user) in enumerate(zip(texts, users))
            ]
        )

    def search(self, prefix: tuple[str, ...], q: str) -> list[str]:
        return [item.key for item in self.store.search(prefix, query=q, limit=10)]


class _RawContender:
    """A hand-written Chroma integration: the value as the document (or, without documents, in
    the metadata), the namespace and its first label as metadata for filters."""

    def __init__(
        self, collection: chromadb.Collection, lookup: dict[str, list[float]], *, documents: bool
    ) -> None:
        self.collection = collection
        self.lookup = lookup
        self.documents = documents

    def put(self, data: dict[str, Any], start: int) -> None:
        texts = data["texts"][start : start + PUT_BATCH]
        users = data["users"][start : start + PUT_BATCH]
        values = [json.dumps({"text": t, "importance": 0.5}) for t in texts]
        metadatas = [
            {"namespace": f"memories/{u}", "root": "memories", "importance": 0.5} for u in users
        ]
        if not self.documents:
            metadatas = [{**meta, "value": v} for meta, v in zip(metadatas, values)]
        self.collection.upsert(
            ids=[str(start + i) for i in range(len(texts))],
            embeddings=[self.lookup[t] for t in texts],
            documents=values if self.documents else None,
            metadatas=metadatas,
        )

    def search(self, prefix: tuple[str, ...], q: str) -> list[str]:
        where = {"namespace": "/".join(prefix)} if len(prefix) > 1 else {"root": prefix[0]}
        found = self.collection.query(
            query_embeddings=[self.lookup[q]],
            n_results=10,
            where=where,
            include=["documents", "metadatas", "distances"]
            if self.documents
            else ["metadatas", "distances"],
        )
        return found["ids"][0]

    def close(self) -> None:
        """Chroma's client has nothing to close."""


def _put_in_turns(
    contenders: dict[str, dict[str, Callable]], data: dict[str, Any], samples: Samples
) -> None:
    """Every item in batches; the contenders take turns batch by batch."""
    for turn, start in enumerate(range(0, len(data["texts"]), PUT_BATCH)):
        for name in _rotated(turn):
            with _timed(samples, name):
                contenders[name]["put"](data, start)


def _search_in_turns(
    contenders: dict[str, dict[str, Callable]],
    data: dict[str, Any],
    prefix: tuple[str, ...],
    queries: int,
    samples: Samples,
) -> None:
    """Top-10 searches under `prefix`; the contenders take turns query by query."""
    for c in contenders.values():
        c["search"](prefix, data["queries"][-1])  # warm-up
    for turn, q in enumerate(data["queries"][:queries]):
        found: dict[str, list[str]] = {}
        for name in _rotated(turn):
            with _timed(samples, name):
                found[name] = contenders[name]["search"](prefix, q)
        exact = set(found["in_memory"])
        for name, keys in found.items():
            samples.overlap[name].append(len(exact & set(keys)))


def _rotated(turn: int) -> tuple[str, ...]:
    shift = turn % len(CONTENDERS)
    return CONTENDERS[shift:] + CONTENDERS[:shift]


@contextmanager
def _timed(samples: Samples, name: str) -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        samples.cpu[name].append(time.process_time() - cpu)
        samples.wall[name].append(time.perf_counter() - wall)
        if enabled:
            gc.enable()
