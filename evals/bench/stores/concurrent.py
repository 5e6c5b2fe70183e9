"""Many concurrent store calls: `ChromaStore` (coalesced), each call on its own, `InMemoryStore`.

The load is the one langgraph's store suites put on their stores: rounds of put, get,
list_namespaces, search, put again and delete, over two namespaces, all in flight at once, as
asyncio tasks on one event loop (``async``) or from a pool of 10 threads (``threads``). The
contenders, measured in turns on the same load:

- ``chroma_store``: `ChromaStore` as shipped (concurrent calls coalesced into few batches);
- ``one_by_one``: the same store sending each call to Chroma on its own (its uncoalesced
  batch, on a worker thread for async callers): what `ChromaStore` did before coalescing;
- ``in_memory``: langgraph's `InMemoryStore`, the reference; from threads behind one lock, since
  it is not thread-safe (a search iterating a namespace while another thread's put adds to it
  fails with "dictionary changed size during iteration").

Each runs on an ephemeral (in-memory) and a persistent (a folder) Chroma client; rows give the
calls per second and the ratios.
"""

from __future__ import annotations

import asyncio
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import chromadb
from langgraph.store.base import BaseStore, Result
from langgraph.store.memory import InMemoryStore

from engram.stores.chroma.store import ChromaStore

Row = dict[str, Any]
CALLS_PER_ROUND = 6
THREADS = 10


class OneByOne(ChromaStore):
    """`ChromaStore` without coalescing: each call is its own Chroma batch."""

    def batch(self, ops: Any) -> list[Result]:
        return self._run_batch(list(ops))

    async def abatch(self, ops: Any) -> list[Result]:
        return await asyncio.to_thread(self._run_batch, list(ops), True)


class LockedInMemoryStore(InMemoryStore):
    """`InMemoryStore` whose calls from several threads take turns (it is not thread-safe)."""

    def __init__(self) -> None:
        super().__init__()
        self._turn = threading.Lock()

    def batch(self, ops: Any) -> list[Result]:
        with self._turn:
            return super().batch(ops)


def bench_concurrent(calls: int, repeats: int = 1) -> list[Row]:
    """Rows of calls per second, by client kind and caller kind, for `calls` calls each."""
    rounds = max(1, calls // CALLS_PER_ROUND)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="engram-bench-concurrent-") as tmp:
        for client_kind in ("ephemeral", "persistent"):
            for callers in ("async", "threads"):
                best: dict[str, float] = {}
                for turn in range(repeats):
                    order = ["chroma_store", "one_by_one", "in_memory"]
                    order = order[turn % 3 :] + order[: turn % 3]
                    for name in order:
                        store = _store(name, client_kind, tmp, callers)
                        run = _async_load if callers == "async" else _threaded_load
                        seconds = run(store, rounds)
                        if isinstance(store, ChromaStore):
                            store.close()
                        best[name] = min(best.get(name, float("inf")), seconds)
                total = rounds * CALLS_PER_ROUND
                rows.append(
                    {
                        "client": client_kind,
                        "callers": callers,
                        "calls": total,
                        **{f"{name}_calls_per_s": round(total / s) for name, s in best.items()},
                        "x_vs_one_by_one": round(best["one_by_one"] / best["chroma_store"], 1),
                        "x_vs_in_memory": round(best["chroma_store"] / best["in_memory"], 2),
                    }
                )
    return rows


def _store(name: str, client_kind: str, tmp: str, callers: str) -> BaseStore:
    if name == "in_memory":
        return LockedInMemoryStore() if callers == "threads" else InMemoryStore()
    client = (
        chromadb.PersistentClient(path=f"{tmp}/{uuid.uuid4().hex}")
        if client_kind == "persistent"
        else chromadb.EphemeralClient()
    )
    cls = ChromaStore if name == "chroma_store" else OneByOne
    return cls(client, collection=f"bench-{uuid.uuid4().hex}")


def _round_calls(store: BaseStore, r: int, i: int, asynchronous: bool) -> list[Callable[[], Any]]:
    """The six calls of one round, as zero-argument callables (coroutine functions if async)."""
    ns = ("test", "foo", "bar", "baz", str(r % 2))
    p = "a" if asynchronous else ""
    put: Callable[..., Any] = getattr(store, p + "put")
    get: Callable[..., Any] = getattr(store, p + "get")
    listing: Callable[..., Any] = getattr(store, p + "list_namespaces")
    search: Callable[..., Any] = getattr(store, p + "search")
    delete: Callable[..., Any] = getattr(store, p + "delete")
    value = {"foo": f"bar{i}"}
    return [
        lambda: put(ns, f"key{i}", value),
        lambda: get(ns, f"key{i}"),
        lambda: listing(prefix=None, max_depth=r % 10 + 1),
        lambda: search(("test",)),
        lambda: put(ns, f"key{i}", value),
        lambda: delete(ns, f"key{i}"),
    ]


def _all_calls(store: BaseStore, rounds: int, asynchronous: bool) -> list[Callable[[], Any]]:
    per_group = 100  # keys per round group, as in langgraph's suites
    return [
        call
        for n in range(rounds)
        for call in _round_calls(store, n // per_group, n % per_group, asynchronous)
    ]


def _async_load(store: BaseStore, rounds: int) -> float:
    calls: list[Callable[[], Awaitable[Any]]] = _all_calls(store, rounds, asynchronous=True)

    async def main() -> float:
        start = time.perf_counter()
        await asyncio.gather(*(call() for call in calls))
        return time.perf_counter() - start

    return asyncio.run(main())


def _threaded_load(store: BaseStore, rounds: int) -> float:
    calls = _all_calls(store, rounds, asynchronous=False)
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        for future in [pool.submit(call) for call in calls]:
            future.result()
    return time.perf_counter() - start
