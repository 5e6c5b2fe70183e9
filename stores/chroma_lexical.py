"""The lexical channel of `ChromaStore`: a `LexicalIndex` mirroring the store's indexed texts.

Every item a put embeds is also a BM25 document (`LexicalIndex`, SQLite FTS5): its text is what
the item's index fields select (what is embedded), its context the value's `"context"` string if
it has one (text that helps find the item without being it, such as the messages before an
archived one). One lexical scope per collection and namespace, so BM25's statistics are a user's
own and a namespace can be dropped whole.

Consistency with Chroma: `ChromaStore` writes Chroma first and the index second, in the same
`batch`. Each item's metadata records the digest of its lexical document, so the index can be
checked against Chroma: before a namespace is first searched in a process (and again after any
failed index write, or every `refresh_seconds` when other machines may write to the same server),
`ensure_fresh` compares the two and replays only the differences. A crash between the two writes
is therefore repaired on the next search, whichever of the two it interrupted.
"""

from __future__ import annotations

import json
import logging
import sqlite3
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection
from langgraph.store.base import get_text_at_path, tokenize_path

from engram.stores import chroma_metadata as md
from engram.stores.lexical import LexicalDocument, LexicalIndex
from engram.stores.paths import default_data_dir

logger = logging.getLogger(__name__)

CONTEXT_FIELD = "context"
"""A value's top-level string field that is lexical context of the item (counts half)."""

REMOTE_REFRESH_SECONDS = 60.0
"""How often a namespace is re-checked against a Chroma server other machines may write to."""


class LexicalMirror:
    """Keeps a `LexicalIndex` equal to the lexical documents of a Chroma collection's items.

    Args:
        index: The BM25 index.
        collection: Name of the Chroma collection (part of every scope).
        default_paths: The store's index `fields`, for items put without their own.
        refresh_seconds: Re-check a namespace against Chroma this often; None: only once per
            process and after failed writes (right when this process is the only writer).
    """

    def __init__(
        self,
        index: LexicalIndex,
        collection: str,
        default_paths: list[str],
        *,
        refresh_seconds: float | None = None,
    ) -> None:
        self.index = index
        self.collection = collection
        self.default_paths = default_paths
        self.refresh_seconds = refresh_seconds
        self._checked: dict[str, float] = {}
        self._lock = threading.Lock()

    def scope(self, namespace: Sequence[str]) -> str:
        """The index scope of a namespace (labels never contain `.`)."""
        return f"{self.collection}/{'.'.join(namespace)}"

    # -- writes (called by ChromaStore after its Chroma writes) -------------------------------

    def apply(
        self,
        upserts: Iterable[tuple[tuple[str, ...], LexicalDocument]],
        deletes: Iterable[tuple[tuple[str, ...], str]],
    ) -> None:
        """Upsert and delete documents; a failure is logged and the namespaces re-checked later."""
        by_scope: dict[str, tuple[list[LexicalDocument], list[str]]] = {}
        for namespace, doc in upserts:
            by_scope.setdefault(self.scope(namespace), ([], []))[0].append(doc)
        for namespace, item_id in deletes:
            by_scope.setdefault(self.scope(namespace), ([], []))[1].append(item_id)
        for scope, (docs, ids) in by_scope.items():
            try:
                if ids:
                    self.index.delete(scope, ids)
                if docs:
                    self.index.upsert(scope, docs)
                elif ids and self.index.count(scope) == 0:
                    self.index.drop_scope(scope)
            except sqlite3.Error:
                logger.warning(
                    "lexical index write failed for %s; it is repaired from Chroma before the "
                    "next search of that namespace",
                    scope,
                    exc_info=True,
                )
                self._forget_check(scope)

    # -- reads --------------------------------------------------------------------------------

    def search(self, namespace: tuple[str, ...], query: str, limit: int) -> list[tuple[str, float]]:
        """(item id, BM25 score), best first."""
        return self.index.search(self.scope(namespace), query, limit=limit)

    def ensure_fresh(self, namespace: tuple[str, ...], items: Collection, now: float) -> None:
        """Make the namespace's documents equal Chroma's, unless that was checked recently."""
        scope = self.scope(namespace)
        with self._lock:
            checked = self._checked.get(scope)
            if checked is not None and (
                self.refresh_seconds is None or time.monotonic() - checked < self.refresh_seconds
            ):
                return
            self._reconcile(namespace, scope, items, now)
            self._checked[scope] = time.monotonic()

    def forget_ghost(self, namespace: tuple[str, ...]) -> None:
        """A searched document had no item in Chroma: re-check the namespace next time."""
        self._forget_check(self.scope(namespace))

    # -- documents ----------------------------------------------------------------------------

    def document(self, item_id: str, value: dict[str, Any], texts: Sequence[str]) -> LexicalDocument:
        """The lexical document of an item whose index fields selected `texts`."""
        context = value.get(CONTEXT_FIELD)
        return LexicalDocument(
            item_id, "\n".join(texts), context if isinstance(context, str) else ""
        )

    def texts_of(self, value: dict[str, Any], paths: list[str] | None) -> list[str]:
        """What the index fields `paths` (default: the store's) select from `value`."""
        return [
            text
            for path in (paths or self.default_paths)
            for text in get_text_at_path(value, path if path == "$" else tokenize_path(path))
        ]

    # -- private ------------------------------------------------------------------------------

    def _forget_check(self, scope: str) -> None:
        with self._lock:
            self._checked.pop(scope, None)

    def _reconcile(self, namespace: tuple[str, ...], scope: str, items: Collection, now: float) -> None:
        where = md.combine(md.namespace_clauses(namespace))
        got = items.get(where=where, include=["metadatas"])
        wanted = {
            item_id: meta[md.LEXICAL]
            for item_id, meta in zip(got["ids"], got["metadatas"])
            if md.ITEM_ID not in meta and meta.get(md.LEXICAL) and not md.expired(meta, now)
        }
        have = self.index.digests(scope)
        stale = [i for i in have if i not in wanted]
        missing = [i for i, digest in wanted.items() if have.get(i) != digest]
        docs: list[LexicalDocument] = []
        for start in range(0, len(missing), 1000):
            chunk = items.get(ids=missing[start : start + 1000], include=["documents", "metadatas"])
            for item_id, document, meta in zip(chunk["ids"], chunk["documents"], chunk["metadatas"]):
                value = json.loads(document)
                paths = json.loads(meta[md.INDEX_PATHS]) if meta.get(md.INDEX_PATHS) else None
                docs.append(self.document(item_id, value, self.texts_of(value, paths)))
        if stale or docs:
            logger.info(
                "lexical index of %s repaired from Chroma: %d added or updated, %d removed",
                scope, len(docs), len(stale),
            )
            self.apply([(namespace, d) for d in docs], [(namespace, i) for i in stale])


def lexical_index_for(client: ClientAPI, collection: str) -> tuple[LexicalIndex, float | None]:
    """Where a store on `client` keeps its lexical index, and how often to re-check it.

    A `PersistentClient`: `lexical.sqlite3` in its own folder, beside Chroma's files. A Chroma
    server: a file per server, tenant and database under `$ENGRAM_DATA_DIR/lexical/`, re-checked
    every `REMOTE_REFRESH_SECONDS` (other machines may write). Otherwise (an in-memory client):
    in memory too.
    """
    settings = client.get_settings()
    if settings.chroma_server_host:
        tenant = getattr(client, "tenant", "default_tenant")
        database = getattr(client, "database", "default_database")
        name = f"{settings.chroma_server_host}-{settings.chroma_server_http_port}-{tenant}-{database}"
        folder = default_data_dir() / "lexical" / _safe(name)
        return LexicalIndex(folder), REMOTE_REFRESH_SECONDS
    if settings.is_persistent and settings.persist_directory:
        return LexicalIndex(Path(settings.persist_directory)), None
    return LexicalIndex(), None


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
