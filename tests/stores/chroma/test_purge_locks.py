"""The purge of deleted text (`VACUUM` of `chroma.sqlite3`) respects the file locks of Chroma's
own SQLite in the same process.

Chroma's Rust bindings carry their own copy of SQLite; SQLite's locks are POSIX record locks,
which belong to a process. A purge run by Python's SQLite in the process of the Chroma client does
not see the client's locks (and the client's unlock drops the purge's): it rewrote the file while
Chroma read or wrote it, which left a malformed file, or let other processes read it half
rewritten. Here this process takes the lock Chroma's SQLite takes for a read, as raw POSIX locks
(what any other copy of SQLite in the process does): the purge must wait for it, as it waits for
another process's.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import random
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import chromadb
import pytest

from engram.stores.chroma import purge

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX record locks")

SHARED_FIRST = 0x40000002
"""SQLite's unix VFS: a read (SHARED) lock is a read lock on these bytes of the file; a write
(EXCLUSIVE, as `VACUUM` needs) is a write lock on them."""
SHARED_SIZE = 510


MAKE_FOLDER = """
import random, sys, chromadb
client = chromadb.PersistentClient(path=sys.argv[1])
items = client.get_or_create_collection("engram", embedding_function=None)
ids = [f"alice-{n}" for n in range(20)] + ["bob"]
items.add(
    ids=ids,
    embeddings=[[random.random() for _ in range(8)] for _ in ids],
    metadatas=[{"user": i.split("-")[0], "text": f"secret {i}"} for i in ids],
)
items.delete(ids=[i for i in ids if i != "bob"])
print(items.id)
"""


@pytest.fixture
def folder(tmp_path: Path) -> tuple[Path, str]:
    """A Chroma folder with deleted records to purge, written by another process (in this one,
    Chroma closing its files later would drop the locks the tests take); the collection's id."""
    made = subprocess.run(
        [sys.executable, "-c", MAKE_FOLDER, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "ANONYMIZED_TELEMETRY": "False"},
    )
    return tmp_path, made.stdout.strip()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_purge_waits_for_a_read_lock_held_in_its_own_process(folder):
    path, collection_id = folder
    database = path / purge.CHROMA_FILE
    before = _digest(database)
    fd = os.open(database, os.O_RDWR)
    done: list[object] = []
    try:
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB, SHARED_SIZE, SHARED_FIRST, os.SEEK_SET)
        purging = threading.Thread(
            target=lambda: done.append(purge.purge_files(path, collection_id)), daemon=True
        )
        purging.start()
        purging.join(2.0)
        # a VACUUM under another SQLite's read lock would have rewritten the file by now
        assert not done, "the purge ran while Chroma's SQLite held a read lock in its process"
        fcntl.lockf(fd, fcntl.LOCK_UN, SHARED_SIZE, SHARED_FIRST, os.SEEK_SET)
        assert _digest(database) == before  # (reading it closes a descriptor: after the unlock)
        purging.join(60.0)
    finally:
        os.close(fd)  # also drops the lock, should an assertion have failed with it held
    assert len(done) == 1 and isinstance(done[0], purge.PurgeReport)
    assert done[0].vacuumed and done[0].log_rows > 0
    assert _digest(database) != before
    client = chromadb.PersistentClient(path=str(path))
    assert client.get_collection("engram").get(where={"user": "bob"})["ids"] == ["bob"]
    client.close()


def test_purge_errors_are_sqlite_errors(tmp_path):
    (tmp_path / purge.CHROMA_FILE).write_bytes(b"not a database" * 100)
    with pytest.raises(sqlite3.DatabaseError, match="purging .* failed"):
        purge.purge_files(tmp_path, "no-such-collection")


def test_purge_while_chroma_writes_in_the_same_process_leaves_a_sound_file(folder):
    """Chroma writing from a thread (as its background log purge does after each write) while
    the purge runs: the file stays sound and the kept record readable."""
    path, collection_id = folder
    client = chromadb.PersistentClient(path=str(path))
    items = client.get_collection("engram")
    stop = time.monotonic() + 3.0

    def write() -> None:
        n = 0
        while time.monotonic() < stop:
            try:
                items.upsert(
                    ids=[f"carol-{n}"],
                    embeddings=[[random.random() for _ in range(8)]],
                    metadatas=[{"user": "carol", "text": "x" * 500}],
                )
                items.delete(ids=[f"carol-{n}"])
            except chromadb.errors.ChromaError:  # busy while the purge holds the file: fine
                pass
            n += 1

    writer = threading.Thread(target=write)
    writer.start()
    purges = 0
    try:
        while time.monotonic() < stop:
            purge.purge_files(path, collection_id)
            purges += 1
    finally:
        writer.join()
    client.close()
    assert purges > 0
    db = sqlite3.connect(path / purge.CHROMA_FILE)
    try:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    finally:
        db.close()
    client = chromadb.PersistentClient(path=str(path))
    assert client.get_collection("engram").get(where={"user": "bob"})["ids"] == ["bob"]
    client.close()
