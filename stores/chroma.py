"""`ChromaStore`: a LangGraph `BaseStore` over Chroma (embedded, in-memory or a server).

Each item is one record of the collection `<collection>` (the value as a JSON document, the
namespace and timestamps as metadata); each embedded text is one record of
`<collection>.vectors` pointing back at its item. Only `batch`/`abatch` are implemented: every
public method of `BaseStore` builds ops and calls them. Both share one plan (pure) and one Chroma
execution; only the embedding calls differ between sync and async.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import chromadb
from chromadb.api import ClientAPI
from chromadb.config import DEFAULT_DATABASE, DEFAULT_TENANT
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from engram.stores import chroma_metadata as md
from engram.stores.paths import default_chroma_path

logger = logging.getLogger(__name__)

DEFAULT_COLLECTION = "engram"
_PLACEHOLDER_EMBEDDING = [0.0]
_COLLECTION_NAME = re.compile(r"[a-zA-Z0-9][a-zA-Z0-9._-]{1,502}[a-zA-Z0-9]")


class ChromaStore(BaseStore):
    """A LangGraph store whose items and vectors live in Chroma.

    Args:
        client: Any chromadb client (`PersistentClient`, `EphemeralClient`, `HttpClient`).
            Default: a `PersistentClient` at `path`.
        path: Folder of the default `PersistentClient`; default `$ENGRAM_DATA_DIR/chroma`,
            i.e. `./.engram/chroma`.
        collection: Name of the items collection (3-512 chars of `[a-zA-Z0-9._-]`); vectors go
            to `<collection>.vectors`.
        index: LangGraph's `IndexConfig` (`dims`, `embed`, `fields`) enabling semantic search.
        ttl: LangGraph's `TTLConfig`; with `sweep_interval_minutes` a background sweeper starts.

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

    def __init__(
        self,
        client: ClientAPI | None = None,
        *,
        path: str | Path | None = None,
        collection: str = DEFAULT_COLLECTION,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        if client is None:
            folder = Path(path) if path is not None else default_chroma_path()
            folder.mkdir(parents=True, exist_ok=True)
            client = chromadb.PersistentClient(path=str(folder))
        _check_collection_name(collection)
        self.client = client
        self.collection_name = collection
        self._items = client.get_or_create_collection(collection, embedding_function=None)
        self.index_config = dict(index) if index else None
        self.embeddings = ensure_embeddings(index.get("embed")) if index else None
        self._fields = [
            (p, p if p == "$" else tokenize_path(p)) for p in ((index or {}).get("fields") or ["$"])
        ]
        self._vectors = (
            client.get_or_create_collection(
                f"{collection}.vectors",
                embedding_function=None,
                metadata={"hnsw:space": "cosine"},
            )
            if index
            else None
        )
        self._max_batch = client.get_max_batch_size()
        self.ttl_config = ttl
        self._sweeper: threading.Thread | None = None
        self._stop_sweeping = threading.Event()
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
        return cls(client, collection=collection, index=index, ttl=ttl)

    # -- BaseStore -----------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        plan = _plan(ops, self._fields if self.embeddings else None)
        doc_vectors: list[list[float]] = []
        query_vectors: dict[str, list[float]] = {}
        if self.embeddings and plan.texts:
            doc_vectors = self.embeddings.embed_documents([t.text for t in plan.texts])
        if self.embeddings and plan.queries:
            query_vectors = {q: self.embeddings.embed_query(q) for q in plan.queries}
        return self._execute(plan, doc_vectors, query_vectors)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        plan = _plan(ops, self._fields if self.embeddings else None)
        doc_vectors: list[list[float]] = []
        query_vectors: dict[str, list[float]] = {}
        if self.embeddings and plan.texts:
            doc_vectors = await self.embeddings.aembed_documents([t.text for t in plan.texts])
        if self.embeddings and plan.queries:
            queries = sorted(plan.queries)
            vectors = await asyncio.gather(*(self.embeddings.aembed_query(q) for q in queries))
            query_vectors = dict(zip(queries, vectors))
        return await asyncio.to_thread(self._execute, plan, doc_vectors, query_vectors)

    # -- TTL -----------------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every expired item and its vectors; returns how many items were deleted."""
        expired = self._items.get(where={md.EXPIRES_AT: {"$lt": time.time()}}, include=[])["ids"]
        self._delete_items(expired)
        return len(expired)

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> None:
        """Sweep expired items periodically in a daemon thread (default: every 5 minutes)."""
        if self._sweeper and self._sweeper.is_alive():
            return
        interval = sweep_interval_minutes or (self.ttl_config or {}).get(
            "sweep_interval_minutes"
        ) or 5
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

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; returns whether it stopped within `timeout` seconds."""
        if not self._sweeper:
            return True
        self._stop_sweeping.set()
        self._sweeper.join(timeout)
        stopped = not self._sweeper.is_alive()
        if stopped:
            self._sweeper = None
        return stopped

    def close(self) -> None:
        """Stop background work. The Chroma client itself needs no closing."""
        self.stop_ttl_sweeper()

    # -- execution (the only code that talks to Chroma) ----------------------------------------

    def _execute(
        self,
        plan: _Plan,
        doc_vectors: list[list[float]],
        query_vectors: dict[str, list[float]],
    ) -> list[Result]:
        results: list[Result] = [None] * plan.size
        now = time.time()
        refresh: dict[str, float] = {}
        if plan.gets:
            get_ids = [md.item_id(op.namespace, op.key) for _, op in plan.gets]
            found = self._fetch_items(get_ids, now)
            for (i, op), item_id in zip(plan.gets, get_ids):
                hit = found.get(item_id)
                results[i] = hit[0] if hit else None
                if hit and op.refresh_ttl:
                    _note_refresh(refresh, item_id, hit[1], now)
        for i, op in plan.searches:
            hits = self._search(op, query_vectors.get(op.query or ""), now)
            results[i] = [item for item, _ in hits]
            if op.refresh_ttl:
                for item, meta in hits:
                    _note_refresh(refresh, md.item_id(item.namespace, item.key), meta, now)
        for i, op in plan.list_ops:
            results[i] = self._list_namespaces(op, now)
        if refresh:
            ids = list(refresh)
            for start in range(0, len(ids), self._max_batch):
                chunk = ids[start : start + self._max_batch]
                self._items.update(ids=chunk, metadatas=[{md.EXPIRES_AT: refresh[i]} for i in chunk])
        if plan.puts:
            self._apply_puts(plan, doc_vectors, now)
        return results

    def _fetch_items(
        self, ids: Sequence[str], now: float
    ) -> dict[str, tuple[Item, dict[str, Any]]]:
        """Live items by Chroma id (expired ones are left out), with their metadata."""
        found: dict[str, tuple[Item, dict[str, Any]]] = {}
        unique = list(dict.fromkeys(ids))
        for start in range(0, len(unique), self._max_batch):
            got = self._items.get(
                ids=unique[start : start + self._max_batch], include=["documents", "metadatas"]
            )
            for item_id, doc, meta in zip(got["ids"], got["documents"], got["metadatas"]):
                if not _expired(meta, now):
                    found[item_id] = (_item(doc, meta), meta)
        return found

    def _search(
        self, op: SearchOp, query_vector: list[float] | None, now: float
    ) -> list[tuple[SearchItem, dict[str, Any]]]:
        where = md.combine(md.prefix_clauses(op.namespace_prefix) + md.filter_clauses(op.filter))
        wanted = op.offset + op.limit
        if op.query and query_vector is not None and self._vectors is not None:
            return self._vector_search(op, query_vector, where, wanted, now)
        got = self._items.get(where=where, include=["metadatas"])
        rows = [
            (item_id, meta)
            for item_id, meta in zip(got["ids"], got["metadatas"])
            if not _expired(meta, now)
        ]
        rows.sort(key=lambda row: (row[1][md.UPDATED_AT], row[0]), reverse=True)
        ordered = [item_id for item_id, _ in rows]
        return self._page(ordered, {}, op, wanted, now)

    def _vector_search(
        self,
        op: SearchOp,
        query_vector: list[float],
        where: dict[str, Any] | None,
        wanted: int,
        now: float,
    ) -> list[tuple[SearchItem, dict[str, Any]]]:
        assert self._vectors is not None
        n = max(wanted * 3, 10)
        while True:
            res = self._vectors.query(
                query_embeddings=[query_vector],
                n_results=n,
                where=where,
                include=["metadatas", "distances"],
            )
            scores: dict[str, float] = {}
            for meta, distance in zip(res["metadatas"][0], res["distances"][0]):
                scores.setdefault(meta[md.ITEM_ID], 1.0 - float(distance))  # best vector first
            hits = self._page(list(scores), scores, op, wanted, now)
            exhausted = len(res["ids"][0]) < n
            if exhausted or len(hits) >= op.limit or n >= 1_000_000:
                return hits
            n *= 4

    def _page(
        self,
        ordered_ids: list[str],
        scores: dict[str, float],
        op: SearchOp,
        wanted: int,
        now: float,
    ) -> list[tuple[SearchItem, dict[str, Any]]]:
        """Walk ids in rank order, keep those whose values pass the filter, cut offset/limit."""
        kept: list[tuple[SearchItem, dict[str, Any]]] = []
        chunk = max(wanted * 2, 64) if op.filter else wanted
        position = 0
        while position < len(ordered_ids) and len(kept) < wanted:
            ids = ordered_ids[position : position + chunk]
            position += len(ids)
            found = self._fetch_items(ids, now)
            for item_id in ids:
                if item_id not in found:
                    continue
                item, meta = found[item_id]
                if md.matches_filter(item.value, op.filter):
                    kept.append((_search_item(item, scores.get(item_id)), meta))
        return kept[op.offset : wanted]

    def _list_namespaces(self, op: ListNamespacesOp, now: float) -> list[tuple[str, ...]]:
        clauses: list[dict[str, Any]] = []
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix":
                clauses += md.exact_prefix_clauses(tuple(condition.path))
        got = self._items.get(where=md.combine(clauses), include=["metadatas"])
        namespaces = {
            md.namespace_from_metadata(meta) for meta in got["metadatas"] if not _expired(meta, now)
        }
        matching = [
            ns for ns in namespaces if all(_namespace_matches(c, ns) for c in op.match_conditions or ())
        ]
        if op.max_depth is not None:
            matching = list({ns[: op.max_depth] for ns in matching})
        return sorted(matching)[op.offset : op.offset + op.limit]

    def _apply_puts(self, plan: _Plan, doc_vectors: list[list[float]], now: float) -> None:
        self._check_dims(doc_vectors)
        writes = [op for op in plan.puts.values() if op.value is not None]
        deletes = [md.item_id(op.namespace, op.key) for op in plan.puts.values() if op.value is None]
        ids = [md.item_id(op.namespace, op.key) for op in writes]
        previous: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), self._max_batch):
            got = self._items.get(ids=ids[start : start + self._max_batch], include=["metadatas"])
            previous.update(zip(got["ids"], got["metadatas"]))
        metadatas = [_item_metadata(op, previous.get(i), now) for op, i in zip(writes, ids)]
        documents = [json.dumps(op.value, ensure_ascii=False) for op in writes]
        for start in range(0, len(ids), self._max_batch):
            end = start + self._max_batch
            self._items.upsert(
                ids=ids[start:end],
                documents=documents[start:end],
                metadatas=metadatas[start:end],
                embeddings=[_PLACEHOLDER_EMBEDDING] * len(ids[start:end]),
            )
        if self._vectors is not None and ids:
            self._replace_vectors(ids, plan, doc_vectors, dict(zip(ids, metadatas)))
        self._delete_items(deletes)

    def _replace_vectors(
        self,
        ids: list[str],
        plan: _Plan,
        doc_vectors: list[list[float]],
        item_metadata: dict[str, dict[str, Any]],
    ) -> None:
        assert self._vectors is not None
        vector_ids = [f"{t.item_id}:{t.path}" for t in plan.texts]
        metadatas = [
            {
                **{k: v for k, v in item_metadata[t.item_id].items() if _copied_to_vectors(k, v)},
                md.ITEM_ID: t.item_id,
                md.PATH: t.path,
            }
            for t in plan.texts
        ]
        for start in range(0, len(vector_ids), self._max_batch):
            end = start + self._max_batch
            self._vectors.upsert(
                ids=vector_ids[start:end],
                embeddings=doc_vectors[start:end],
                metadatas=metadatas[start:end],
            )
        stale = set(self._vector_ids_of(ids)) - set(vector_ids)
        self._delete_vectors(sorted(stale))

    def _delete_items(self, ids: list[str]) -> None:
        """Delete items and then their vectors (a vector without its item is never returned)."""
        for start in range(0, len(ids), self._max_batch):
            self._items.delete(ids=ids[start : start + self._max_batch])
        if self._vectors is not None and ids:
            self._delete_vectors(self._vector_ids_of(ids))

    def _vector_ids_of(self, item_ids: list[str]) -> list[str]:
        assert self._vectors is not None
        found: list[str] = []
        for start in range(0, len(item_ids), self._max_batch):
            chunk = item_ids[start : start + self._max_batch]
            found += self._vectors.get(where={md.ITEM_ID: {"$in": chunk}}, include=[])["ids"]
        return found

    def _delete_vectors(self, vector_ids: list[str]) -> None:
        assert self._vectors is not None
        for start in range(0, len(vector_ids), self._max_batch):
            self._vectors.delete(ids=vector_ids[start : start + self._max_batch])

    def _check_dims(self, doc_vectors: list[list[float]]) -> None:
        dims = (self.index_config or {}).get("dims")
        for vector in doc_vectors:
            if dims and len(vector) != dims:
                raise ValueError(
                    f"the embedding function returned {len(vector)}-dimensional vectors but the "
                    f"index config says dims={dims}: fix `dims` or the `embed` function"
                )


def make_store() -> ChromaStore:
    """Zero-argument factory for `langgraph.json` (`"store": {"path": ...:make_store}`).

    Uses `$ENGRAM_CHROMA_URL` (a Chroma server) when set, else the embedded data folder, with
    the local all-MiniLM-L6-v2 embeddings indexing the whole value.
    """
    import os

    from engram.stores.embeddings import LocalEmbeddings

    index: IndexConfig = {"dims": 384, "embed": LocalEmbeddings(), "fields": ["$"]}
    if url := os.environ.get("ENGRAM_CHROMA_URL"):
        return ChromaStore.from_url(url, index=index)
    return ChromaStore(index=index)


# -- planning (pure) ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Text:
    item_id: str
    path: str
    text: str


@dataclass
class _Plan:
    size: int
    gets: list[tuple[int, GetOp]] = field(default_factory=list)
    searches: list[tuple[int, SearchOp]] = field(default_factory=list)
    list_ops: list[tuple[int, ListNamespacesOp]] = field(default_factory=list)
    puts: dict[tuple[tuple[str, ...], str], PutOp] = field(default_factory=dict)
    texts: list[_Text] = field(default_factory=list)
    queries: set[str] = field(default_factory=set)


def _plan(ops: Iterable[Op], fields: list[tuple[str, Any]] | None) -> _Plan:
    """Validate and group ops; reads see the store as it was before this batch's puts."""
    ops = list(ops)
    plan = _Plan(size=len(ops))
    for i, op in enumerate(ops):
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            plan.gets.append((i, op))
        elif isinstance(op, SearchOp):
            md.validate_filter(op.filter)
            plan.searches.append((i, op))
            if op.query:
                plan.queries.add(op.query)
        elif isinstance(op, ListNamespacesOp):
            plan.list_ops.append((i, op))
        elif isinstance(op, PutOp):
            if not op.namespace:
                raise ValueError("cannot put an item in the empty namespace: give at least one label")
            if op.value is not None and not isinstance(op.value, dict):
                raise ValueError(f"item values must be dicts, got {type(op.value).__name__}")
            plan.puts.pop((op.namespace, op.key), None)  # last put of a key wins
            plan.puts[(op.namespace, op.key)] = op
        else:
            raise ValueError(f"unknown store operation {type(op).__name__}")
    if fields is not None:
        for op in plan.puts.values():
            if op.value is None or op.index is False:
                continue
            paths = fields if op.index is None else [(p, tokenize_path(p)) for p in op.index]
            item_id = md.item_id(op.namespace, op.key)
            for path, tokens in paths:
                texts = get_text_at_path(op.value, tokens)
                for n, text in enumerate(texts):
                    label = f"{path}.{n}" if len(texts) > 1 else path
                    plan.texts.append(_Text(item_id, label, text))
    return plan


# -- small helpers -----------------------------------------------------------------------------


def _item_metadata(op: PutOp, previous: dict[str, Any] | None, now: float) -> dict[str, Any]:
    meta: dict[str, Any] = {
        **md.namespace_metadata(op.namespace),
        md.KEY: op.key,
        md.CREATED_AT: (previous or {}).get(md.CREATED_AT, now),
        md.UPDATED_AT: now,
        **md.value_metadata(op.value or {}),
    }
    if op.ttl is not None:
        meta[md.TTL_MINUTES] = float(op.ttl)
        meta[md.EXPIRES_AT] = now + float(op.ttl) * 60
    for stale in set(previous or {}) - set(meta):
        meta[stale] = None  # Chroma merges metadata on upsert; None removes the old field
    return meta


def _check_collection_name(name: str) -> None:
    if not _COLLECTION_NAME.fullmatch(name):
        raise ValueError(
            f"invalid collection name {name!r}: use 3-504 characters of [a-zA-Z0-9._-], "
            "starting and ending with a letter or digit"
        )


def _copied_to_vectors(key: str, value: Any) -> bool:
    if value is None:
        return False
    return key.startswith((md.VALUE_PREFIX, md.LONG_PREFIX, "ns."))


def _expired(meta: dict[str, Any], now: float) -> bool:
    expires = meta.get(md.EXPIRES_AT)
    return expires is not None and expires <= now


def _note_refresh(refresh: dict[str, float], item_id: str, meta: dict[str, Any], now: float) -> None:
    if (minutes := meta.get(md.TTL_MINUTES)) is not None:
        refresh[item_id] = now + float(minutes) * 60


def _timestamp(value: float) -> datetime:
    return datetime.fromtimestamp(value, tz=timezone.utc)


def _item(document: str, meta: dict[str, Any]) -> Item:
    return Item(
        value=json.loads(document),
        key=meta[md.KEY],
        namespace=md.namespace_from_metadata(meta),
        created_at=_timestamp(meta[md.CREATED_AT]),
        updated_at=_timestamp(meta[md.UPDATED_AT]),
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
