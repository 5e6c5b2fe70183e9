"""Data folders written by earlier engram versions open, upgraded, with nothing lost.

The layout-1 records here are written with raw chromadb calls exactly as engram wrote them before
layout 2 (the value as the document; namespace depth, key, timestamps, digest, ... as metadata
fields of their own), so the test does not depend on the code that replaced that writer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import chromadb
import pytest
from fakes import NGramEmbeddings
from langgraph.store.base import PutOp

from engram.stores.chroma import metadata as md
from engram.stores.chroma import upgrade as chroma_upgrade
from engram.stores.chroma.plan import item_document
from engram.stores.chroma.store import ChromaStore
from engram.stores.lexical.hybrid import HybridSearchOp
from engram.stores.namespaces import memory_namespace

EMBED = NGramEmbeddings()
NOW = time.time()


def _index() -> dict[str, Any]:
    return {"dims": 256, "embed": EMBED, "fields": ["content"]}


def _layout1(
    collection: chromadb.Collection,
    namespace: tuple[str, ...],
    key: str,
    value: dict[str, Any],
    *,
    texts: list[str],
    created: float,
    updated: float,
    paths: list[str] | None = None,
    ttl_minutes: float | None = None,
    legacy_indexed: bool = False,
) -> str:
    """Write one item as layout 1 did: the item's record (first vector) and its extra vectors."""
    item_id = md.item_id(namespace, key)
    prefixes = {f"ns.p{d}": json.dumps(list(namespace[:d])) for d in range(1, len(namespace) + 1)}
    scalars = {f"v:{k}": v for k, v in value.items() if isinstance(v, (str, int, float, bool))}
    meta: dict[str, Any] = {
        "ns.depth": len(namespace),
        **prefixes,
        "key": key,
        "created_at": created,
        "updated_at": updated,
        **scalars,
    }
    if texts:
        if legacy_indexed:
            meta["indexed"] = True
        else:
            meta["digest"] = item_document(item_id, value, texts).digest
        if len(texts) > 1:
            meta["extra_vectors"] = len(texts) - 1
        if paths is not None:
            meta["index_paths"] = json.dumps(paths)
    if ttl_minutes is not None:
        meta["ttl_minutes"] = ttl_minutes
        meta["expires_at"] = updated + ttl_minutes * 60
    vectors = EMBED.embed_documents(texts) if texts else [[1.0] + [0.0] * 255]
    collection.upsert(
        ids=[item_id],
        documents=[json.dumps(value, ensure_ascii=False)],
        metadatas=[meta],
        embeddings=[vectors[0]],
    )
    for n, vector in enumerate(vectors[1:], start=1):
        collection.upsert(
            ids=[f"{item_id}:{n}"],
            metadatas=[{**prefixes, "ns.depth": len(namespace), **scalars, "item": item_id}],
            embeddings=[vector],
        )
    return item_id


@pytest.fixture
def old_folder(tmp_path: Path) -> Iterator[Path]:
    """A data folder holding what layout 1 wrote: items of several depths and kinds."""
    client = chromadb.PersistentClient(str(tmp_path))
    raw = client.get_or_create_collection("engram", metadata={"hnsw:space": "cosine"})
    ada = ("memories", "ada")
    _layout1(raw, ada, "editor", {"content": "Ada prefers dark mode in vim", "importance": 0.9},
             texts=["Ada prefers dark mode in vim"], created=1000.0, updated=3000.0)
    _layout1(raw, ada, "stack", {"content": "Ada builds with Nuxt and SQLite", "note": "Drizzle ORM"},
             texts=["Ada builds with Nuxt and SQLite", "Drizzle ORM"], created=1100.0,
             updated=2000.0, paths=["content", "note"])
    _layout1(raw, ada, "laptop", {"content": "the old laptop is a ThinkPad X220"},
             texts=["the old laptop is a ThinkPad X220"], created=1200.0, updated=1500.0,
             legacy_indexed=True)
    _layout1(raw, ada, "plain", {"count": 3}, texts=[], created=1300.0, updated=1300.0)
    _layout1(raw, ada, "session", {"content": "Ada is on a train to Kyoto"},
             texts=["Ada is on a train to Kyoto"], created=NOW, updated=NOW, ttl_minutes=60.0)
    _layout1(raw, ada, "expired", {"content": "Ada was on a train to Osaka"},
             texts=["Ada was on a train to Osaka"], created=1.0, updated=1.0, ttl_minutes=1.0)
    _layout1(raw, ("memories",), "root", {"content": "a memory at the top"},
             texts=["a memory at the top"], created=1400.0, updated=1400.0)
    _layout1(raw, ("episodes", "ada", "t1"), "m1", {"content": "我喜欢数据库"},
             texts=["我喜欢数据库"], created=1500.0, updated=1500.0)
    yield tmp_path


def _open(folder: Path) -> ChromaStore:
    return ChromaStore(chromadb.PersistentClient(str(folder)), index=_index())


def _stamp(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, tz=UTC)


def test_opening_an_old_folder_upgrades_every_record(old_folder):
    store = _open(old_folder)
    got = store._items.get(include=["metadatas", "documents"])
    assert len(got["ids"]) == 9  # 8 items and the extra vector of "stack"
    assert all(chroma_upgrade.DEPTH not in meta for meta in got["metadatas"])
    assert all("key" not in meta and "created_at" not in meta for meta in got["metadatas"])
    for meta, document in zip(got["metadatas"], got["documents"]):
        if md.ITEM_ID not in meta:  # the value moved into metadata; the old document is the same
            assert json.loads(document) == md.value_of(meta)
            assert md.record_of(meta).legacy_document
    assert chroma_upgrade.upgrade(store._items, page=100) == 0  # nothing left to do
    store.close()


def test_upgraded_items_read_exactly_as_they_were_written(old_folder):
    store = _open(old_folder)
    editor = store.get(("memories", "ada"), "editor")
    assert editor.value == {"content": "Ada prefers dark mode in vim", "importance": 0.9}
    assert (editor.created_at, editor.updated_at) == (_stamp(1000.0), _stamp(3000.0))
    assert store.get(("memories", "ada"), "plain").value == {"count": 3}
    assert store.get(("episodes", "ada", "t1"), "m1").value == {"content": "我喜欢数据库"}
    listed = [item.key for item in store.search(("memories", "ada"), limit=10)]
    assert listed == ["session", "editor", "stack", "laptop", "plain"]  # updated_at, newest first
    assert store.get(("memories", "ada"), "expired") is None
    assert store.list_namespaces() == [("episodes", "ada", "t1"), ("memories",), ("memories", "ada")]
    assert [i.key for i in store.search(("memories",), filter={"importance": 0.9})] == ["editor"]
    store.close()


def test_upgraded_items_are_found_by_meaning_and_by_words(old_folder):
    store = _open(old_folder)
    hits = store.search(("memories", "ada"), query="Drizzle ORM", limit=1)
    assert hits[0].key == "stack"  # by its extra vector, which the upgrade kept
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)
    assert store.search(("memories", "ada"), query="ThinkPad X220 laptop")[0].key == "laptop"
    assert all(h.key != "plain" for h in store.search(("memories", "ada"), query="count 3"))
    (hits,) = store.batch([HybridSearchOp(("memories", "ada"), "thinkpad")])
    assert hits[0].item.key == "laptop" and hits[0].lexical is not None  # BM25 rebuilt
    (hits,) = store.batch([HybridSearchOp(("episodes", "ada", "t1"), "数据库")])
    assert [h.item.key for h in hits] == ["m1"]
    store.close()


def test_upgraded_items_keep_their_creation_time_and_ttl(old_folder):
    store = _open(old_folder)
    store.put(("memories", "ada"), "editor", {"content": "Ada prefers light mode now"})
    editor = store.get(("memories", "ada"), "editor")
    assert editor.created_at == _stamp(1000.0) and editor.updated_at > _stamp(3000.0)
    got = store._items.get(include=["documents"])
    documents = dict(zip(got["ids"], got["documents"]))
    assert not documents[md.item_id(("memories", "ada"), "editor")]  # the outdated value is gone
    assert "Nuxt" in documents[md.item_id(("memories", "ada"), "stack")]  # unchanged item: kept
    assert store.search(("memories", "ada"), query="light mode", limit=1)[0].key == "editor"
    assert store.sweep_ttl() == 1  # "expired", and not "session", whose TTL has not run out
    assert store.get(("memories", "ada"), "session") is not None
    store.batch([PutOp(("memories", "ada"), "stack", None)])
    remaining = store._items.get(include=["metadatas"])["metadatas"]
    assert all(meta.get(md.ITEM_ID) is None for meta in remaining)  # its extra vector went too
    store.close()


def test_an_interrupted_upgrade_goes_on_where_it_stopped(old_folder):
    raw = chromadb.PersistentClient(str(old_folder)).get_collection("engram")
    part = raw.get(limit=3, include=["metadatas", "documents"])
    raw.update(  # what a first page of an upgrade that then stopped would have written
        ids=part["ids"],
        metadatas=[chroma_upgrade.upgraded_metadata(m, d)
                   for m, d in zip(part["metadatas"], part["documents"])],
    )
    assert chroma_upgrade.upgrade(raw, page=2) == 6
    store = _open(old_folder)
    assert len(store.search(("memories", "ada"), limit=10)) == 5
    assert store.get(("memories", "ada"), "editor").updated_at == _stamp(3000.0)
    store.close()


def test_a_record_written_in_the_old_layout_after_the_upgrade_gets_a_clear_error(old_folder):
    store = _open(old_folder)
    _layout1(store._items, ("memories", "ada"), "late", {"content": "written by an old engram"},
             texts=["written by an old engram"], created=5.0, updated=5.0)
    with pytest.raises(ValueError, match="reopen the store"):
        store.list_namespaces()
    store.close()
    reopened = _open(old_folder)  # which upgrades it
    assert reopened.get(("memories", "ada"), "late").value == {"content": "written by an old engram"}
    reopened.close()


def test_ids_that_read_like_escapes_stay_apart_when_their_labels_are_moved(tmp_path):
    """Layout 1 took each id as its label: `50%off`, `50%25off` and `a%2Eb` are three users,
    though today's label of `50%off` is `50%25off` and `a%2Eb` reads as today's label of
    `a.b`. Each keeps its own memories, under today's label of its own id."""
    client = chromadb.PersistentClient(str(tmp_path))
    raw = client.get_or_create_collection("engram", metadata={"hnsw:space": "cosine"})
    for n, user in enumerate(("50%off", "50%25off", "a%2Eb", "*")):
        _layout1(raw, ("memories", user), f"m{n}", {"content": f"{user} owns memory {n}"},
                 texts=[f"{user} owns memory {n}"], created=1000.0, updated=1000.0)
    with _open(tmp_path) as store:
        for n, user in enumerate(("50%off", "50%25off", "a%2Eb", "*")):
            found = store.search(memory_namespace(user))
            assert [i.value["content"] for i in found] == [f"{user} owns memory {n}"]
        assert store.search(memory_namespace("a.b")) == []  # the label "a%2Eb" reads as


def test_a_folder_without_second_labels_gets_them_once(tmp_path, monkeypatch):
    """A folder the previous layout wrote (no `ns.l2`) gets it when a store opens it, so one
    user's namespaces are found by their second label; the next open reads no record."""
    with ChromaStore(chromadb.PersistentClient(str(tmp_path)), index=_index()) as store:
        store.put(("memories", "ada"), "m1", {"content": "Ada prefers dark mode"})
        store.put(("tool_results", "ada", "t1"), "r1", {"content": "a log"})
        store.put(("memories", "bob"), "m2", {"content": "Bob keeps bees"})
    raw = chromadb.PersistentClient(str(tmp_path)).get_collection("engram")
    got = raw.get(include=["metadatas"])
    raw.update(ids=got["ids"], metadatas=[{md.SECOND_LABEL: None} for _ in got["ids"]])
    chroma_upgrade.unmark(raw, chroma_upgrade.SECOND_LABELS)

    with _open(tmp_path) as store:
        assert store.list_namespaces(prefix=("*", "ada")) == [
            ("memories", "ada"), ("tool_results", "ada", "t1")
        ]
    reads: list[dict] = []
    real_get = chromadb.Collection.get

    def counting_get(self, *args, **kwargs):
        reads.append(kwargs)
        return real_get(self, *args, **kwargs)

    monkeypatch.setattr(chromadb.Collection, "get", counting_get)
    _open(tmp_path).close()
    assert reads and all(r.get("limit") == 1 for r in reads), reads  # checks, never a scan
