"""Rewriting records of an earlier engram layout in the current one, when a store opens.

Layout 1 (engram until November 2026) kept the value as the record's document, stored the
namespace's depth (`ns.depth`) beside its prefixes and the whole namespace unmarked, and the key,
timestamps, digest (or, before digests, `indexed`), extra vector count, index paths and TTL as
metadata fields of their own. Layout 2 (`engram.stores.chroma.metadata`) writes far less for
Chroma to index: no document (the value is metadata), those facts in one JSON field
(`metadata.ItemRecord`), and the namespace marked instead of its depth stored.

Layout 2 later gained `ns.l2`, a namespace's second label alone (`add_second_labels`, once per
collection; the collection's metadata records that it ran, `marked`).

The upgrade rewrites metadata only, a page of records at a time, each page in one Chroma update,
so an upgrade that is interrupted loses nothing and goes on the next time a store opens. It
leaves the documents: emptying one takes giving Chroma the record's vector again, which Chroma
re-indexes (about 25 times slower). An old document holds the value the item has until its next
put, and that put empties it (`ItemRecord.legacy_document`), so no outdated value stays behind.
A page read before another process rewrote and then updated the same items would put their old
values back: on a Chroma server several machines share, open one store (which upgrades) before
the others start writing.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from chromadb.api.models.Collection import Collection

from engram.stores.chroma import metadata as md
from engram.stores.chroma import scan

logger = logging.getLogger(__name__)

DEPTH = "ns.depth"
"""Present on every record of layout 1 (items and extra vectors), on none of layout 2."""
_RECORD_FIELDS = (
    "key",
    "created_at",
    "updated_at",
    "digest",
    "indexed",
    "extra_vectors",
    "index_paths",
    "ttl_minutes",
)
LAYOUT = "engram:layout"
"""The collection metadata key recording that no record of layout 1 is left."""
SECOND_LABELS = "engram:second-labels"
"""The collection metadata key recording that every record has its `ns.l2`."""
CURRENT = {LAYOUT: "2", SECOND_LABELS: "1"}
"""The marks of a collection engram creates: nothing of an earlier layout to upgrade."""
UNKNOWN_DIGEST = "unknown"
"""The digest of an item written before digests existed: it has vectors, and since this digest
matches no texts, they are made again on its next put."""


def upgrade(collection: Collection, page: int) -> int:
    """Rewrite every layout-1 record of `collection`, `page` at a time, once per collection;
    returns how many.

    Raises:
        RuntimeError: Chroma kept a record's old layout after rewriting it.
    """
    if marked(collection, LAYOUT, CURRENT[LAYOUT]):
        return 0
    upgraded = 0
    while True:
        got = collection.get(
            where={DEPTH: {"$gte": 0}}, include=["metadatas", "documents"], limit=page
        )
        if not got["ids"]:
            break
        if not upgraded:
            logger.info(
                "collection %r holds records of an earlier engram layout: upgrading them",
                collection.name,
            )
        collection.update(
            ids=got["ids"],
            metadatas=[
                upgraded_metadata(meta, document)
                for meta, document in zip(got["metadatas"], got["documents"])
            ],
        )
        if collection.get(ids=got["ids"][:1], include=["metadatas"])["metadatas"][0].get(DEPTH):
            raise RuntimeError(
                f"Chroma did not rewrite the records of collection {collection.name!r}: "
                "upgrade chromadb (engram needs metadata updates that remove fields)"
            )
        upgraded += len(got["ids"])
    if upgraded:
        logger.info("collection %r: %d records upgraded to layout 2", collection.name, upgraded)
    mark(collection, LAYOUT, CURRENT[LAYOUT])
    return upgraded


def upgraded_metadata(meta: dict[str, Any], document: str | None) -> dict[str, Any]:
    """The metadata update that turns a layout-1 record (metadata and document) into layout 2
    (None removes a field)."""
    depth = int(meta[DEPTH])
    namespace = tuple(json.loads(meta[md.prefix_field(depth)]))
    update: dict[str, Any] = {DEPTH: None, **md.namespace_metadata(namespace)}
    if md.ITEM_ID in meta:  # an extra vector's record: namespace and value fields only
        return update
    paths = meta.get("index_paths")
    digest = meta.get("digest") or (UNKNOWN_DIGEST if meta.get("indexed") else None)
    record = md.ItemRecord(
        key=meta["key"],
        created_at=float(meta["created_at"]),
        updated_at=float(meta["updated_at"]),
        digest=digest,
        extra_vectors=int(meta.get("extra_vectors") or 0),
        index_paths=json.loads(paths) if paths else None,
        ttl_minutes=float(meta["ttl_minutes"]) if meta.get("ttl_minutes") is not None else None,
        legacy_document=bool(document),
    )
    update[md.RECORD] = record.to_json()
    update[md.VALUE] = document
    update.update(dict.fromkeys((f for f in _RECORD_FIELDS if f in meta), None))
    return update


def add_second_labels(collection: Collection) -> int:
    """Give each record of a namespace two labels deep or more its `ns.l2` field, once per
    collection (a page at a time; an interrupted run goes on the next time); returns how many
    records got it."""
    if marked(collection, SECOND_LABELS, CURRENT[SECOND_LABELS]):
        return 0
    added = 0
    for page in scan.pages(collection, None):
        labels = {i: _second_label(meta) for i, meta in page if md.SECOND_LABEL not in meta}
        ids = [i for i, label in labels.items() if label is not None]
        if ids:
            collection.update(ids=ids, metadatas=[{md.SECOND_LABEL: labels[i]} for i in ids])
            added += len(ids)
    if added:
        logger.info("collection %r: %d records got their second label", collection.name, added)
    mark(collection, SECOND_LABELS, CURRENT[SECOND_LABELS])
    return added


def marked(collection: Collection, key: str, version: str) -> bool:
    """Whether the collection's metadata says a one-time upgrade (`key`) ran."""
    return (collection.metadata or {}).get(key) == version


def mark(collection: Collection, key: str, version: str) -> None:
    """Record in the collection's metadata that a one-time upgrade ran (Chroma refuses a
    metadata change that names the distance function again, so `hnsw:` keys stay out)."""
    kept = {k: v for k, v in (collection.metadata or {}).items() if not k.startswith("hnsw:")}
    collection.modify(metadata={**kept, key: version})


def unmark(collection: Collection, key: str) -> None:
    """Forget that a one-time upgrade ran: the next store that opens the collection runs it."""
    if key in (collection.metadata or {}):
        kept = {k: v for k, v in collection.metadata.items() if not k.startswith("hnsw:")}
        kept.pop(key)
        collection.modify(metadata=kept or {"engram": "1"})  # Chroma refuses empty metadata


def _second_label(meta: dict[str, Any]) -> str | None:
    try:
        namespace = md.namespace_from_metadata(meta)
    except ValueError:  # not a record of this layout: left as it is
        return None
    return namespace[1] if len(namespace) >= 2 else None
