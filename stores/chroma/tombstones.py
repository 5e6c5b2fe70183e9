"""Deleted items as tombstones: a delete rides on the batch's upsert, the records go later.

Chroma answers each write call in about the same time whatever it holds (on a `PersistentClient`
two SQLite transactions, each a few `fsync`s), so a batch that both puts and deletes paid for two
calls. A delete of an item without extra vectors, in a batch that also writes items, therefore
overwrites the item's record in the batch's upsert with a tombstone: its value, fields and vector replaced (the deleted text leaves
the live record at once), and an expiry in 1970, so that every read already treats it as absent
(`metadata.expired`), in this process and in the others on the folder. The records themselves are
removed in one call for many (`ChromaWriter.remove_tombstones`): when enough have piled up, when
the store has nothing else to do, on `close`, `sweep_ttl` and `purge_deleted`, and on opening a
store (the tombstones of a process that died before removing its own).
"""

from __future__ import annotations

from typing import Any

from engram.stores.chroma import metadata as md

EXPIRES_AT = 0.0
"""A tombstone's expiry; a real TTL's is a time after the item was written."""
WHERE = {md.EXPIRES_AT: {"$lte": EXPIRES_AT}}
"""Chroma's where clause selecting tombstones (and nothing else)."""
REMOVE_AT = 64
"""A write that leaves this many tombstones of this store behind removes them at once."""


def is_tombstone(meta: dict[str, Any] | None) -> bool:
    """Whether a record's metadata is a tombstone's."""
    expires = (meta or {}).get(md.EXPIRES_AT)
    return expires is not None and expires <= EXPIRES_AT


def can_bury(record: md.ItemRecord | None) -> bool:
    """Whether an item can be deleted by a tombstone: its record is engram's, has no extra
    vectors (their records would stay searchable) and no document of an older layout."""
    return record is not None and not record.extra_vectors and not record.legacy_document


def tombstone_metadata(previous: dict[str, Any], now: float) -> dict[str, Any]:
    """The metadata that replaces a deleted item's (`previous`): its namespace and key stay
    (the record is still the item's), every field of its value goes."""
    record = md.record_of(previous)
    if record is None:
        raise md.ForeignRecordError(f"Chroma record with metadata {previous}: {md.FOREIGN_RECORD}")
    tombstone = md.ItemRecord(key=record.key, created_at=record.created_at, updated_at=now)
    meta: dict[str, Any] = {key: None for key in previous}
    meta.update({key: value for key, value in previous.items() if key.startswith("ns.")})
    meta.update({md.VALUE: "{}", md.RECORD: tombstone.to_json(), md.EXPIRES_AT: EXPIRES_AT})
    return meta
