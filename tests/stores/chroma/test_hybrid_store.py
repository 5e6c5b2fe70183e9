"""ChromaStore's hybrid search and its lexical index: results, consistency after crashes, rebuilds.

Crashes are real: a child process writes through a `ChromaStore` and is killed (`os._exit`) at a
chosen point of the write; the parent reopens the same folder and checks that the lexical index
agrees with Chroma before anything is returned.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import chromadb
import numpy as np
import pytest
from conftest import TESTS
from fakes import NGramEmbeddings
from langgraph.store.base import InvalidNamespaceError, PutOp

from engram.stores.chroma import metadata as md
from engram.stores.chroma.store import ChromaStore
from engram.stores.lexical.hybrid import HybridSearchOp
from engram.stores.lexical.index import INDEX_FILE

NS = ("memories", "ada")


def _index(embeddings: NGramEmbeddings | None = None) -> dict:
    return {"dims": 256, "embed": embeddings or NGramEmbeddings(), "fields": ["content"]}


_OPENED: list[ChromaStore] = []


@pytest.fixture(autouse=True)
def _close_stores() -> Iterator[None]:
    yield
    while _OPENED:
        _OPENED.pop().close()


def _store(path: Path, embeddings: NGramEmbeddings | None = None) -> ChromaStore:
    store = ChromaStore(path=path, index=_index(embeddings))
    _OPENED.append(store)
    return store


def _hybrid(store: ChromaStore, query: str, **kw) -> list[tuple[str, float | None]]:
    (hits,) = store.batch([HybridSearchOp(NS, query, **kw)])
    return [(h.item.key, h.lexical) for h in hits]


def _agrees_with_chroma(store: ChromaStore) -> bool:
    got = store._items.get(include=["metadatas"])
    indexed = {
        i
        for i, m in zip(got["ids"], got["metadatas"])
        if (record := md.record_of(m)) is not None and record.has_vectors
    }
    mirrored = set(store.lexical.index.ids(store.lexical.scope(NS)))
    return indexed == mirrored and not store.lexical.index.pending()


def _crash_while_writing(path: Path, where: str) -> None:
    """In a child process: write `kept`, then write `lost` and die at `where`."""
    script = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(TESTS)!r})
        from fakes import NGramEmbeddings
        from engram.stores.chroma.store import ChromaStore
        from engram.stores.chroma.mirror import LexicalMirror
        from engram.stores.chroma.write import ChromaWriter
        store = ChromaStore(path={str(path)!r}, index={{"dims": 256, "embed": NGramEmbeddings(),
                                                      "fields": ["content"]}})
        store.put({NS!r}, "kept", {{"content": "the staging cluster runs Kubernetes 1.31"}})
        def die(*args, **kwargs):
            os._exit(17)
        if {where!r} == "before_index":   # Chroma written, the index not yet
            LexicalMirror.apply = die
        else:                             # journal written, Chroma not yet
            ChromaWriter._upsert = die
        store.put({NS!r}, "lost", {{"content": "the bastion host answers on port 2222"}})
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 17, done.stderr


def test_hybrid_search_ranks_by_fused_relevance_and_reports_both_channels(tmp_path):
    store = _store(tmp_path)
    store.put(NS, "k8s", {"content": "the staging cluster runs Kubernetes 1.31"})
    store.put(NS, "tea", {"content": "prefers green tea in the afternoon"})
    store.put(NS, "raw", {"content": "not indexed: Kubernetes"}, index=False)
    store.put(("memories", "bob"), "k8s", {"content": "Kubernetes everywhere"})
    (hits,) = store.batch([HybridSearchOp(NS, "which Kubernetes version", limit=5)])
    assert [h.item.key for h in hits] == ["k8s", "tea"]  # only this namespace, only indexed items
    assert hits[0].lexical is not None and hits[1].lexical is None
    assert hits[0].relevance == 1.0 and hits[0].item.score == hits[0].relevance
    assert hits[0].similarity > hits[1].similarity
    [(key, lexical)] = _hybrid(store, "green tea", limit=1)
    assert key == "tea" and lexical is not None
    filtered = store.batch([HybridSearchOp(NS, "Kubernetes", filter={"content": {"$ne": "x"}})])[0]
    assert {h.item.key for h in filtered} == {"k8s", "tea"}
    assert _hybrid(store, "Kubernetes", filter={"content": "prefers green tea in the afternoon"}) == [
        ("tea", None)
    ]


def test_hybrid_search_is_the_same_through_abatch(tmp_path):
    store = _store(tmp_path)
    store.put(NS, "a", {"content": "deploys on Fridays are forbidden"})
    sync = store.batch([HybridSearchOp(NS, "friday deploys")])[0]
    (async_,) = asyncio.run(store.abatch([HybridSearchOp(NS, "friday deploys")]))
    assert [(h.item.key, h.relevance, h.lexical) for h in sync] == [
        (h.item.key, h.relevance, h.lexical) for h in async_
    ]


@pytest.mark.parametrize(
    ("op", "error", "match"),
    [
        (HybridSearchOp((), "q"), ValueError, "namespace"),
        (HybridSearchOp(("a.b",), "q"), InvalidNamespaceError, "label"),
        (HybridSearchOp(NS, "  "), ValueError, "non-empty query"),
        (HybridSearchOp(NS, "q", limit=0), ValueError, "limit"),
        (HybridSearchOp(NS, "q", fusion="borda"), ValueError, "fusion"),  # type: ignore[arg-type]
        (HybridSearchOp(NS, "q", lexical_weight=2.0), ValueError, "lexical_weight"),
        (HybridSearchOp(NS, "q", filter={"x": {"$in": [1]}}), ValueError, "operator"),
    ],
)
def test_bad_hybrid_searches_say_what_is_wrong(tmp_path, op, error, match):
    with pytest.raises(error, match=match):
        _store(tmp_path).batch([op])


def test_a_store_without_an_index_has_no_hybrid_search():
    store = ChromaStore(chromadb.EphemeralClient(), collection="no-index-hybrid")
    assert not store.supports_hybrid
    with pytest.raises(NotImplementedError, match="index config"):
        store.batch([HybridSearchOp(NS, "q")])
    assert not ChromaStore(
        chromadb.EphemeralClient(), collection="no-lexical", index=_index(), lexical=False
    ).supports_hybrid


def test_a_crash_after_the_chroma_write_is_repaired_before_the_next_search(tmp_path):
    _crash_while_writing(tmp_path, "before_index")
    store = _store(tmp_path)
    assert store.get(NS, "lost") is not None  # Chroma has it...
    assert store.lexical.index.pending()  # ...the index does not, and knows it
    assert "lost" in [k for k, lexical in _hybrid(store, "bastion port 2222") if lexical]
    assert _agrees_with_chroma(store)


def test_a_crash_before_the_chroma_write_leaves_nothing_behind(tmp_path):
    _crash_while_writing(tmp_path, "before_chroma")
    store = _store(tmp_path)
    assert store.get(NS, "lost") is None
    assert [k for k, _ in _hybrid(store, "bastion port 2222")] == ["kept"]  # dense only
    assert _agrees_with_chroma(store)


def test_a_deleted_index_file_is_rebuilt_from_chroma_on_the_first_search(tmp_path):
    store = _store(tmp_path)
    store.put(NS, "a", {"content": "the nightly backup goes to restic"})
    store.put(NS, "b", {"content": "grafana dashboards live in the ops repo"})
    store.close()
    (tmp_path / INDEX_FILE).unlink()
    reopened = _store(tmp_path)
    key, lexical = _hybrid(reopened, "restic backup")[0]
    assert key == "a" and lexical is not None
    assert _agrees_with_chroma(reopened)


def test_an_item_missing_from_chroma_is_never_returned_and_is_dropped_from_the_index(tmp_path):
    store = _store(tmp_path)
    store.put(NS, "a", {"content": "the VPN config is in vault"})
    store.put(NS, "b", {"content": "the VPN needs wireguard"})
    store._items.delete(ids=[md.item_id(NS, "b")])  # someone removed it behind the store's back
    assert [k for k, _ in _hybrid(store, "VPN wireguard")] == ["a"]
    _hybrid(store, "VPN wireguard")  # the next search repairs the index
    assert _agrees_with_chroma(store)


def test_writes_through_another_store_on_the_same_folder_are_searchable_at_once(tmp_path):
    app = _store(tmp_path)
    app.put(NS, "a", {"content": "coffee with oat milk"})
    assert [k for k, _ in _hybrid(app, "oat milk")] == ["a"]
    cli = _store(tmp_path)  # e.g. `engram memory add` while the app runs
    cli.put(NS, "b", {"content": "the staging database is Postgres 16"})
    assert _hybrid(app, "postgres 16 staging")[0][0] == "b"


def test_a_re_put_with_the_same_text_keeps_its_vectors_and_embeds_nothing(tmp_path):
    embeddings = NGramEmbeddings()
    store = _store(tmp_path, embeddings)
    store.put(NS, "a", {"content": "uses neovim", "seen": 1})
    calls = len(embeddings.calls)
    vector = store._items.get(ids=[md.item_id(NS, "a")], include=["embeddings"])["embeddings"][0]
    store.put(NS, "a", {"content": "uses neovim", "seen": 2})
    assert len(embeddings.calls) == calls  # no new embedding
    after = store._items.get(ids=[md.item_id(NS, "a")], include=["embeddings"])["embeddings"][0]
    assert list(after) == list(vector)
    assert store.get(NS, "a").value["seen"] == 2
    assert store.search(NS, query="uses neovim")[0].score == pytest.approx(1.0, abs=1e-5)
    calls = len(embeddings.calls)
    store.put(NS, "a", {"content": "uses helix", "seen": 3})
    assert embeddings.calls[calls:] == [["uses helix"]]
    assert store.search(NS, query="uses helix")[0].score == pytest.approx(1.0, abs=1e-5)
    store.batch([PutOp(NS, "a", {"content": "uses helix"}, index=False)])
    assert _hybrid(store, "helix") == []  # no vectors, no lexical document
    assert _agrees_with_chroma(store)


def test_deleting_a_namespace_empties_its_lexical_scope(tmp_path):
    store = _store(tmp_path)
    store.put(NS, "a", {"content": "alpha"})
    store.put(NS, "b", {"content": "beta"})
    store.delete(NS, "a")
    store.delete(NS, "b")
    assert store.lexical.scope(NS) not in store.lexical.index.scopes()
    assert _hybrid(store, "alpha") == []


def test_expired_items_leave_the_index_when_swept(tmp_path):
    store = ChromaStore(path=tmp_path, index=_index(), ttl={"default_ttl": 1 / 60_000})
    store.put(NS, "a", {"content": "short lived note"})
    time.sleep(0.05)  # the TTL is about a millisecond
    assert _hybrid(store, "short lived note") == []  # expired: never returned
    assert store.sweep_ttl() == 1
    assert _agrees_with_chroma(store)


def test_on_a_server_a_query_finds_another_machines_write_at_once(chroma_server, tmp_path, monkeypatch):
    collection = f"machines-{time.time_ns()}"
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path / "machine-a"))
    a = ChromaStore.from_url(chroma_server, collection=collection, index=_index())
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path / "machine-b"))
    b = ChromaStore.from_url(chroma_server, collection=collection, index=_index())
    a.put(NS, "x", {"content": "prefers tea in the afternoon"})
    assert [i.key for i in a.search(NS, query="tea")] == ["x"]  # a's index now checked
    b.put(NS, "pg", {"content": "the staging database is postgres 16"})
    assert a.search(NS, query="postgres 16 staging database")[0].key == "pg"
    assert _hybrid(a, "staging database postgres")[0][0] == "pg"  # dense finds it; BM25 later
    a.close()
    b.close()


def test_items_written_before_the_digest_field_existed_are_searched_and_indexed(tmp_path):
    client = chromadb.PersistentClient(str(tmp_path))
    raw = client.get_or_create_collection("engram", metadata={"hnsw:space": "cosine"})
    value = {"content": "the old laptop is a ThinkPad X220"}
    raw.upsert(  # a record as engram wrote it before `digest`: `indexed` says it has vectors
        ids=[md.item_id(NS, "old")],
        documents=[json.dumps(value)],
        embeddings=[np.asarray(NGramEmbeddings().embed_query(value["content"]))],
        metadatas=[{"ns.depth": 2, "ns.p1": '["memories"]', "ns.p2": '["memories", "ada"]',
                    "key": "old", "created_at": 1.0, "updated_at": 1.0, "indexed": True,
                    "v:content": value["content"]}],
    )
    store = ChromaStore(client, index=_index())
    _OPENED.append(store)
    assert store.search(NS, query="ThinkPad X220 laptop")[0].key == "old"  # dense
    key, lexical = _hybrid(store, "thinkpad")[0]
    assert key == "old" and lexical is not None  # the BM25 index was rebuilt from Chroma
