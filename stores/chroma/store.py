"""`ChromaStore`: a LangGraph `BaseStore` over Chroma (embedded, in-memory or a server).

Each item is one record of the collection `<collection>` (its value, namespace, timestamps and
top-level scalar fields as metadata: `engram.stores.chroma.metadata`) carrying its first vector;
each further vector is a record `<item id>:<n>` of the same collection
(`engram.stores.chroma.write`).
A BM25 index beside the collection mirrors the embedded texts and answers the lexical half of
`HybridSearchOp` (`engram.stores.chroma.mirror`, `engram.stores.chroma.search`). Only
`batch`/`abatch` are implemented: every public method of `BaseStore` builds ops and calls them.
Both queue their ops with the other calls in flight (`engram.stores.chroma.coalesce`), which
run together as one plan (pure) and one Chroma execution in a drain thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Self
from urllib.parse import urlparse

import chromadb
import chromadb.errors
from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from chromadb.config import DEFAULT_DATABASE, DEFAULT_TENANT
from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
)

from engram.stores.chroma import metadata as md
from engram.stores.chroma import plan, process_lock, purge, relabel, scan, tombstones, upgrade
from engram.stores.chroma.awaitable import AwaitableBool, AwaitableInt
from engram.stores.chroma.coalesce import Coalescer
from engram.stores.chroma.mirror import LexicalMirror, lexical_index_for
from engram.stores.chroma.purge import PurgeReport
from engram.stores.chroma.search import hybrid_search, nearest
from engram.stores.chroma.stamps import Stamps
from engram.stores.chroma.version import check_chroma_version
from engram.stores.chroma.write import ChromaWriter
from engram.stores.lexical.index import LexicalIndex
from engram.stores.paths import default_chroma_path

logger = logging.getLogger(__name__)

DEFAULT_COLLECTION = "engram"
_READ_WITH_QUERY = 50
"""A vector search for at most this many results reads them with the query itself."""
_POST_FILTER = 4
"""A filtered vector search first looks at this many times the results it wants, unfiltered,
and checks the filter itself; only if too few pass does Chroma filter by metadata."""
_COLLECTION_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]")


class ChromaStore(BaseStore):
    """A LangGraph store whose items and vectors live in Chroma.

    Args:
        client: Any chromadb client (`PersistentClient`, `EphemeralClient`, `HttpClient`).
            Default: a `PersistentClient` at `path`.
        path: Folder of the default `PersistentClient`; default `$ENGRAM_DATA_DIR/chroma`,
            i.e. `./.engram/chroma`.
        collection: Name of the Chroma collection (3-512 chars of `[a-zA-Z0-9._-]`).
        index: LangGraph's `IndexConfig` (`dims`, `embed`, `fields`) enabling semantic search.
        ttl: LangGraph's `TTLConfig`; with `sweep_interval_minutes` a background sweeper starts.
        lexical: The BM25 index that makes `HybridSearchOp` work (`engram.stores.lexical.hybrid`).
            None (default, with an `index`): `lexical.sqlite3` beside a `PersistentClient`'s
            files, a file per server under `$ENGRAM_DATA_DIR/lexical/` for a Chroma server,
            in memory for an in-memory client. False: no lexical channel.

    Example:
        >>> import chromadb
        >>> store = ChromaStore(chromadb.EphemeralClient(), collection="doc-example")
        >>> store.put(("users", "alice"), "theme", {"value": "dark"})
        >>> store.get(("users", "alice"), "theme").value
        {'value': 'dark'}
        >>> [i.key for i in store.search(("users",), filter={"value": "dark"})]
        ['theme']
    """

    supports_ttl: bool = True
    async_write_chunk: int = 64
    """Records per Chroma write call in `abatch`. Embedded Chroma holds the GIL for the whole of
    an insert (chroma-core/chroma#3873, #7692), which stalls the event loop even from a worker
    thread; small writes bound each stall to a few tens of milliseconds. `batch` writes in
    Chroma's largest batches, which is faster."""

    def __init__(
        self,
        client: ClientAPI | None = None,
        *,
        path: str | Path | None = None,
        collection: str = DEFAULT_COLLECTION,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        lexical: LexicalIndex | bool | None = None,
    ) -> None:
        check_chroma_version()
        _check_collection_name(collection)
        self._own_clients: list[ClientAPI] = []
        """The clients this store made (`close` closes them)."""
        self._closed = False
        self._exclusive_lock = threading.RLock()
        self._exclusive_thread: int | None = None
        if client is None:
            folder = Path(path) if path is not None else default_chroma_path()
            folder.mkdir(parents=True, exist_ok=True)
            client = process_lock.open_persistent_client(folder)
            self._own_clients.append(client)
        self.client = client
        self.collection_name = collection
        self._max_batch = client.get_max_batch_size()
        self._folder = process_lock.folder_lock_for(client, self._reopen)
        with self._folder.hold():
            self._items = self._open_collection(client)
            earliest_layout = upgrade.upgrade(self._items, self._max_batch) > 0
            labelled = upgrade.add_second_labels(self._items) > 0
            if earliest_layout or labelled:
                self._folder.writing()
        self.index_config = dict(index) if index else None
        self.embeddings = ensure_embeddings(index.get("embed")) if index else None
        self._fields = plan.index_fields(index.get("fields")) if index else None
        self._stamps = (
            Stamps(client, self._items, max_batch=self._max_batch)
            if client.get_settings().chroma_server_host
            else None
        )
        """On a Chroma server, the namespaces' version stamps this store announces its
        writes in (`engram.stores.chroma.stamps`)."""
        self.lexical: LexicalMirror | None = None
        self._owns_lexical = False
        if index and lexical is not False:
            self._owns_lexical = not isinstance(lexical, LexicalIndex)
            self.lexical = LexicalMirror(
                lexical if isinstance(lexical, LexicalIndex) else lexical_index_for(client),
                self._items,
                [path for path, _ in self._fields],
                stamps=self._stamps if self._owns_lexical else None,
            )
        self._writer = ChromaWriter(
            self._items,
            self.lexical,
            dims=(index or {}).get("dims"),
            default_paths=[path for path, _ in self._fields or []],
            max_batch=self._max_batch,
            stamps=self._stamps,
        )
        self._coalescer = Coalescer(self._run_batch, idle=self._idle_work)
        self.ttl_config = ttl
        self._sweeper: threading.Thread | None = None
        self._stop_sweeping = threading.Event()
        self._remove_tombstones(everyone=True)
        if not relabel.labels_current(self._items):
            relabel.relabel_users(
                self,
                self._items,
                as_typed=earliest_layout,
                lexical=self.lexical.index if self.lexical else None,
            )
        if ttl and ttl.get("sweep_interval_minutes"):
            self.start_ttl_sweeper()

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        collection: str = DEFAULT_COLLECTION,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        lexical: LexicalIndex | bool | None = None,
        tenant: str = DEFAULT_TENANT,
        database: str = DEFAULT_DATABASE,
        headers: dict[str, str] | None = None,
    ) -> ChromaStore:
        """A store on a Chroma server, e.g. `ChromaStore.from_url("http://127.0.0.1:8000")`.

        Raises:
            ValueError: The URL is not `http(s)://host[:port]`.
            ConnectionError: No Chroma server answers at that host and port.
        """
        parsed = urlparse(url)
        if parsed.scheme not in {"http", "https"} or not parsed.hostname:
            raise ValueError(f"Chroma server URL must look like http://host:port, got {url!r}")
        ssl = parsed.scheme == "https"
        port = parsed.port or (443 if ssl else 8000)
        try:
            client = chromadb.HttpClient(
                host=parsed.hostname,
                port=port,
                ssl=ssl,
                headers=headers,
                tenant=tenant,
                database=database,
            )
        except ValueError as exc:
            raise ConnectionError(
                f"cannot reach a Chroma server at {parsed.hostname}:{port} ({exc}); "
                f"start one with `chroma run --host {parsed.hostname} --port {port}` or fix the URL"
            ) from exc
        store = cls(client, collection=collection, index=index, ttl=ttl, lexical=lexical)
        store._own_clients.append(client)
        return store

    @property
    def supports_hybrid(self) -> bool:
        """Whether `batch` answers `HybridSearchOp` (an index and a lexical channel exist)."""
        return self.lexical is not None and self.embeddings is not None

    # -- BaseStore -----------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self._exclusive_thread == threading.get_ident():  # inside `exclusive`: run here
            return self._run_batch(list(ops))
        return self._coalescer.call(list(ops))

    @property
    def exclusive_across_processes(self) -> bool:
        """Whether `exclusive` keeps other processes out: on an embedded folder (a
        `PersistentClient`) it does; on a Chroma server or in memory nothing is shared to hold."""
        return isinstance(self._folder, process_lock.FolderLock)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the data folder across several `batch` calls of this thread, so that no other
        process or thread of the folder calls Chroma in between: a read and the write it
        decides (a compare-and-set) cannot interleave with another's. Keep it short, and use
        this store's `batch` (sync) inside: `abatch`, or another store on the folder, would wait
        for the hold it is in. On a Chroma server or in memory it holds nothing
        (`exclusive_across_processes` is False).

        Example:
            >>> store = ChromaStore(chromadb.EphemeralClient(), collection="doc_exclusive")
            >>> with store.exclusive():
            ...     if store.get(("jobs",), "j1") is None:
            ...         store.put(("jobs",), "j1", {"owner": "me"})
            >>> store.get(("jobs",), "j1").value
            {'owner': 'me'}
        """
        with self._exclusive_lock, self._folder.hold():
            outer, self._exclusive_thread = self._exclusive_thread, threading.get_ident()
            try:
                yield
            finally:
                self._exclusive_thread = outer

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await self._coalescer.acall(list(ops))

    def _run_batch(self, ops: list[Op], from_async: bool = False) -> list[Result]:
        """One batch against Chroma (the coalescer's combined batches come here); with
        `from_async`, writes go in `async_write_chunk` records per call."""
        batch = plan.plan(ops, self._fields)
        read_at = self._read_replaced_held(batch)
        texts = batch.flat_texts()
        doc_vectors = self.embeddings.embed_documents(texts) if texts and self.embeddings else []
        query_vectors = {
            q: self.embeddings.embed_query(q) for q in sorted(batch.queries) if self.embeddings
        }
        write_chunk = self.async_write_chunk if from_async else None
        return self._execute(batch, doc_vectors, query_vectors, write_chunk, read_at)

    # -- TTL -----------------------------------------------------------------------------------

    def sweep_ttl(self) -> AwaitableInt:
        """Delete every expired item and its vectors; returns how many items were deleted.

        Expired items leave no text behind, as deleted ones: when the sweep deleted any, the
        store's files are purged (`purge_deleted`). The count can also be awaited
        (`await store.sweep_ttl()`, as with langgraph's async stores); the sweep itself has run
        by then."""
        now = time.time()
        with self._folder.hold():
            expired = [row for page in scan.pages(self._items, {md.EXPIRES_AT: {"$lt": now}})
                       for row in page]
            if not expired:
                return AwaitableInt(0)
            self._folder.writing()
            items = {  # tombstones go too (Chroma deletes by expiry), but were no items
                i: meta for i, meta in expired if not tombstones.is_tombstone(meta)
            }
            removed = self._writer.delete_expired(now, items)
            self._writer.buried.clear()
            if removed:
                self._purge_held()
            return AwaitableInt(removed)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> AwaitableBool:
        """Sweep expired items periodically in a daemon thread (default: every 5 minutes).

        Returns whether a sweeper runs (True); awaitable like langgraph's async stores' method.
        """
        if self._sweeper and self._sweeper.is_alive():
            return AwaitableBool(True)
        interval = (
            sweep_interval_minutes or (self.ttl_config or {}).get("sweep_interval_minutes") or 5
        )
        self._stop_sweeping.clear()

        def loop() -> None:
            while not self._stop_sweeping.wait(interval * 60):
                try:
                    if removed := self.sweep_ttl():
                        logger.info("TTL sweep removed %d expired items", removed)
                except Exception:  # a sweep failing must not kill the thread; retried next time
                    logger.exception("TTL sweep failed")

        self._sweeper = threading.Thread(target=loop, name="engram-ttl-sweeper", daemon=True)
        self._sweeper.start()
        return AwaitableBool(True)

    def stop_ttl_sweeper(self, timeout: float | None = None) -> AwaitableBool:
        """Stop the sweeper thread; returns whether it stopped within `timeout` seconds
        (awaitable like langgraph's async stores' method)."""
        if not self._sweeper:
            return AwaitableBool(True)
        self._stop_sweeping.set()
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return AwaitableBool(stopped)

    # -- deletion that leaves nothing -----------------------------------------------------------

    def delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete an item and purge it from the store's files (`purge_deleted`): a plain delete
        is someone's wish that it be gone (a LangGraph server's `DELETE /store/items` calls
        this). engram's own deletes go through `batch`, many at a time, and purge once."""
        if self.get(namespace, key) is not None:
            super().delete(namespace, key)
            self.purge_deleted()

    async def adelete(self, namespace: tuple[str, ...], key: str) -> None:
        """Async `delete`."""
        if await self.aget(namespace, key) is not None:
            await super().adelete(namespace, key)
            await self.apurge_deleted()

    def purge_deleted(self) -> PurgeReport:
        """Make what was deleted from this store unrecoverable from its files: Chroma's log rows
        and free pages, the unused room of its vector index files, the BM25 index's merged
        segments and write-ahead log (`engram.stores.chroma.purge`). On a Chroma server only the
        local BM25 index is scrubbed: the server's files are its operator's (docs/privacy.md).

        It holds the data folder like any write (`process_lock`), so no other process writes
        vectors while their files are scrubbed, and the others reload afterwards.

        Raises:
            sqlite3.OperationalError: Another process kept `chroma.sqlite3` locked for 30 s.
        """
        with self._folder.hold():
            return self._purge_held()

    def _purge_held(self) -> PurgeReport:
        """`purge_deleted` holding the data folder."""
        report = PurgeReport()
        settings = self.client.get_settings()
        embedded = settings.is_persistent and not settings.chroma_server_host
        self._folder.writing()
        self._writer.remove_tombstones(everyone=True)
        self._drop_emptied_stamps()
        if embedded and settings.persist_directory:
            report = purge.purge_files(Path(settings.persist_directory), str(self._items.id))
        if self.lexical is not None:
            self.lexical.index.scrub()
        return report

    def _drop_emptied_stamps(self) -> None:
        """Delete the stamps of the namespaces this store deleted from that hold no record
        now (what a person deletes leaves nothing behind, not even a stamp). A write racing
        this loses its stamp, and the namespace is then compared in full before every search
        until its next write: slower, never stale."""
        namespaces, self._writer.deleted_from = self._writer.deleted_from, set()
        if self._stamps is None:
            return
        self._stamps.drop(
            [
                namespace
                for namespace in namespaces
                if not self._items.get(
                    where=md.combine(md.namespace_clauses(namespace)), limit=1, include=[]
                )["ids"]
            ]
        )

    async def apurge_deleted(self) -> PurgeReport:
        """Async `purge_deleted` (runs in a worker thread)."""
        return await asyncio.to_thread(self.purge_deleted)

    def close(self) -> None:
        """Stop background work and close what this store opened: the lexical index, the
        Chroma client it made (not one it was given), its hold on the data folder's files.
        Closing again does nothing; `with ChromaStore(...) as store:` closes it at the end."""
        if self._closed:
            return
        self.stop_ttl_sweeper()
        self._closed = True  # the drain thread's idle work stops: it must not outlive the files
        self._coalescer.join()
        self._remove_tombstones()
        if self.lexical is not None and self._owns_lexical:
            self.lexical.index.close()
        for client in self._own_clients:
            client.close()
        self._own_clients.clear()
        self._folder.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _idle_work(self) -> None:
        """What the drain thread does when no call is queued, until the store is closed."""
        if not self._closed:
            self._remove_tombstones()

    def _remove_tombstones(self, *, everyone: bool = False) -> None:
        """Remove the records of deleted items left as tombstones by this store (with
        `everyone`: by any process, e.g. one that died before it removed its own), if any."""
        if not everyone and not self._writer.buried:
            return
        with self._folder.hold():
            if everyone and not self._items.get(where=tombstones.WHERE, limit=1, include=[])["ids"]:
                return
            self._folder.writing()
            self._writer.remove_tombstones(everyone=everyone)

    # -- execution (the only code that talks to Chroma) ----------------------------------------

    def _execute(
        self,
        batch: plan.Plan,
        doc_vectors: list[list[float]],
        query_vectors: dict[str, list[float]],
        write_chunk: int | None = None,
        read_at: bytes | None = None,
    ) -> list[Result]:
        """Run the batch holding the data folder (`process_lock`); `read_at` is the folder's
        generation when the batch read the items its puts replace."""
        with self._folder.hold() as generation:
            if batch.puts:
                if generation != read_at:
                    doc_vectors = self._read_replaced_again(batch, doc_vectors)
                self._folder.writing()
            try:
                return self._execute_held(batch, doc_vectors, query_vectors, write_chunk)
            except md.ForeignRecordError:  # an earlier engram wrote since the upgrade: again
                upgrade.unmark(self._items, upgrade.LAYOUT)
                raise

    def _execute_held(
        self,
        batch: plan.Plan,
        doc_vectors: list[list[float]],
        query_vectors: dict[str, list[float]],
        write_chunk: int | None = None,
    ) -> list[Result]:
        results: list[Result] = [None] * batch.size
        now = time.time()
        refresh: dict[str, float] = {}
        if batch.gets:
            get_ids = [md.item_id(op.namespace, op.key) for _, op in batch.gets]
            found = (
                self._fetch_items(get_ids, now)
                if batch.got is None
                else _live_items(batch.got.items(), now)
            )
            for (i, op), item_id in zip(batch.gets, get_ids):
                hit = found.get(item_id)
                results[i] = hit[0] if hit else None
                if hit and op.refresh_ttl:
                    _note_refresh(refresh, item_id, hit[1], now)
        for i, op in batch.searches:
            hits = self._search(op, query_vectors.get(op.query or ""), now)
            results[i] = [item for item, _ in hits]
            if op.refresh_ttl:
                for item, meta in hits:
                    _note_refresh(refresh, md.item_id(item.namespace, item.key), meta, now)
        for i, op in batch.hybrids:
            if self.lexical is None or op.query not in query_vectors:
                raise NotImplementedError(
                    "this ChromaStore has no hybrid search: give it an index config (and do not "
                    "pass lexical=False)"
                )
            results[i] = hybrid_search(
                op,
                query_vectors[op.query],
                collection=self._items,
                mirror=self.lexical,
                fetch_items=self._fetch_items,
                now=now,
            )
        for i, op in batch.list_ops:
            results[i] = self._list_namespaces(op, now)
        if refresh:  # expiries only: no stamp announces them (what a search finds stays)
            self._folder.writing()
            ids = list(refresh)
            for chunk in self._chunks(ids):
                self._items.update(
                    ids=chunk, metadatas=[{md.EXPIRES_AT: refresh[i]} for i in chunk]
                )
        if batch.puts:
            self._writer.apply_puts(
                batch, self._vectors_by_item(batch, doc_vectors), now, write_chunk
            )
        return results

    def _read_replaced_held(self, batch: plan.Plan) -> bytes | None:
        """`_read_replaced` holding the data folder; returns its generation then."""
        if not batch.puts:
            return None
        with self._folder.hold() as generation:
            self._read_replaced(batch)
        return generation

    def _read_replaced_again(
        self, batch: plan.Plan, doc_vectors: list[list[float]]
    ) -> list[list[float]]:
        """Another write came between the batch's read of the items it replaces and now: read
        them again, embed the texts of items whose vectors can no longer be kept, and return
        the vectors of the texts the batch now embeds (`plan.Plan.flat_texts`)."""
        vectors = self._vectors_by_item(batch, doc_vectors)
        batch.previous.clear()
        batch.reused.clear()
        self._read_replaced(batch)
        missing = [i for i in batch.texts if i not in batch.reused and i not in vectors]
        if missing and self.embeddings is not None:
            texts = [t for i in missing for t in batch.texts[i]]
            embedded = iter(self.embeddings.embed_documents(texts))
            vectors.update({i: [next(embedded) for _ in batch.texts[i]] for i in missing})
        return [v for i in batch.texts if i not in batch.reused for v in vectors[i]]

    def _reopen(self) -> None:
        """Another process changed the data folder: read the collection afresh from disk (a
        client this store made restarts in place; one it was given, which its owner may be
        using meanwhile, is left alone for a client on a new Chroma system)."""
        if any(c is self.client for c in self._own_clients):
            process_lock.reload_client(self.client)
        else:
            self.client = process_lock.client_on_new_system(self.client)
        self._items = self._open_collection(self.client)
        self._writer.collection = self._items
        if self.lexical is not None:
            self.lexical.collection = self._items

    def _open_collection(self, client: ClientAPI) -> Collection:
        # a new collection has nothing of an earlier engram to upgrade or relabel
        metadata = {
            "hnsw:space": "cosine",
            relabel.LABELS_MARK: relabel.LABELS_VERSION,
            **upgrade.CURRENT,
        }
        return client.get_or_create_collection(
            self.collection_name, embedding_function=None, metadata=metadata
        )

    def _read_replaced(self, batch: plan.Plan) -> None:
        """Read the metadata of the items the batch's puts replace, before anything is embedded:
        an item whose indexed texts did not change keeps its vectors (no embedding call)."""
        if not batch.puts:
            return
        put_ids = set(batch.ids.values())
        get_ids = {md.item_id(op.namespace, op.key) for _, op in batch.gets}
        batch.got = {}
        for chunk in self._chunks(list(put_ids | get_ids)):  # the gets' items: the same read
            got = self._items.get(ids=chunk, include=["metadatas"])
            for item_id, meta in zip(got["ids"], got["metadatas"]):
                if item_id in put_ids:
                    batch.previous[item_id] = meta
                if item_id in get_ids:
                    batch.got[item_id] = meta
        if reusable := batch.reusable():
            got = self._items.get(ids=reusable, include=["embeddings"])
            batch.reused.update(
                (i, [float(x) for x in v]) for i, v in zip(got["ids"], got["embeddings"])
            )

    def _fetch_items(
        self, ids: Sequence[str], now: float
    ) -> dict[str, tuple[Item, dict[str, Any]]]:
        """Live items by Chroma id (expired ones are left out), with their metadata."""
        found: dict[str, tuple[Item, dict[str, Any]]] = {}
        for chunk in self._chunks(list(dict.fromkeys(ids))):
            got = self._items.get(ids=chunk, include=["metadatas"])
            found.update(_live_items(zip(got["ids"], got["metadatas"]), now))
        return found

    def _search(
        self, op: SearchOp, query_vector: list[float] | None, now: float
    ) -> list[tuple[SearchItem, dict[str, Any]]]:
        if op.query and query_vector is not None and self.embeddings is not None:
            return self._vector_search(op, query_vector, now)
        where = md.combine(md.prefix_clauses(op.namespace_prefix) + md.filter_clauses(op.filter))
        found = scan.newest(self._items, where, op.filter, op.offset + op.limit, now)
        return [(_search_item(_item(meta), None), meta) for _, meta in found[op.offset :]]

    def _vector_search(
        self, op: SearchOp, query_vector: list[float], now: float
    ) -> list[tuple[SearchItem, dict[str, Any]]]:
        if op.limit <= 0:
            return []
        wanted = op.offset + op.limit
        where = md.filter_clauses(op.filter)
        if where and self.lexical is not None:
            # First the namespace's nearest items, found among its ids (from the BM25 mirror)
            # and filtered here: far faster than Chroma's metadata filter when most items pass.
            hits, exhausted = self._nearest_page(op, query_vector, _POST_FILTER * wanted, [], now)
            if exhausted or len(hits) >= op.limit:
                return hits
        n = wanted + 1  # one beyond the page: the last of a pool may tie with records beyond
        while True:
            hits, exhausted = self._nearest_page(op, query_vector, n, where, now)
            if exhausted or len(hits) >= op.limit:
                return hits
            n *= 4

    def _nearest_page(
        self,
        op: SearchOp,
        query_vector: list[float],
        n: int,
        where: list[dict[str, Any]],
        now: float,
    ) -> tuple[list[tuple[SearchItem, dict[str, Any]]], bool]:
        """The page of `op` among the `n` nearest records passing `where`, and whether the
        namespace ran out of records before `n`."""
        scores, exhausted, records = nearest(
            self._items,
            self.lexical,
            op.namespace_prefix,
            query_vector,
            n,
            exact=False,
            where=where,
            now=now,
            read=n <= _READ_WITH_QUERY,
        )
        ranked = _settled_ranking(scores, exhausted)
        known = {i: (_item(meta), meta) for i, meta in records.items()}
        return self._page(ranked, scores, op, now, known), exhausted

    def _page(
        self,
        ranked_ids: list[str],
        scores: dict[str, float],
        op: SearchOp,
        now: float,
        known: dict[str, tuple[Item, dict[str, Any]]] | None = None,
    ) -> list[tuple[SearchItem, dict[str, Any]]]:
        """Walk ids in rank order, keep items whose values pass the filter, cut offset/limit.

        With scores (a vector search), items whose vector is a placeholder are skipped. Items
        in `known` (already read with the query) are not read again.
        """
        wanted = op.offset + op.limit
        kept: list[tuple[SearchItem, dict[str, Any]]] = []
        step = max(wanted * 2, 64) if op.filter else wanted
        position = 0
        while position < len(ranked_ids) and len(kept) < wanted:
            ids = ranked_ids[position : position + step]
            position += len(ids)
            known = known or {}
            found = {**known, **self._fetch_items([i for i in ids if i not in known], now)}
            for item_id in ids:
                if item_id not in found:
                    continue
                item, meta = found[item_id]
                if scores and not md.checked_record(meta).has_vectors:
                    continue
                if md.matches_filter(item.value, op.filter):
                    kept.append((_search_item(item, scores.get(item_id)), meta))
        return kept[op.offset : wanted]

    def _list_namespaces(self, op: ListNamespacesOp, now: float) -> list[tuple[str, ...]]:
        clauses: list[dict[str, Any]] = []
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix":
                clauses += md.listing_clauses(tuple(condition.path))
        namespaces = scan.namespaces(self._items, md.combine(clauses), now)
        conditions = op.match_conditions or ()
        matching = [ns for ns in namespaces if all(_namespace_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            matching = list({ns[: op.max_depth] for ns in matching})
        return sorted(matching)[op.offset : op.offset + op.limit]

    def _vectors_by_item(
        self, batch: plan.Plan, doc_vectors: list[list[float]]
    ) -> dict[str, list[list[float]]]:
        dims = (self.index_config or {}).get("dims")
        for vector in doc_vectors:
            if dims and len(vector) != dims:
                raise ValueError(
                    f"the embedding function returned {len(vector)}-dimensional vectors but the "
                    f"index config says dims={dims}: fix `dims` or the `embed` function"
                )
        by_item: dict[str, list[list[float]]] = {}
        position = 0
        for item_id, texts in batch.texts.items():
            if item_id not in batch.reused:
                by_item[item_id] = doc_vectors[position : position + len(texts)]
                position += len(texts)
        return by_item

    def _chunks(self, rows: list[Any], size: int | None = None) -> Iterator[list[Any]]:
        size = min(size or self._max_batch, self._max_batch)
        for start in range(0, len(rows), size):
            yield rows[start : start + size]


def make_store() -> ChromaStore:
    """engram's default store, and the zero-argument factory `langgraph.json` names.

    A Chroma server when `$ENGRAM_CHROMA_URL` is set, else the embedded `PersistentClient` in
    the data folder, with `default_index()`: the local all-MiniLM-L6-v2 embeddings on each
    item's `content`.
    """
    index = default_index()
    if url := os.environ.get("ENGRAM_CHROMA_URL"):
        return ChromaStore.from_url(url, index=index)
    return ChromaStore(index=index)


def default_index(embeddings: Embeddings | None = None) -> IndexConfig:
    """engram's index config: `embeddings` (default: a warmed-up `LocalEmbeddings`, so that the
    first recall of a process does not pay for loading the model) on each item's `content`,
    which is what memories and archived messages hold."""
    if embeddings is None:
        from engram.stores.embeddings import LocalEmbeddings

        embeddings = LocalEmbeddings()
        embeddings.embed_query("warm-up")
    dims = getattr(embeddings, "dims", None) or len(embeddings.embed_query("dims"))
    return {"dims": dims, "embed": embeddings, "fields": ["content"]}


# -- small helpers -----------------------------------------------------------------------------


def _check_collection_name(name: str) -> None:
    if not _COLLECTION_NAME.fullmatch(name):
        raise ValueError(
            f"invalid collection name {name!r}: use 3-512 characters of [a-zA-Z0-9._-], "
            "starting and ending with a letter or digit"
        )


def _note_refresh(
    refresh: dict[str, float], item_id: str, meta: dict[str, Any], now: float
) -> None:
    if (minutes := md.checked_record(meta).ttl_minutes) is not None:
        refresh[item_id] = now + float(minutes) * 60


def _live_items(
    records: Iterable[tuple[str, dict[str, Any]]], now: float
) -> dict[str, tuple[Item, dict[str, Any]]]:
    """The items of (id, metadata) records, with their metadata; expired ones left out."""
    return {i: (_item(meta), meta) for i, meta in records if not md.expired(meta, now)}


def _settled_ranking(scores: dict[str, float], exhausted: bool) -> list[str]:
    """Item ids best first, equal scores by id, so that pages of any size agree. Unless the
    records ran out, the items tied with the pool's last score are left out: records beyond the
    pool may share that score, and which of them Chroma returned is arbitrary."""
    ranked = sorted(scores, key=lambda item_id: (-scores[item_id], item_id))
    if exhausted or not ranked:
        return ranked
    floor = scores[ranked[-1]]
    return [item_id for item_id in ranked if scores[item_id] > floor]


def _timestamp(value: float) -> datetime:
    return datetime.fromtimestamp(value, tz=timezone.utc)


def _item(meta: dict[str, Any]) -> Item:
    record = md.checked_record(meta)
    return Item(
        value=md.value_of(meta),
        key=record.key,
        namespace=md.namespace_from_metadata(meta),
        created_at=_timestamp(record.created_at),
        updated_at=_timestamp(record.updated_at),
    )


def _search_item(item: Item, score: float | None) -> SearchItem:
    return SearchItem(
        namespace=item.namespace,
        key=item.key,
        value=item.value,
        created_at=item.created_at,
        updated_at=item.updated_at,
        score=score,
    )


def _namespace_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    if not path:
        return True
    return all(p == "*" or p == n for p, n in zip(path, part))
