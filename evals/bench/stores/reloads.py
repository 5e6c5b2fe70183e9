"""The ``reloads`` section of `engram.evals.bench.stores`: the memory a reload keeps.

A `ChromaStore` on a `PersistentClient` folder reloads Chroma's state from disk when another
process wrote since its last operation (`engram.stores.chroma.process_lock`). At each size, a
store holding that many items searches right after a second store on the same folder (standing
in for another process) put one item, `--reloads` times; the row gives the growth of the
process's resident memory (RSS) and of its open files, per reload and in all, for two ways to
reload, side by side:

- ``restart``: engram's way: the client's Chroma system restarts in place, which frees the old
  state (vector index, SQLite connections, threads);
- ``new system``: the way engram reloaded before: a new Chroma system per reload, the old one
  left running behind the old client (kept for `close`, and in chromadb's cache of systems).

Each way and size runs in a fresh process (`python -m engram.evals.bench.stores.reloads SIZE
RELOADS WAY` prints one JSON row), so that one's memory does not count in the other's. RSS is
read after a garbage collection, before the first reload and after the last. What is left of
the restart's growth is glibc's allocator keeping freed memory in its per-thread arenas (each
Chroma system starts threads of its own): with `MALLOC_ARENA_MAX=2` it is flat.
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import types
from typing import Any

from engram.evals.bench.stores.processes import _dataset, _put_op, _search, _single_put
from engram.evals.bench.stores.store import PUT_BATCH

Row = dict[str, Any]
RELOADS = 30
WAYS = ("restart", "new system")


def bench_reloads(sizes: tuple[int, ...] = (1_000, 10_000), reloads: int = RELOADS) -> list[Row]:
    """One row per size: memory and open files per reload, engram's way and the old way."""
    rows: list[Row] = []
    for size in sizes:
        measured = {way: _in_fresh_process(size, reloads, way) for way in WAYS}
        now, before = measured["restart"], measured["new system"]
        rows.append(
            {
                "items": size,
                "reloads": reloads,
                "mb_per_reload": now["mb_per_reload"],
                "mb_per_reload_before": before["mb_per_reload"],
                "rss_growth_mb": now["rss_growth_mb"],
                "rss_growth_mb_before": before["rss_growth_mb"],
                "open_files_added": now["open_files_added"],
                "open_files_added_before": before["open_files_added"],
                "search_after_write_p50_ms": now["search_p50_ms"],
                "search_after_write_p50_ms_before": before["search_p50_ms"],
            }
        )
    return rows


def measure(size: int, reloads: int, way: str, seed: int = 0) -> Row:
    """`reloads` reloads of a store of `size` items in this process, the `way` given."""
    from engram.stores.chroma.store import ChromaStore

    data = _dataset(size + reloads, seed)
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        reader = ChromaStore(path=tmp, collection="bench", index=data["index"])
        for start in range(0, size, PUT_BATCH):
            reader.batch([_put_op(data, i) for i in range(start, min(start + PUT_BATCH, size))])
        other = ChromaStore(path=tmp, collection="bench", index=data["index"])
        if way == "new system":
            reader._folder._reopen = types.MethodType(_reopen_on_a_new_system, reader)
        search = _search(data, 0)
        search(reader)  # the vector index is loaded
        search(other)
        gc.collect()
        rss, files = _rss_mb(), _open_files()
        times = []
        for n in range(reloads):
            _single_put(data, size + n)(other)
            start = time.perf_counter()
            search(reader)
            times.append(time.perf_counter() - start)
        gc.collect()
        grown, added = _rss_mb() - rss, _open_files() - files
        reader.close()
        other.close()
    return {
        "items": size,
        "way": way,
        "reloads": reloads,
        "rss_growth_mb": round(grown, 1),
        "mb_per_reload": round(grown / reloads, 2),
        "open_files_added": added,
        "search_p50_ms": round(statistics.median(times) * 1000, 1),
    }


def _reopen_on_a_new_system(store: Any) -> None:
    """How `ChromaStore` reloaded before: a client on a new Chroma system, the old one kept."""
    from chromadb.api import ServerAPI
    from chromadb.api.client import Client
    from chromadb.config import System

    client = store.client
    system = System(client.get_settings())
    system.instance(ServerAPI)
    system.start()
    store.client = Client.from_system(system, tenant=client.tenant, database=client.database)
    if store._own_clients:
        store._own_clients.append(store.client)
    store._items = store._open_collection(store.client)
    store._writer.collection = store._items
    if store.lexical is not None:
        store.lexical.collection = store._items


def _in_fresh_process(size: int, reloads: int, way: str) -> Row:
    done = subprocess.run(
        [sys.executable, "-m", __name__, str(size), str(reloads), way],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _rss_mb() -> float:
    """This process's resident memory in MB (Linux: /proc/self/statm)."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def _open_files() -> int:
    return len(os.listdir("/proc/self/fd"))


if __name__ == "__main__":
    print(json.dumps(measure(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])))
