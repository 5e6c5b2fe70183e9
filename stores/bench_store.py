"""The ``store`` section of `engram.stores.bench`: ChromaStore vs raw chromadb vs InMemoryStore.

All three get the same items (a short text, a few fields, one 384-dimensional vector each) and the
same queries. Vectors are precomputed and served by a lookup "embedding", so the section measures
the stores, not a model. Raw chromadb is what a hand-written integration would do: one collection,
`upsert` with ids, embeddings, documents and metadatas; `query` with a namespace `where` and the
documents included. Batched puts are 500 items per call; searches ask for the top 10 of one
namespace. Each row is one measure at one size; the cost columns are ChromaStore's time relative
to the other contender's (above 1: ChromaStore is slower).
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from typing import Any

import chromadb
import numpy as np
from langchain_core.embeddings import Embeddings
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

from engram.stores.chroma import ChromaStore

Row = dict[str, Any]
DIMS = 384
PUT_BATCH = 500
QUERIES = 50


class LookupEmbeddings(Embeddings):
    """Returns precomputed vectors for known texts: embedding costs nothing in the benchmark."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]


def bench_store(sizes: tuple[int, ...] = (1_000, 10_000, 50_000), seed: int = 0) -> list[Row]:
    """Batched put throughput and search latency at each size, with ratios side by side."""
    rows: list[Row] = []
    for size in sizes:
        data = _dataset(size, seed)
        with tempfile.TemporaryDirectory() as tmp:
            contenders = _contenders(tmp, data["lookup"])
            put_seconds = _put_in_turns(contenders, data)
            search_ms = _search_in_turns(contenders, data)
        put_rate = {name: size / seconds for name, seconds in put_seconds.items()}
        rows.append(_row(size, "batched put, items/s", put_rate, higher_is_better=True))
        rows.append(_row(size, "search top-10, p50 ms", search_ms, higher_is_better=False))
    return rows


def _row(size: int, measure: str, values: dict[str, float], *, higher_is_better: bool) -> Row:
    """One measure at one size; `x_*` columns are ChromaStore's cost relative to the other
    contender (above 1: ChromaStore is slower)."""
    cost = (lambda other: values[other] / values["chroma_store"]) if higher_is_better else (
        lambda other: values["chroma_store"] / values[other]
    )
    return {
        "items": size,
        "measure": measure,
        **{name: round(value, 2) for name, value in values.items()},
        "chroma_store_cost_vs_raw": round(cost("raw_chromadb"), 3),
        "chroma_store_cost_vs_in_memory": round(cost("in_memory"), 3),
    }


def _dataset(size: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(size + QUERIES, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [f"memory {i}: the user mentioned topic {i % 97} on day {i % 31}" for i in range(size)]
    queries = [f"query {i}" for i in range(QUERIES)]
    lookup = dict(zip(texts + queries, vectors.tolist()))
    users = [f"user{i % 10}" for i in range(size)]
    return {"texts": texts, "queries": queries, "lookup": lookup, "users": users}


def _contenders(tmp: str, lookup: dict[str, list[float]]) -> dict[str, dict[str, Callable]]:
    index = {"dims": DIMS, "embed": LookupEmbeddings(lookup), "fields": ["text"]}
    chroma_store = ChromaStore(path=f"{tmp}/store", collection="bench", index=index)
    raw = chromadb.PersistentClient(path=f"{tmp}/raw").get_or_create_collection(
        "bench", embedding_function=None, metadata={"hnsw:space": "cosine"}
    )
    memory = InMemoryStore(index=index)

    def store_put(store):
        def put(data: dict[str, Any], start: int) -> None:
            texts = data["texts"][start : start + PUT_BATCH]
            users = data["users"][start : start + PUT_BATCH]
            store.batch(
                [
                    PutOp(("memories", user), str(start + i), {"text": text, "importance": 0.5})
                    for i, (text, user) in enumerate(zip(texts, users))
                ]
            )

        return put

    def raw_put(data: dict[str, Any], start: int) -> None:
        texts = data["texts"][start : start + PUT_BATCH]
        users = data["users"][start : start + PUT_BATCH]
        raw.upsert(
            ids=[str(start + i) for i in range(len(texts))],
            embeddings=[lookup[t] for t in texts],
            documents=[json.dumps({"text": t, "importance": 0.5}) for t in texts],
            metadatas=[{"namespace": f"memories/{u}", "importance": 0.5} for u in users],
        )

    def store_search(store):
        return lambda q: store.search(("memories", "user3"), query=q, limit=10)

    def raw_search(q: str) -> Any:
        return raw.query(
            query_embeddings=[lookup[q]],
            n_results=10,
            where={"namespace": "memories/user3"},
            include=["documents", "metadatas", "distances"],
        )

    return {
        "chroma_store": {"put": store_put(chroma_store), "search": store_search(chroma_store)},
        "raw_chromadb": {"put": raw_put, "search": raw_search},
        "in_memory": {"put": store_put(memory), "search": store_search(memory)},
    }


def _put_in_turns(contenders: dict[str, dict[str, Callable]], data: dict[str, Any]) -> dict[str, float]:
    """Total seconds to put every item, in batches; the contenders take turns batch by batch."""
    totals = {name: 0.0 for name in contenders}
    for start in range(0, len(data["texts"]), PUT_BATCH):
        for name, c in contenders.items():
            totals[name] += _timed(lambda: c["put"](data, start))
    return totals


def _search_in_turns(contenders: dict[str, dict[str, Callable]], data: dict[str, Any]) -> dict[str, float]:
    """p50 search latency in ms; the contenders take turns query by query (fair under noise)."""
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for name, c in contenders.items():
        c["search"](data["queries"][0])  # warm-up
    for q in data["queries"]:
        for name, c in contenders.items():
            samples[name].append(_timed(lambda: c["search"](q)) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start
