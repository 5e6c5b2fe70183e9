"""The ``processes`` section of `engram.evals.bench.stores`: what sharing a data folder costs.

Every `ChromaStore` on a `PersistentClient` folder holds the folder's lock for each operation
and reloads its collection when another process wrote since its last one
(`engram.stores.chroma.process_lock`). Two measures, at each size:

- the lock's cost in one process: the same `ChromaStore` with its coordination and with it
  switched off (`Unshared`, today's behaviour before the lock), both on one folder each, taking
  turns call by call as the ``store`` section's contenders do; ratios are medians of paired
  ratios. Single puts (one item per call, as a consolidation writes), batched puts (500 items;
  small sizes are filled several times, as in the ``store`` section) and top-10 searches in one
  user's namespace;
- a reload: a second store on the same folder (standing in for another process; it has its own
  Chroma system once it reloaded) puts one item, then the first store searches. That search
  reopens the collection from disk first; the row gives its time next to the same search
  without a reload.
"""

from __future__ import annotations

import gc
import statistics
import tempfile
import time
from typing import Any

import numpy as np
from langgraph.store.base import PutOp

from engram.evals.bench.stores.store import (
    DIMS,
    MIN_PUT_BATCHES,
    PUT_BATCH,
    USERS,
    LookupEmbeddings,
)
from engram.stores.chroma import process_lock
from engram.stores.chroma.store import ChromaStore

Row = dict[str, Any]
SINGLE_PUTS = 60
SEARCHES = 60
RELOADS = 15


def bench_processes(sizes: tuple[int, ...] = (1_000, 10_000), seed: int = 0) -> list[Row]:
    """The lock's overhead and the cost of a reload at each size."""
    rows: list[Row] = []
    for size in sizes:
        data = _dataset(size + SINGLE_PUTS + RELOADS + SEARCHES, seed)
        fills = max(1, -(-MIN_PUT_BATCHES * PUT_BATCH // size))
        batched: dict[str, list[float]] = {"shared": [], "unshared": []}
        for fill in range(fills):  # small sizes are filled several times, into fresh folders
            with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
                stores = _pair(tmp, data)
                puts = [_batch_put(data, s) for s in range(0, size, PUT_BATCH)]
                for name, times in _in_turns(stores, puts).items():
                    batched[name] += times
                if fill == fills - 1:
                    singles = _in_turns(
                        stores, [_single_put(data, size + n) for n in range(SINGLE_PUTS)]
                    )
                    searches = _in_turns(stores, [_search(data, q) for q in range(SEARCHES)])
                    reload = _reload_row(tmp, data, size + SINGLE_PUTS)
                for store in stores.values():
                    store.close()
                del stores
                gc.collect()
        rows.append(_overhead_row(size + SINGLE_PUTS, "single put, p50 ms", singles))
        rows.append(_overhead_row(size, f"batched put ({PUT_BATCH} items), p50 ms", batched))
        rows.append(_overhead_row(size + SINGLE_PUTS, "search top-10, p50 ms", searches))
        rows.append(reload)
    return rows


def _pair(tmp: str, data: dict[str, Any]) -> dict[str, ChromaStore]:
    """The same store with its folder coordination and without (today's store before it)."""
    stores = {
        "shared": ChromaStore(path=f"{tmp}/shared", collection="bench", index=data["index"]),
        "unshared": ChromaStore(path=f"{tmp}/alone", collection="bench", index=data["index"]),
    }
    stores["unshared"]._folder = process_lock.Unshared()  # the baseline: no coordination
    return stores


def _reload_row(tmp: str, data: dict[str, Any], size: int) -> Row:
    reader = ChromaStore(path=f"{tmp}/shared", collection="bench", index=data["index"])
    other = ChromaStore(path=f"{tmp}/shared", collection="bench", index=data["index"])
    search = _search(data, 0)
    search(reader)  # warm-up
    after_write: list[float] = []
    steady: list[float] = []
    for n in range(RELOADS):
        _single_put(data, size + n)(other)
        after_write.append(_timed(search, reader))
        steady.append(_timed(search, reader))
    reader.close()
    other.close()
    after, plain = statistics.median(after_write), statistics.median(steady)
    return {
        "items": size,
        "measure": "search after another process's write (reload), p50 ms",
        "with": round(after * 1000, 2),
        "without": round(plain * 1000, 2),
        "calls": RELOADS,
        "ratio": round(after / plain, 3),
        "reload_ms": round((after - plain) * 1000, 2),
    }


def _overhead_row(size: int, measure: str, times: dict[str, list[float]]) -> Row:
    pairs = zip(times["shared"], times["unshared"], strict=True)
    return {
        "items": size,
        "measure": measure,
        "with": round(statistics.median(times["shared"]) * 1000, 3),
        "without": round(statistics.median(times["unshared"]) * 1000, 3),
        "calls": len(times["shared"]),
        "ratio": round(statistics.median(a / b for a, b in pairs if b > 0), 3),
    }


def _in_turns(stores: dict[str, ChromaStore], calls: list[Any]) -> dict[str, list[float]]:
    """Each call on each store, the order alternating, every call timed with gc off."""
    times: dict[str, list[float]] = {name: [] for name in stores}
    names = list(stores)
    for turn, call in enumerate(calls):
        for name in names[turn % 2 :] + names[: turn % 2]:
            times[name].append(_timed(call, stores[name]))
    return times


def _timed(call: Any, store: ChromaStore) -> float:
    enabled = gc.isenabled()
    gc.disable()
    start = time.perf_counter()
    try:
        call(store)
    finally:
        elapsed = time.perf_counter() - start
        if enabled:
            gc.enable()
    return elapsed


def _batch_put(data: dict[str, Any], start: int) -> Any:
    def put(store: ChromaStore) -> None:
        end = min(start + PUT_BATCH, len(data["texts"]))
        store.batch([_put_op(data, i) for i in range(start, end)])

    return put


def _single_put(data: dict[str, Any], i: int) -> Any:
    return lambda store: store.batch([_put_op(data, i)])


def _search(data: dict[str, Any], q: int) -> Any:
    return lambda store: store.search(("memories", "user3"), query=data["queries"][q], limit=10)


def _put_op(data: dict[str, Any], i: int) -> PutOp:
    return PutOp(("memories", f"user{i % USERS}"), str(i), {"text": data["texts"][i]})


def _dataset(count: int, seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count + SEARCHES, DIMS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    texts = [f"memory {i}: the user mentioned topic {i % 97} on day {i % 31}" for i in range(count)]
    queries = [f"query {i}" for i in range(SEARCHES)]
    lookup = LookupEmbeddings(dict(zip(texts + queries, vectors.tolist())))
    return {
        "texts": texts,
        "queries": queries,
        "index": {"dims": DIMS, "embed": lookup, "fields": ["text"]},
    }
