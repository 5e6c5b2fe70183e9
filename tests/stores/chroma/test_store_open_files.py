"""A store closes every file it opened: the process's open descriptors (/proc/self/fd) are back
to their count once stores were opened, written, reloaded after another store's writes, and
closed; a reload keeps the client and opens nothing that stays."""

from __future__ import annotations

import gc
import os
import time
from collections import Counter
from pathlib import Path

import chromadb
import pytest
from fakes import NGramEmbeddings

from engram.stores.chroma.store import ChromaStore

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="lists open files from /proc"
)
NS = ("memories", "alice")


def open_files() -> dict[str, str]:
    """This process's open descriptors and what each one is."""
    found = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            found[fd] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor is gone by now
            continue
    return found


def settled_files(at_most: int | None = None) -> dict[str, str]:
    """`open_files` after a garbage collection; with `at_most`, waits up to 2 s for the count to
    come down to it (a thread another test left running may hold a file for a moment)."""
    for _ in range(20):
        gc.collect()
        found = open_files()
        if at_most is None or len(found) <= at_most:
            break
        time.sleep(0.1)
    return found


def under(folder: Path, files: dict[str, str], *, wal: bool = True) -> list[str]:
    """The open files under `folder`; without `wal`, not SQLite's write-ahead logs (a
    connection opens and closes its log as the log empties and fills)."""
    return sorted(
        f
        for f in files.values()
        if f.startswith(str(folder)) and (wal or not f.endswith(("-wal", "-shm")))
    )


def _index() -> dict:
    return {"dims": 256, "embed": NGramEmbeddings(), "fields": ["text"]}


def _round(folder: Path, n: int) -> None:
    """Two stores on one folder (as two processes would be), each reloading after the other
    wrote, with a TTL sweep and a purge; both closed, one by its context manager."""
    with ChromaStore(path=folder, index=_index(), ttl={"default_ttl": None}) as first:
        second = ChromaStore(path=folder, index=_index())
        for k in range(3):
            first.put(NS, f"a{n}-{k}", {"text": f"likes green tea {k}"})
            assert second.search(NS, query="green tea", limit=1)  # reloads
            second.put(NS, f"b{n}-{k}", {"text": f"plays chess {k}"}, ttl=None)
            assert first.get(NS, f"b{n}-{k}") is not None  # reloads
        first.delete(NS, f"a{n}-0")
        first.sweep_ttl()
        second.purge_deleted()
        second.close()


def test_stores_on_a_folder_leave_no_file_open_once_closed(tmp_path):
    _round(tmp_path / "chroma", 0)  # warm-up: what the process opens once (imports, threads)
    before = settled_files()

    for n in range(1, 4):
        _round(tmp_path / "chroma", n)

    after = settled_files(at_most=len(before))
    assert len(after) == len(before), sorted(set(after.values()) - set(before.values()))
    assert under(tmp_path, after) == []


def test_a_reload_keeps_the_client_and_leaves_no_file_behind(tmp_path):
    reader = ChromaStore(path=tmp_path, index=_index())
    writer = ChromaStore(path=tmp_path, index=_index())
    writer.put(NS, "w0", {"text": "likes green tea"})
    assert reader.get(NS, "w0") is not None  # the first reload: its files open
    writer.put(NS, "w1", {"text": "likes green tea 1"})
    assert reader.search(NS, query="green tea")  # and a search's (the BM25 index's log)
    client, opened = reader.client, settled_files()

    for k in range(2, 12):
        writer.put(NS, f"w{k}", {"text": f"likes green tea {k}"})
        assert reader.get(NS, f"w{k}") is not None  # read after a reload
        assert len(reader.search(NS, query="green tea", limit=20)) == k + 1

    assert reader.client is client
    left = Counter(under(tmp_path, settled_files(), wal=False))
    more = left - Counter(under(tmp_path, opened, wal=False))
    # Chroma's SQLite pool may have opened a connection more; each of these reloads used to
    # leave about ten files open (its old system's database and vector index files)
    assert sum(more.values()) <= 2, more
    reader.close()
    writer.close()
    assert under(tmp_path, settled_files()) == []


def test_close_is_idempotent_and_a_given_client_stays_open(tmp_path):
    client = chromadb.PersistentClient(path=str(tmp_path))
    store = ChromaStore(client, index=_index())
    store.put(NS, "m", {"text": "likes green tea"})
    store.close()
    store.close()
    assert client.get_collection("engram").count() == 1  # the client is its owner's
    client.close()
