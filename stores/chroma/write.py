"""How `ChromaStore` writes: puts and deletes as Chroma records, and the lexical index beside them.

Each item is one record (its value, namespace, timestamps and top-level scalar fields as
metadata: `engram.stores.chroma.metadata`) carrying its first vector; each further vector is a
record of its own (`<item id>:<n>`) pointing back at the item. An item with nothing to embed
carries a placeholder vector that is never scored. A put whose indexed texts did not change keeps
its vectors (the plan read them before embedding). With a lexical index, the ids a write touches
are journaled before Chroma is written and the index is written after
(`engram.stores.chroma.mirror`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import chromadb.errors
import numpy as np
from chromadb.api.models.Collection import Collection
from langgraph.store.base import PutOp

from engram.stores.chroma import metadata as md
from engram.stores.chroma import tombstones
from engram.stores.chroma.mirror import LexicalMirror, Namespace
from engram.stores.chroma.plan import Plan
from engram.stores.chroma.stamps import Stamps
from engram.stores.lexical.index import LexicalDocument


@dataclass(frozen=True)
class _Replaced:
    """What the batch read of the items its puts replace (`Plan.previous`), by item id."""

    metadata: dict[str, dict[str, Any]]
    records: dict[str, md.ItemRecord | None]
    live: dict[str, md.ItemRecord | None]
    """The records of those not expired, whose `created_at` a put keeps (a tombstone or an
    expired item is replaced by a new item)."""

    @classmethod
    def of(cls, batch: Plan, now: float) -> _Replaced:
        """What `batch` read, at `now`."""
        previous = batch.previous
        records = {i: md.record_of(meta) for i, meta in previous.items()}
        live = {i: record for i, record in records.items() if not md.expired(previous[i], now)}
        return cls(previous, records, live)

    @property
    def legacy(self) -> set[str]:
        """Those whose record still has an earlier layout's document."""
        return {i for i, record in self.records.items() if record and record.legacy_document}

    @property
    def indexed(self) -> set[str]:
        """Those with vectors, and so a BM25 document."""
        return {i for i, r in self.records.items() if r is not None and r.has_vectors}


@dataclass(frozen=True)
class _Puts:
    """What a batch's puts write, decided before anything is written."""

    items: list[tuple[str, dict[str, Any], list[float]]]
    """Item records (id, metadata, first vector), the tombstones of buried items last."""
    old_vector: list[str]
    """Written items whose first vector is the one they had (kept, or a placeholder again):
    written without it where Chroma still holds them as read (`_vector_unchanged`)."""
    legacy: set[str]
    """Items whose record's old document is emptied (`_Replaced.legacy`)."""
    extra: list[tuple[str, list[float], dict[str, Any]]]
    """New extra vectors: id, vector, metadata."""
    kept_extra: list[tuple[str, dict[str, Any]]]
    """Extra vectors kept, with their item's new searchable metadata."""
    extra_namespaces: set[Namespace]
    """The namespaces of written items with extra vectors."""
    removed: list[str]
    """Records deleted: items deleted without a tombstone, then extra vectors no longer used."""
    buried: list[str]
    """Items deleted by a tombstone (`engram.stores.chroma.tombstones`)."""
    touched: list[tuple[Namespace, str]]
    """The lexical index entries the write touches (journaled before it)."""
    documents: list[tuple[Namespace, LexicalDocument]]
    """The BM25 documents of the written items."""
    undocumented: list[tuple[Namespace, str]]
    """Items that had a BM25 document and have none now."""


class ChromaWriter:
    """Applies a planned batch's puts, and deletes swept items, on one collection.

    Args:
        collection: The store's Chroma collection.
        lexical: The lexical mirror, if the store has one.
        dims: The index's vector size (placeholders need it); None without an index.
        default_paths: The store's index fields (a put naming others records them).
        max_batch: The client's largest write.
        stamps: On a Chroma server, the namespaces' version stamps each write is announced in.
    """

    def __init__(
        self,
        collection: Collection,
        lexical: LexicalMirror | None,
        *,
        dims: int | None,
        default_paths: list[str],
        max_batch: int,
        stamps: Stamps | None = None,
    ) -> None:
        self.collection = collection
        self.lexical = lexical
        self.dims = dims
        self.default_paths = default_paths
        self.max_batch = max_batch
        self.stamps = stamps
        self.buried: set[str] = set()
        """Ids of the tombstones this writer left and has not removed yet
        (`engram.stores.chroma.tombstones`)."""
        self.deleted_from: set[Namespace] = set()
        """Namespaces this writer deleted items from since the store last purged."""

    def apply_puts(
        self,
        batch: Plan,
        vectors: dict[str, list[list[float]]],
        now: float,
        write_chunk: int | None = None,
    ) -> None:
        """Write the batch's puts: items, their vectors, deletions, then the lexical index.

        Every record is decided (`_Puts`) from what the batch read of the items the puts replace
        (`_Replaced`) before anything is written."""
        replaced = _Replaced.of(batch, now)
        puts = self._decide(batch, replaced, vectors, now)
        if self.lexical is not None and puts.extra:  # before the write: searches must know
            self.lexical.note_extras(puts.extra_namespaces)
        unchanged = self._vector_unchanged(puts.old_vector, replaced.records)
        namespaces = {op.namespace for op in batch.puts.values()}
        self.deleted_from.update(op.namespace for op in batch.puts.values() if op.value is None)
        with self._announced(namespaces), self._journaled(puts.touched):
            self._write(puts, unchanged, write_chunk)
        self.buried.update(puts.buried)
        if len(self.buried) >= tombstones.REMOVE_AT:
            self.remove_tombstones()
        if self.lexical is not None:  # every written document, even an unchanged one: the
            self.lexical.apply(  # metadata read before the write may be another writer's by now
                upserts=puts.documents, deletes=puts.undocumented, written=namespaces
            )

    def delete_expired(self, now: float, metadata_by_id: dict[str, dict[str, Any]]) -> int:
        """Delete the items read as expired at `now` (their metadata) that still are, then the
        extra vectors of those deleted (an orphan vector is never returned); returns how many.

        A put since the read may have renewed an item: Chroma itself deletes by `expires_at`,
        and an item still there afterwards keeps its vectors (its BM25 document, journaled, is
        re-read from Chroma before its namespace is next searched).
        """
        indexed = {
            i: md.namespace_from_metadata(meta)
            for i, meta in metadata_by_id.items()
            if (record := md.record_of(meta)) is not None and record.has_vectors
        }
        namespaces = {
            md.namespace_from_metadata(meta)
            for meta in metadata_by_id.values()
            if md.record_of(meta) is not None
        }
        self.deleted_from.update(namespaces)
        journaled = self._journaled([(namespace, i) for i, namespace in indexed.items()])
        with self._announced(namespaces), journaled:
            self.collection.delete(where={md.EXPIRES_AT: {"$lt": now}})
            renewed = {
                i
                for chunk in self._chunks(list(metadata_by_id))
                for i in self.collection.get(ids=chunk, include=[])["ids"]
            }
            gone = [i for i in metadata_by_id if i not in renewed]
            extra = [
                md.extra_id(i, n)
                for i in gone
                if (record := md.record_of(metadata_by_id[i])) is not None
                for n in range(1, record.extra_vectors + 1)
            ]
            for chunk in self._chunks(extra):
                self.collection.delete(ids=chunk)
        if self.lexical is not None:
            self.lexical.apply(
                [], [(indexed[i], i) for i in gone if i in indexed], written=namespaces
            )
        return len(gone)

    def remove_tombstones(self, *, everyone: bool = False) -> None:
        """Remove the records of this writer's tombstones (with `everyone`, of every process's
        on the collection). Call inside the folder's hold, after `writing()`; an id since
        reused by a put is not a tombstone any more and stays."""
        if everyone:
            self.collection.delete(where=tombstones.WHERE)
            self.buried.clear()
            return
        ids = list(self.buried)
        for chunk in self._chunks(ids):
            self.collection.delete(ids=chunk, where=tombstones.WHERE)
        self.buried.difference_update(ids)

    # -- private ------------------------------------------------------------------------------

    def _decide(
        self,
        batch: Plan,
        replaced: _Replaced,
        vectors: dict[str, list[list[float]]],
        now: float,
    ) -> _Puts:
        """What the batch's puts write, given the items they replace and the vectors embedded."""
        ops = list(batch.puts.values())
        ids = [batch.ids[(op.namespace, op.key)] for op in ops]
        writes = [(op, i) for op, i in zip(ops, ids) if op.value is not None]
        counts = _vector_counts([i for _, i in writes], batch, replaced.records, vectors)
        written = [
            (i, self._put_metadata(op, i, batch, replaced, counts[i], now)) for op, i in writes
        ]
        deleted, buried = _deletions(ops, ids, replaced, bury=bool(writes))
        graves = [
            (i, tombstones.tombstone_metadata(replaced.metadata[i], now), self._placeholder(i))
            for i in buried
        ]
        documents, indexed = batch.documents, replaced.indexed
        return _Puts(
            items=[(i, meta, self._first_vector(i, batch, vectors)) for i, meta in written]
            + graves,
            old_vector=[i for _, i in writes if i in batch.reused or i not in vectors],
            legacy=replaced.legacy,
            extra=_extra_rows(written, vectors),
            kept_extra=_kept_extra_rows(written, batch.reused, counts),
            extra_namespaces={op.namespace for op, i in writes if counts[i] > 1},
            removed=deleted + _stale_extras(ids, replaced.records, counts),
            buried=buried,
            touched=[
                (op.namespace, i) for op, i in zip(ops, ids) if i in documents or i in indexed
            ],
            documents=[(op.namespace, documents[i]) for op, i in writes if i in documents],
            undocumented=[
                (op.namespace, i) for op, i in zip(ops, ids) if i not in documents and i in indexed
            ],
        )

    def _put_metadata(
        self,
        op: PutOp,
        item_id: str,
        batch: Plan,
        replaced: _Replaced,
        vector_count: int,
        now: float,
    ) -> dict[str, Any]:
        """The metadata of the item record `op` writes (`_item_metadata`)."""
        return _item_metadata(
            op,
            replaced.metadata.get(item_id),
            replaced.live.get(item_id),
            vector_count,
            batch.documents.get(item_id),
            self._own_paths(op),
            now,
        )

    def _write(self, puts: _Puts, unchanged: set[str], write_chunk: int | None) -> None:
        """Write the decided records: item records whose vector Chroma still holds (`unchanged`)
        without it, the others with theirs, then the extra vectors, then the deletions."""
        rows = [row for row in puts.items if row[0] not in puts.legacy]
        for chunk in self._chunks([row for row in rows if row[0] in unchanged], write_chunk):
            ids_, metas, _ = (list(col) for col in zip(*chunk))
            self.collection.update(ids=ids_, metadatas=metas)
        for chunk in self._chunks([row for row in rows if row[0] not in unchanged], write_chunk):
            ids_, metas, embeddings = (list(col) for col in zip(*chunk))
            self._upsert(ids=ids_, metadatas=metas, embeddings=embeddings)
        legacy = [row for row in puts.items if row[0] in puts.legacy]
        for chunk in self._chunks(legacy, write_chunk):
            ids_, metas, embeddings = (list(col) for col in zip(*chunk))
            self._upsert(  # their old documents hold the value they replace: emptied
                ids=ids_, metadatas=metas, embeddings=embeddings, documents=[""] * len(ids_)
            )
        for chunk in self._chunks(puts.extra, write_chunk):
            ids_, embeddings, metas = (list(col) for col in zip(*chunk))
            self._upsert(ids=ids_, embeddings=embeddings, metadatas=metas)
        for chunk in self._chunks(puts.kept_extra, write_chunk):
            ids_, metas = (list(col) for col in zip(*chunk))
            self.collection.update(ids=ids_, metadatas=metas)
        for chunk in self._chunks(puts.removed):
            self.collection.delete(ids=chunk)

    def _journaled(
        self, entries: list[tuple[tuple[str, ...], str]]
    ) -> AbstractContextManager[None]:
        return self.lexical.writing(entries) if self.lexical is not None else nullcontext()

    def _announced(self, namespaces: set[Namespace]) -> AbstractContextManager[None]:
        return self.stamps.announce(namespaces) if self.stamps is not None else nullcontext()

    def _first_vector(
        self, item_id: str, batch: Plan, vectors: dict[str, list[list[float]]]
    ) -> list[float]:
        """The vector riding on the item record: new, kept, or a placeholder."""
        if item_id in batch.reused:
            return batch.reused[item_id]
        return (vectors.get(item_id) or [self._placeholder(item_id)])[0]

    def _vector_unchanged(
        self, ids: list[str], read: dict[str, md.ItemRecord | None]
    ) -> set[str]:
        """Of the records to write with the vector they had (the same texts, or a placeholder
        again), those Chroma still holds as the batch read them (the same digest: no writer
        changed their texts since): they are updated without their vector, and Chroma leaves
        its vector index alone (several times faster than writing the vector again)."""
        unchanged: set[str] = set()
        for chunk in self._chunks([i for i in ids if read.get(i) is not None]):
            got = self.collection.get(ids=chunk, include=["metadatas"])
            for item_id, meta in zip(got["ids"], got["metadatas"]):
                now = md.record_of(meta)
                if now is not None and now.digest == read[item_id].digest:  # type: ignore[union-attr]
                    unchanged.add(item_id)
        return unchanged

    def _own_paths(self, op: PutOp) -> list[str] | None:
        """The put's index fields when they are not the store's (recorded for repairs)."""
        return (
            list(op.index)
            if isinstance(op.index, list) and op.index != self.default_paths
            else None
        )

    def _upsert(self, **columns: Any) -> None:
        try:
            self.collection.upsert(**columns)
        except chromadb.errors.InvalidArgumentError as exc:
            if "dimension" not in str(exc).lower():
                raise
            raise ValueError(
                f"collection {self.collection.name!r} holds vectors of another size ({exc}); the "
                "index config's dims must match the collection's: use another collection name"
            ) from exc

    def _placeholder(self, item_id: str) -> list[float]:
        """A stand-in vector for an item with nothing to embed: never scored (metadata says so),
        and a fixed pseudo-random direction per item so that placeholders don't cluster."""
        dims = self.dims or 1
        if dims == 1:
            return [1.0]
        vector = np.random.default_rng(int(item_id[:15], 16)).standard_normal(dims)
        return (vector / np.linalg.norm(vector)).tolist()

    def _chunks(self, rows: list[Any], size: int | None = None) -> Iterator[list[Any]]:
        size = min(size or self.max_batch, self.max_batch)
        for start in range(0, len(rows), size):
            yield rows[start : start + size]


def _item_metadata(
    op: PutOp,
    previous: dict[str, Any] | None,
    replaced: md.ItemRecord | None,
    vector_count: int,
    document: LexicalDocument | None,
    own_paths: list[str] | None,
    now: float,
) -> dict[str, Any]:
    """The metadata of a put's item record; `previous` is the metadata it replaces (its fields
    that the put no longer has are removed) and `replaced` that metadata's `ItemRecord`."""
    digest = document.digest if document is not None and vector_count else None
    record = md.ItemRecord(
        key=op.key,
        created_at=replaced.created_at if replaced is not None else now,
        updated_at=now,
        digest=digest,
        extra_vectors=vector_count - 1 if digest else 0,
        index_paths=own_paths if digest else None,
        ttl_minutes=float(op.ttl) if op.ttl is not None else None,
    )
    meta: dict[str, Any] = {
        **md.namespace_metadata(op.namespace),
        md.VALUE: json.dumps(op.value, ensure_ascii=False),
        md.RECORD: record.to_json(),
        **md.value_metadata(op.value or {}),
    }
    if op.ttl is not None:
        meta[md.EXPIRES_AT] = now + float(op.ttl) * 60
    for stale in set(previous or {}) - set(meta):
        meta[stale] = None  # Chroma merges metadata on upsert; None removes the old field
    return meta


def _searchable(meta: dict[str, Any]) -> dict[str, Any]:
    """The metadata an extra vector copies from its item, so the same `where` selects both
    (with the item's None values, which remove fields the item no longer has)."""
    return {k: v for k, v in meta.items() if k.startswith(("ns.", md.VALUE_PREFIX, md.LONG_PREFIX))}


def _vector_counts(
    ids: list[str],
    batch: Plan,
    records: dict[str, md.ItemRecord | None],
    vectors: dict[str, list[list[float]]],
) -> dict[str, int]:
    """How many vectors each written item has: those it keeps, or those embedded for it."""
    return {
        i: 1 + records[i].extra_vectors if i in batch.reused else len(vectors.get(i, ()))
        for i in ids
    }


def _extra_rows(
    written: list[tuple[str, dict[str, Any]]], vectors: dict[str, list[list[float]]]
) -> list[tuple[str, list[float], dict[str, Any]]]:
    """The records of the written items' new vectors after the first, with their item's
    searchable metadata."""
    return [
        (md.extra_id(i, n), vector, {**_searchable(meta), md.ITEM_ID: i})
        for i, meta in written
        for n, vector in enumerate(vectors.get(i, ())[1:], start=1)
    ]


def _kept_extra_rows(
    written: list[tuple[str, dict[str, Any]]],
    reused: dict[str, list[float]],
    counts: dict[str, int],
) -> list[tuple[str, dict[str, Any]]]:
    """The written items' kept vectors after the first: the vectors stay, but their copies of
    the value's fields must follow it."""
    return [
        (md.extra_id(i, n), {**_searchable(meta), md.ITEM_ID: i})
        for i, meta in written
        if i in reused
        for n in range(1, counts[i])
    ]


def _stale_extras(
    ids: list[str], records: dict[str, md.ItemRecord | None], counts: dict[str, int]
) -> list[str]:
    """The extra vectors the put items had beyond those they have now."""
    return [
        md.extra_id(i, n)
        for i in ids
        if (record := records.get(i)) is not None
        for n in range(max(counts.get(i, 0), 1), record.extra_vectors + 1)
    ]


def _deletions(
    ops: list[PutOp], ids: list[str], replaced: _Replaced, *, bury: bool
) -> tuple[list[str], list[str]]:
    """The items the puts delete: those deleted outright, and those buried under a tombstone
    (when `bury`: a tombstone saves a call when the batch upserts anyway; a batch of deletes
    alone deletes in the one call it makes, as burying would also rewrite every vector)."""
    deleted = [
        i
        for op, i in zip(ops, ids)
        if op.value is None
        and i in replaced.metadata
        and not tombstones.is_tombstone(replaced.metadata[i])
    ]
    buried = [i for i in deleted if bury and tombstones.can_bury(replaced.records[i])]
    return [i for i in deleted if i not in buried], buried
