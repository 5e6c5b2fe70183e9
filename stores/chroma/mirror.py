"""The lexical channel of `ChromaStore`: a `LexicalIndex` mirroring the store's indexed texts.

Every item a put embeds is also a BM25 document (`LexicalIndex`, SQLite FTS5): its text is what
the item's index fields select (what is embedded), its context the value's `"context"` string if
it has one (text that helps find the item without being it, such as the messages before an
archived one). One lexical scope per collection and namespace, so BM25's statistics are a user's
own and a namespace can be dropped whole.

Consistency with Chroma, in three parts:

- every write journals the ids it is about to change (`LexicalIndex.mark_pending`, committed)
  before it touches Chroma, and the index write that follows clears them; after a crash, the ids
  still journaled are re-read from Chroma before their namespace is next searched, whichever of
  the two writes the crash interrupted;
- an index file that has never mirrored the collection (new, deleted, or data written by an
  engram without the lexical channel) is rebuilt from Chroma once;
- against a Chroma server, which other machines may write to, a namespace is compared with
  Chroma in full before a search when its version stamp (`engram.stores.chroma.stamps`) says
  another store wrote to it since the last comparison, or it has no stamp.

The mirror also lists a namespace's indexed items, which lets a vector search ask Chroma for those
ids instead of a metadata filter (several times faster), as long as none of them has extra
vectors (records of their own that the list does not name): a namespace where some item has is
noted, and searched by metadata. On a server, only a namespace's own ids are listed (a prefix
may have namespaces below it that only other machines know of).
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from langgraph.store.base import get_text_at_path, tokenize_path

from engram.stores.chroma import metadata as md
from engram.stores.chroma.plan import item_document
from engram.stores.chroma.stamps import Stamp, Stamps
from engram.stores.lexical.index import LexicalDocument, LexicalIndex
from engram.stores.paths import default_data_dir

logger = logging.getLogger(__name__)

SIZE_SECONDS = 60.0
"""How long the collection's size (`collection_size`, a count Chroma pays for in full) is
reused: it only steers how a search asks Chroma, never what it answers."""

_READ_CHUNK = 1000
_SCAN_PAGE = 10_000

Namespace = tuple[str, ...]


class LexicalIndexError(RuntimeError):
    """The lexical index file cannot be read or written."""


class LexicalMirror:
    """Keeps a `LexicalIndex` equal to the lexical documents of a Chroma collection's items.

    Args:
        index: The BM25 index.
        collection: The Chroma collection it mirrors.
        default_paths: The store's index `fields`, for items put without their own.
        stamps: The namespaces' version stamps on a Chroma server other machines write to
            (None: every writer shares this index file).
    """

    def __init__(
        self,
        index: LexicalIndex,
        collection: Collection,
        default_paths: list[str],
        *,
        stamps: Stamps | None = None,
    ) -> None:
        self.index = index
        self.collection = collection
        self.default_paths = default_paths
        self.stamps = stamps
        self._checked: set[str] = set()
        """Scopes whose journaled writes this process has repaired."""
        self._stamp_read: dict[str, float] = {}
        """Scope -> the batch (its `now`) that last read its stamp: read once per batch."""
        self._ids: dict[str, dict[str, None]] = {}
        self._extras: dict[str, bool] = {}
        """Scope -> its document ids (an ordered set), kept up to date by this mirror's writes."""
        self._size: tuple[float, int] | None = None
        self._data_version: int | None = None
        self._lock = threading.Lock()
        if self.index.get_meta(self._built_key) is None and collection.count() == 0:
            self.index.set_meta(self._built_key, str(time.time()))  # nothing to rebuild from
            self.index.set_meta(self._from_empty_key, "1")  # every namespace seen, empty

    @property
    def _built_key(self) -> str:
        return f"mirrors:{self.collection.id}"

    @property
    def _from_empty_key(self) -> str:
        return f"mirrors-from-empty:{self.collection.id}"

    def scope(self, namespace: Sequence[str]) -> str:
        """The index scope of a namespace (labels never contain `.`)."""
        return f"{self.collection.name}/{'.'.join(namespace)}"

    # -- writes (ChromaStore journals, writes Chroma, then applies) ----------------------------

    @contextmanager
    def writing(self, entries: Iterable[tuple[Namespace, str]]) -> Iterator[None]:
        """Around a Chroma write of these items: journal them first; if the write fails, their
        namespaces are repaired from Chroma before they are next searched.

        Raises:
            LexicalIndexError: The journal cannot be written; the Chroma write does not start.
        """
        scopes = self._by_scope(entries)
        with self._guard("journal a write in"):
            for scope, ids in scopes.items():
                self.index.mark_pending(scope, ids)
        try:
            yield
        except BaseException:
            for scope in scopes:
                self._checked.discard(scope)
            raise

    def apply(
        self,
        upserts: Iterable[tuple[Namespace, LexicalDocument]],
        deletes: Iterable[tuple[Namespace, str]],
        *,
        written: Iterable[Namespace] = (),
    ) -> None:
        """Write the documents Chroma now holds and clear the journal. A failure is logged:
        the ids stay journaled and are repaired before their namespace is next searched.
        `written`: the namespaces this store's write announced in their stamps; the index
        file records that it holds that write (`_note_seen`)."""
        docs = self._by_scope(upserts)
        gone = self._by_scope(deletes)
        unnoted: set[str] = set()  # scopes whose write failed, or that were dropped
        for scope in {*docs, *gone}:
            try:
                if gone.get(scope):
                    self.index.delete(scope, gone[scope])
                if docs.get(scope):
                    self.index.upsert(scope, docs[scope])
                if gone.get(scope) and not docs.get(scope) and self.index.count(scope) == 0:
                    self.index.drop_scope(scope)
                    self.index.delete_meta(f"seen:{scope}")  # it names the namespace
                    unnoted.add(scope)
            except sqlite3.Error:
                logger.warning(
                    "lexical index write failed for %s; it is repaired from Chroma before the "
                    "next search of that namespace",
                    scope,
                    exc_info=True,
                )
                self._checked.discard(scope)
                self._ids.pop(scope, None)
                unnoted.add(scope)
                continue
            if (cached := self._ids.get(scope)) is not None:
                for item_id in gone.get(scope, ()):
                    cached.pop(item_id, None)
                cached.update(dict.fromkeys(d.id for d in docs.get(scope, ())))
        if self.stamps is not None:
            self._note_seen([ns for ns in written if self.scope(ns) not in unnoted], self.stamps)

    # -- reads --------------------------------------------------------------------------------

    def ensure_fresh(self, namespace: Namespace, now: float) -> None:
        """Repair what a crash may have left different and, on a server, what other stores
        wrote (their stamps say), before a search in the batch of `now`."""
        scope = self.scope(namespace)
        with self._lock, self._guard("read"):
            self._ensure_built(now)
            if scope not in self._checked:
                self._repair(scope, self.index.pending().get(scope, []), now)
                self._checked.add(scope)
                self._ids.pop(scope, None)
            if self.stamps is not None and self._stamp_read.get(scope) != now:
                self._stamp_read[scope] = now
                self._compare(namespace, self.stamps, now)

    def _compare(self, namespace: Namespace, stamps: Stamps, now: float) -> None:
        """Compare the namespace with the server in full, unless its stamp says no other store
        wrote to it since the index file last saw it (`_seen`). The stamp is read before the
        items: a write that lands during the comparison changes the stamp after it, and costs
        one comparison more, never a stale search. Call with the lock held."""
        scope = self.scope(namespace)
        stamp = stamps.read(namespace)
        seen = self._seen(scope)
        if stamp is not None and seen is not None and stamp.others_as_in(seen):
            return
        records = self._reconcile(namespace, now)
        self._ids.pop(scope, None)
        if stamp is None and records:  # written before stamps existed: stamped from now on
            stamp = Stamp({stamps.writer: stamps.stamp([namespace])}, stamps.writer)
        if stamp is not None and stamp.settled and self.index.count(scope):
            self._record_seen(scope, stamp.keys)  # (a write in flight may land after the
            # comparison: never recorded, never trusted; an empty scope is cheap to compare)

    def _seen(self, scope: str) -> dict[str, str] | None:
        """The stamp keys whose writes the index file holds for the scope, and no other key
        had written: those read before its last full comparison, updated by this file's own
        writes since; None if unknown. A file that began mirroring the collection when it was
        empty has seen every namespace without a key."""
        raw = self.index.get_meta(f"seen:{scope}")
        if raw is not None:
            return json.loads(raw)
        return {} if self.index.get_meta(self._from_empty_key) is not None else None

    def _record_seen(self, scope: str, keys: dict[str, str]) -> None:
        self.index.set_meta(f"seen:{scope}", json.dumps(keys, sort_keys=True))

    def _note_seen(self, namespaces: Iterable[Namespace], stamps: Stamps) -> None:
        """This store's write to these namespaces, announced with its latest tokens, is in the
        index file."""
        for namespace in namespaces:
            scope = self.scope(namespace)
            try:
                seen, token = self._seen(scope), stamps.token(namespace)
                if seen is None or token is None or seen.get(stamps.writer) == token:
                    continue
                if self.index.count(scope):  # (a record names the namespace: none for nothing)
                    self._record_seen(scope, {**seen, stamps.writer: token})
            except sqlite3.Error:  # other stores of this file compare the namespace once more
                logger.warning("cannot record a write in the lexical index", exc_info=True)

    def _ensure_built(self, now: float) -> None:
        """Drop caches another process's writes made stale; rebuild an index file that has never
        mirrored the collection. Call with the lock held."""
        version = self.index.data_version()
        if version != self._data_version:  # another process wrote to the index file
            self._ids.clear()
            self._extras.clear()
            self._checked.clear()  # its journal may hold a crashed write to repair
            self._data_version = version
        if self.index.get_meta(self._built_key) is None:
            self._reconcile(None, now)
            self.index.set_meta(self._built_key, str(time.time()))
            self._checked.clear()

    def _ids_of(self, scope: str) -> list[str]:
        """The ids of the scope's items that have vectors (and so a lexical document)."""
        ids = self._ids.get(scope)
        if ids is None:
            with self._guard("read"):
                ids = self._ids[scope] = dict.fromkeys(self.index.ids(scope))
        return list(ids)

    def candidate_ids(self, prefix: Namespace, *, exact: bool, now: float) -> list[str] | None:
        """The indexed items under `prefix` (exactly `prefix` with `exact`), for an id-restricted
        vector search; None when a metadata filter must do it (extra vectors; on a server, a
        prefix: other machines may have written namespaces below it that no stamp names)."""
        if self.stamps is not None and not exact:
            return None
        if exact:
            scopes = [self.scope(prefix)]
        else:
            root = self.scope(prefix)
            with self._lock, self._guard("read"):
                self._ensure_built(now)
                scopes = [
                    s
                    for s in self.index.scopes()
                    if s == root or s.startswith(root if not prefix else root + ".")
                ]
        ids: list[str] = []
        for scope in scopes:
            self.ensure_fresh(_namespace_of(scope), now)
            if self.has_extras(scope):
                return None
            ids.extend(self._ids_of(scope))
        return ids

    def collection_size(self) -> int:
        """How many records the collection holds, counted at most every `SIZE_SECONDS`."""
        if self._size is None or time.monotonic() - self._size[0] > SIZE_SECONDS:
            self._size = (time.monotonic(), self.collection.count())
        return self._size[1]

    def has_extras(self, scope: str) -> bool:
        """Whether some item of the scope has (or had) more than one vector."""
        if scope not in self._extras:
            with self._guard("read"):
                self._extras[scope] = self.index.get_meta(f"extras:{scope}") is not None
        return self._extras[scope]

    def note_extras(self, namespaces: Iterable[Namespace]) -> None:
        """Record, before the write, that items of these namespaces get extra vectors."""
        with self._guard("write"):
            for scope in {self.scope(namespace) for namespace in namespaces}:
                if not self.has_extras(scope):
                    self.index.set_meta(f"extras:{scope}", "1")
                    self._extras[scope] = True

    def search(self, namespace: Namespace, query: str, limit: int) -> list[tuple[str, float]]:
        """(item id, BM25 score), best first."""
        with self._guard("search"):
            return self.index.search(self.scope(namespace), query, limit=limit)

    def forget_ghosts(self, ids: Sequence[str]) -> None:
        """Documents of these ids have no item in Chroma: repair them before the next search."""
        ghosts = set(ids)
        with self._guard("journal a repair in"):
            for scope, cached in list(self._ids.items()):
                if found := [i for i in cached if i in ghosts]:
                    self.index.mark_pending(scope, found)
                    self._checked.discard(scope)

    # -- documents ----------------------------------------------------------------------------

    def stored_document(self, item_id: str, meta: dict[str, Any]) -> LexicalDocument:
        """The lexical document of an item as Chroma holds it (its record's metadata)."""
        value = md.value_of(meta)
        record = md.record_of(meta)
        paths = (record.index_paths if record else None) or self.default_paths
        texts = [
            text
            for path in paths
            for text in get_text_at_path(value, path if path == "$" else tokenize_path(path))
        ]
        return item_document(item_id, value, texts)

    # -- private ------------------------------------------------------------------------------

    def _repair(self, scope: str, ids: list[str], now: float) -> None:
        """Re-read journaled ids from Chroma and write what it holds."""
        namespace = _namespace_of(scope)
        docs: list[LexicalDocument] = []
        found: set[str] = set()
        for chunk in _chunks(ids):
            got = self.collection.get(ids=chunk, include=["metadatas"])
            for item_id, meta in zip(got["ids"], got["metadatas"]):
                record = md.record_of(meta)
                if record is None:
                    continue
                if record.has_vectors and not md.expired(meta, now):
                    docs.append(self.stored_document(item_id, meta))
                    found.add(item_id)
                if record.extra_vectors:
                    self.note_extras([namespace])
        if ids:
            logger.info(
                "lexical index of %s: %d journaled writes repaired from Chroma", scope, len(ids)
            )
        self.apply([(namespace, d) for d in docs], [(namespace, i) for i in ids if i not in found])

    def _reconcile(self, namespace: Namespace | None, now: float) -> int:
        """Compare one namespace (or the whole collection) with Chroma and fix the index;
        returns how many records Chroma holds there."""
        where = md.combine(md.namespace_clauses(namespace)) if namespace else None
        wanted: dict[str, dict[str, str]] = {}
        offset = 0
        while True:
            got = self.collection.get(
                where=where, include=["metadatas"], limit=_SCAN_PAGE, offset=offset
            )
            offset += len(got["ids"])
            for item_id, meta in zip(got["ids"], got["metadatas"]):
                record = md.record_of(meta)
                if record is not None and record.has_vectors and not md.expired(meta, now):
                    namespace_of_item = md.namespace_from_metadata(meta)
                    wanted.setdefault(self.scope(namespace_of_item), {})[item_id] = record.digest
                    if record.extra_vectors:
                        self.note_extras([namespace_of_item])
            if len(got["ids"]) < _SCAN_PAGE:
                break
        scopes = [self.scope(namespace)] if namespace else self.index.scopes()
        scopes = [s for s in scopes if s.startswith(f"{self.collection.name}/")]
        for scope in dict.fromkeys([*scopes, *wanted]):
            want = wanted.get(scope, {})
            have = self.index.digests(scope)
            stale = [i for i in have if i not in want]
            missing = [i for i, digest in want.items() if have.get(i) != digest]
            if stale or missing:
                self.index.mark_pending(scope, [*stale, *missing])
                self._repair(scope, [*stale, *missing], now)
        return offset

    def _by_scope(self, entries: Iterable[tuple[Namespace, Any]]) -> dict[str, list[Any]]:
        grouped: dict[str, list[Any]] = {}
        for namespace, entry in entries:
            grouped.setdefault(self.scope(namespace), []).append(entry)
        return grouped

    @contextmanager
    def _guard(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            where = self.index.path or "memory"
            raise LexicalIndexError(
                f"cannot {action} the lexical index ({where}): {exc}; if the file is damaged, "
                "delete it: it is rebuilt from Chroma"
            ) from exc


def lexical_index_for(client: ClientAPI) -> LexicalIndex:
    """Where a store on `client` keeps its lexical index.

    A `PersistentClient`: `lexical.sqlite3` in its own folder, beside Chroma's files. A Chroma
    server: a file per server, tenant and database under `$ENGRAM_DATA_DIR/lexical/`.
    Otherwise (an in-memory client): in memory too.
    """
    settings = client.get_settings()
    if settings.chroma_server_host:
        tenant = getattr(client, "tenant", "default_tenant")
        database = getattr(client, "database", "default_database")
        name = (
            f"{settings.chroma_server_host}-{settings.chroma_server_http_port}-{tenant}-{database}"
        )
        folder = (
            default_data_dir()
            / "lexical"
            / "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
        )
        return LexicalIndex(folder)
    if settings.is_persistent and settings.persist_directory:
        return LexicalIndex(Path(settings.persist_directory))
    return LexicalIndex()


def _chunks(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), _READ_CHUNK):
        yield ids[start : start + _READ_CHUNK]


def _namespace_of(scope: str) -> Namespace:
    return tuple(scope.split("/", 1)[1].split("."))
