"""Reading many records of a collection a page at a time.

Chroma (1.5, `PersistentClient`) answers a `get` with a `where` by looking the matching records'
metadata up with one SQL variable per record: past SQLite's limit (32,766) the call fails with
"too many SQL variables", so a namespace or a listing of more records than that could not be read
at all, and a store holding them could not even open. Every read here asks for one page of
records at a time (`PAGE`, below that limit and Chroma's own batch size), and keeps only what its
caller needs of each page: the store's memory holds a page, whatever the collection holds.

The pages of one read are consistent: `ChromaStore` holds the data folder while it reads
(`process_lock`), so no process writes between them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Any

from chromadb.api.models.Collection import Collection

from engram.stores.chroma import metadata as md

PAGE = 2000
"""Records per Chroma call."""


def pages(
    collection: Collection, where: dict[str, Any] | None, *, page: int = PAGE
) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """The records matching `where`, as pages of (id, metadata)."""
    offset = 0
    while True:
        got = collection.get(where=where, include=["metadatas"], limit=page, offset=offset)
        if got["ids"]:
            yield list(zip(got["ids"], got["metadatas"]))
        if len(got["ids"]) < page:
            return
        offset += page


def live_items(
    collection: Collection, where: dict[str, Any] | None, now: float
) -> Iterator[tuple[str, dict[str, Any]]]:
    """The item records (not extra vectors, not expired) matching `where`."""
    for found in pages(collection, where):
        for item_id, meta in found:
            if md.ITEM_ID not in meta and not md.expired(meta, now):
                yield item_id, meta


def newest(
    collection: Collection,
    where: dict[str, Any] | None,
    filter: dict[str, Any] | None,
    wanted: int,
    now: float,
) -> list[tuple[str, dict[str, Any]]]:
    """The `wanted` most recently updated items matching `where` and `filter`, newest first
    (ties by id): a plain search, holding `wanted` items and a page at once."""
    matching = (
        (md.checked_record(meta).updated_at, item_id, meta)
        for item_id, meta in live_items(collection, where, now)
        if not filter or md.matches_filter(md.value_of(meta), filter)
    )
    return [(item_id, meta) for _, item_id, meta in heapq.nlargest(wanted, matching)]


def namespaces(
    collection: Collection, where: dict[str, Any] | None, now: float
) -> set[tuple[str, ...]]:
    """The namespaces of the live items matching `where`."""
    return {md.namespace_from_metadata(meta) for _, meta in live_items(collection, where, now)}
