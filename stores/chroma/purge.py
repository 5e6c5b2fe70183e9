"""Making deleted items unrecoverable from an embedded Chroma folder's files.

Deleting a record from Chroma (1.5, `PersistentClient`) leaves its text in three places:

- Chroma's log, the table `embeddings_queue` of `chroma.sqlite3`: every add, update and upsert
  is a row with the record's metadata as JSON. Chroma deletes rows only once every segment of
  the collection has persisted past them, which for the vector index happens every
  `hnsw:sync_threshold` (1000) writes. `purge_files` empties the metadata of the rows of a
  record that a later row of the log deletes, once the metadata segment has applied them
  (its `max_seq_id`): such a row only matters to the vector index, which replays vectors, never
  metadata. No row is removed, so a replay after a crash still ends with the record deleted.
- free space inside `chroma.sqlite3`'s pages (Chroma's SQLite does not delete securely):
  `VACUUM` rewrites the file. Chroma's trigram index of documents (`embedding_fulltext_search`,
  which only holds documents of records an earlier engram wrote) is merged first, so that no
  term of a deleted document survives in its segments.
- the vector index files (`<segment>/data_level0.bin`, `length.bin`): hnswlib allocates room for
  more elements than it holds without clearing it and writes that room to disk, so the files
  can carry whatever the writing process had in freed memory, texts included. The room past the
  last element (`header.bin` gives the count) is overwritten with zeros; hnswlib never reads it.
  An index Chroma never saved is rewritten whole by every new Chroma system: its room is
  scrubbed after every operation (`engram.stores.chroma.unsaved_index`).

The BM25 index (`engram.stores.lexical.index.LexicalIndex.scrub`) and a SQLite checkpointer
(`engram.stores.memory.users.adelete_user`) are scrubbed by their owners. A Chroma server keeps
its files to itself: there the deletes are all a client can do (docs/privacy.md).

The SQLite part runs in a child process (`python purge.py FILE COLLECTION`), never in the
process whose Chroma client has `chroma.sqlite3` open. Chroma's Rust bindings carry their own copy
of SQLite, and SQLite's file locks are POSIX record locks, which belong to a process: two copies
in one process do not see each other's locks, and either copy's unlock releases the other's.
Chroma also keeps writing after a call returned (each write ends with a purge of its log, sent to
a background task), so an in-process `VACUUM` could rewrite the file while Chroma read or wrote
it (a half-rewritten file, "malformed database schema"), and Chroma's unlock could hand the
half-rewritten file to the other processes on the folder. A child process's locks are its own:
it waits for Chroma's transactions, and Chroma and every other process wait for its `VACUUM`.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CHROMA_FILE = "chroma.sqlite3"
DELETE = 3
"""Chroma's operation code of a delete in `embeddings_queue`."""
_BUSY_SECONDS = 30.0


@dataclass(frozen=True)
class PurgeReport:
    """What `purge_files` cleared."""

    log_rows: int = 0
    """Rows of Chroma's log whose record text was removed."""
    vacuumed: bool = False
    """Whether `chroma.sqlite3` was rewritten without its free space."""
    zeroed_bytes: int = 0
    """Bytes of unused room in the vector index files overwritten with zeros."""


def purge_files(folder: Path, collection_id: str) -> PurgeReport:
    """Remove the text of deleted records of a collection from a `PersistentClient` folder.

    Raises:
        sqlite3.OperationalError: Another process (or this one's Chroma client) held
            `chroma.sqlite3` locked for longer than 30 seconds; nothing is lost, call again.
        sqlite3.DatabaseError: The file cannot be purged (the child process's error).
    """
    from engram.stores.chroma.unsaved_index import zero_unused_room

    rows, vector_segments = _purge_database_in_child(folder / CHROMA_FILE, collection_id)
    zeroed = sum(zero_unused_room(folder / segment) for segment in vector_segments)
    return PurgeReport(log_rows=rows, vacuumed=True, zeroed_bytes=zeroed)


def purge_database(path: Path, collection_id: str) -> tuple[int, list[str]]:
    """The SQLite part of `purge_files`, in this process: empties the moot log rows, merges the
    documents index, `VACUUM`s; returns the log rows emptied and the collection's vector
    segments. Only for a process that has no Chroma client open on the file (see above)."""
    db = sqlite3.connect(path, timeout=_BUSY_SECONDS, isolation_level=None)
    try:
        db.execute("PRAGMA secure_delete = ON")
        rows = _purge_log(db, collection_id)
        _merge_documents_index(db)
        db.execute("VACUUM")
        vector_segments = [
            row[0]
            for row in db.execute(
                "SELECT id FROM segments WHERE collection = ? AND scope = 'VECTOR'",
                (collection_id,),
            )
        ]
    finally:
        db.close()
    return rows, vector_segments


def _purge_database_in_child(path: Path, collection_id: str) -> tuple[int, list[str]]:
    """`purge_database` in a child process (this file run as a script: standard library only)."""
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "utf8", str(Path(__file__).resolve()), str(path),
         collection_id],
        capture_output=True,
        encoding="utf-8",
        errors="replace",
        check=False,
    )
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        answer = {"error": "DatabaseError", "message": done.stderr.strip()[-500:]}
    if done.returncode != 0 or "error" in answer:
        error = getattr(sqlite3, str(answer.get("error")), sqlite3.DatabaseError)
        if not (isinstance(error, type) and issubclass(error, sqlite3.Error)):
            error = sqlite3.DatabaseError
        raise error(f"purging {path} failed: {answer.get('message') or done.returncode}")
    return int(answer["log_rows"]), [str(s) for s in answer["vector_segments"]]


def _purge_log(db: sqlite3.Connection, collection_id: str) -> int:
    """Empty the metadata of log rows that a later delete of the same record makes moot and
    that the metadata segment has applied."""
    applied = _applied_seq_id(db, collection_id)
    if applied is None:
        return 0
    cursor = db.execute(
        "UPDATE embeddings_queue AS q SET metadata = NULL "
        "WHERE q.topic LIKE '%/' || ? AND q.metadata IS NOT NULL AND q.operation != ? "
        "AND q.seq_id <= ? AND EXISTS (SELECT 1 FROM embeddings_queue AS d "
        "WHERE d.topic = q.topic AND d.id = q.id AND d.operation = ? AND d.seq_id > q.seq_id)",
        (collection_id, DELETE, applied, DELETE),
    )
    return cursor.rowcount


def _applied_seq_id(db: sqlite3.Connection, collection_id: str) -> int | None:
    row = db.execute(
        "SELECT m.seq_id FROM max_seq_id AS m JOIN segments AS s ON s.id = m.segment_id "
        "WHERE s.collection = ? AND s.scope = 'METADATA'",
        (collection_id,),
    ).fetchone()
    if row is None or row[0] is None:
        return None
    seq = row[0]
    return int.from_bytes(seq, "big") if isinstance(seq, bytes) else int(seq)


def _merge_documents_index(db: sqlite3.Connection) -> None:
    table = "embedding_fulltext_search"
    exists = db.execute(
        "SELECT 1 FROM sqlite_master WHERE name = ? AND type = 'table'", (table,)
    ).fetchone()
    if exists:
        db.execute(f"INSERT INTO {table}({table}) VALUES ('optimize')")


if __name__ == "__main__":  # the child process of `_purge_database_in_child`
    try:
        purged, segments = purge_database(Path(sys.argv[1]), sys.argv[2])
    except sqlite3.Error as exc:
        print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
        sys.exit(1)
    print(json.dumps({"log_rows": purged, "vector_segments": segments}))
