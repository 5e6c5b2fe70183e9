"""ChromaStore beyond the shared contract: persistence across processes, servers, graphs, factories."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import time
import uuid
from dataclasses import dataclass

import chromadb
import pytest
from conftest import TESTS, free_port
from fakes import NGramEmbeddings
from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import PutOp
from typing_extensions import TypedDict

from engram.stores.chroma.store import ChromaStore, make_store


def _run(code: str) -> str:
    """Run `code` in a fresh interpreter (a really closed and reopened client)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=TESTS,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_persistent_store_survives_a_new_process(tmp_path):
    path = tmp_path / "db"
    store = ChromaStore(
        path=path, collection="persist", index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["text"]}
    )
    store.put(("users", "alice"), "pref", {"text": "prefers dark mode", "n": 1})
    store.put(("users", "bob"), "pref", {"text": "likes tax forms", "n": 2})
    created = store.get(("users", "alice"), "pref").created_at

    out = _run(
        f"""
        import json
        from engram.stores.chroma.store import ChromaStore
        from fakes import NGramEmbeddings
        store = ChromaStore(path={str(path)!r}, collection="persist",
                            index={{"dims": 256, "embed": NGramEmbeddings(), "fields": ["text"]}})
        item = store.get(("users", "alice"), "pref")
        hits = store.search(("users",), query="dark mode")
        print(json.dumps({{"value": item.value, "created": item.created_at.isoformat(),
                          "top": hits[0].key, "top_ns": list(hits[0].namespace),
                          "namespaces": [list(n) for n in store.list_namespaces()]}}))
        """
    )
    seen = json.loads(out)
    assert seen["value"] == {"text": "prefers dark mode", "n": 1}
    assert seen["created"] == created.isoformat()
    assert seen["top_ns"] == ["users", "alice"]
    assert seen["namespaces"] == [["users", "alice"], ["users", "bob"]]


def test_from_url_reaches_a_real_server_with_tenant_and_database(chroma_server):
    admin = chromadb.AdminClient(chromadb.Settings(chroma_server_host="127.0.0.1",
                                                    chroma_server_http_port=int(chroma_server.rsplit(":", 1)[1]),
                                                    chroma_api_impl="chromadb.api.fastapi.FastAPI"))
    admin.create_tenant("acme")
    admin.create_database("memories", tenant="acme")
    store = ChromaStore.from_url(chroma_server, collection="tenanted", tenant="acme", database="memories")
    store.put(("t",), "k", {"v": 1})
    other = ChromaStore.from_url(chroma_server, collection="tenanted")
    assert store.get(("t",), "k").value == {"v": 1}
    assert other.get(("t",), "k") is None, "default tenant must not see the acme tenant's data"


def test_unreachable_server_error_names_host_and_port():
    port = free_port()
    with pytest.raises(ConnectionError, match=rf"127\.0\.0\.1:{port}"):
        ChromaStore.from_url(f"http://127.0.0.1:{port}")


@pytest.mark.parametrize("url", ["127.0.0.1:8000", "ftp://host:1", "http://"])
def test_bad_url_is_a_clear_error(url):
    with pytest.raises(ValueError, match="http://host:port"):
        ChromaStore.from_url(url)


@pytest.mark.parametrize("name", ["ab", "-bad", "has space", "x" * 600])
def test_bad_collection_name_is_a_clear_error(name):
    with pytest.raises(ValueError, match="invalid collection name"):
        ChromaStore(chromadb.EphemeralClient(), collection=name)


def test_default_path_is_the_engram_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path / "data"))
    store = ChromaStore(collection="defaults")
    store.put(("x",), "k", {"v": 1})
    assert (tmp_path / "data" / "chroma" / "chroma.sqlite3").exists()


def test_make_store_factory_uses_local_embeddings(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ENGRAM_CHROMA_URL", raising=False)
    store = make_store()
    store.put(("memories", "alice"), "1", {"content": "Alice prefers dark mode in her editor"})
    store.put(("memories", "alice"), "2", {"content": "Alice's cat is called Miso"})
    hits = store.search(("memories", "alice"), query="which editor theme does she like?")
    assert hits[0].key == "1"


def test_make_store_factory_uses_a_server_when_configured(chroma_server, monkeypatch):
    monkeypatch.setenv("ENGRAM_CHROMA_URL", chroma_server)
    store = make_store()
    assert isinstance(store.client, chromadb.api.client.Client)
    store.put(("from", "factory"), "k", {"v": 1})
    assert ChromaStore.from_url(chroma_server).get(("from", "factory"), "k").value == {"v": 1}


@dataclass
class _Ctx:
    user_id: str


class _State(TypedDict):
    note: str
    found: list[str]


async def _remember(state: _State, runtime: Runtime[_Ctx]) -> dict:
    namespace = ("notes", runtime.context.user_id)
    await runtime.store.aput(namespace, str(len(state["note"])), {"text": state["note"]})
    hits = await runtime.store.asearch(namespace, query="dark mode", limit=2)
    return {"found": [hit.value["text"] for hit in hits]}


def test_records_have_no_document_for_chroma_to_full_text_index():
    store = ChromaStore(chromadb.EphemeralClient(), collection=f"c-{uuid.uuid4().hex[:8]}",
                        index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["text[*]"]})
    store.put(("users", "alice"), "pref", {"text": ["prefers dark mode", "uses vim"], "n": 1})
    got = store._items.get(include=["documents", "metadatas"])
    assert len(got["ids"]) == 2 and got["documents"] == [None, None]  # the item and its 2nd vector
    assert store.get(("users", "alice"), "pref").value == {"text": ["prefers dark mode", "uses vim"], "n": 1}


def test_a_put_that_keeps_vectors_writes_them_again_if_another_writer_changed_them():
    client = chromadb.EphemeralClient()
    name = f"c-{uuid.uuid4().hex[:8]}"
    other = ChromaStore(client, collection=name, lexical=False,
                        index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["text"]})

    class Interleaving(NGramEmbeddings):
        """While this store embeds its batch, the other store puts new text under "x"."""

        def embed_documents(self, texts):
            if "trigger" in texts:
                other.put(("docs",), "x", {"text": "tax return forms"})
            return super().embed_documents(texts)

    store = ChromaStore(client, collection=name, lexical=False,
                        index={"dims": 256, "embed": Interleaving(), "fields": ["text"]})
    store.put(("docs",), "x", {"text": "dark mode editor", "v": 1})
    store.batch([PutOp(("docs",), "x", {"text": "dark mode editor", "v": 2}),  # same text: kept
                 PutOp(("docs",), "y", {"text": "trigger"})])
    assert store.get(("docs",), "x").value == {"text": "dark mode editor", "v": 2}  # last put
    [hit] = store.search(("docs",), query="dark mode editor", filter={"v": 2})
    assert hit.score == pytest.approx(1.0, abs=1e-5)  # its vector is its text's, not the other's
    store.put(("docs",), "x", {"text": "dark mode editor", "v": 3})  # kept, nobody interleaving
    [hit] = store.search(("docs",), query="dark mode editor", filter={"v": 3})
    assert hit.score == pytest.approx(1.0, abs=1e-5)


def test_a_ttl_sweep_spares_an_item_put_again_after_it_read_the_expired_ones():
    store = ChromaStore(chromadb.EphemeralClient(), collection=f"c-{uuid.uuid4().hex[:8]}",
                        index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["text[*]"]})
    store.put(("docs",), "renewed", {"text": ["dark mode editor", "tax forms"]}, ttl=0.001)
    store.put(("docs",), "gone", {"text": ["coffee and tea", "green tea"]}, ttl=0.001)
    time.sleep(0.1)  # both expired
    delete_expired = store._writer.delete_expired

    def put_in_between(now, metadata_by_id):
        assert len(metadata_by_id) == 2  # read as expired; then renewed before the delete
        store.put(("docs",), "renewed", {"text": ["dark mode editor", "tax forms"]}, ttl=60)
        return delete_expired(now, metadata_by_id)

    store._writer.delete_expired = put_in_between
    assert store.sweep_ttl() == 1
    assert store.get(("docs",), "gone") is None
    assert store.get(("docs",), "renewed").value == {"text": ["dark mode editor", "tax forms"]}
    [hit] = store.search(("docs",), query="tax forms")
    assert hit.key == "renewed" and hit.score == pytest.approx(1.0, abs=1e-5)  # 2nd vector kept
    assert store._items.count() == 2  # "renewed" and its second vector; nothing of "gone"


def test_a_compiled_graph_writes_and_searches_through_runtime_store():
    store = ChromaStore(
        chromadb.EphemeralClient(),
        collection="graph-test",
        index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["text"]},
    )
    builder = StateGraph(_State, context_schema=_Ctx)
    builder.add_node("remember", _remember)
    builder.add_edge(START, "remember")
    graph = builder.compile(store=store)
    asyncio.run(graph.ainvoke({"note": "tax forms are due", "found": []}, context=_Ctx("u1")))
    out = asyncio.run(graph.ainvoke({"note": "I like dark mode", "found": []}, context=_Ctx("u1")))
    assert out["found"][0] == "I like dark mode"
    assert asyncio.run(graph.ainvoke({"note": "x", "found": []}, context=_Ctx("u2")))["found"] == ["x"]


# -- audit additions: IndexConfig exactly as langgraph's stores take it ------------------------


def _reference_and_chroma(index: dict) -> list:
    from langgraph.store.memory import InMemoryStore

    return [
        InMemoryStore(index=index),
        ChromaStore(chromadb.EphemeralClient(), collection=f"idx-{uuid.uuid4().hex[:12]}", index=index),
    ]


def test_embed_may_be_a_plain_function():
    ngrams = NGramEmbeddings()
    for store in _reference_and_chroma({"dims": 256, "embed": ngrams.embed_documents, "fields": ["text"]}):
        store.put(("docs",), "editor", {"text": "I like dark mode in my editor"})
        store.put(("docs",), "tax", {"text": "filing the annual tax return"})
        hits = store.search(("docs",), query="dark mode editor")
        assert [h.key for h in hits] == ["editor", "tax"], type(store).__name__


def test_embed_may_be_a_provider_model_string(monkeypatch):
    from langchain_openai import OpenAIEmbeddings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # constructing needs no network
    store = ChromaStore(
        chromadb.EphemeralClient(),
        collection=f"prov-{uuid.uuid4().hex[:12]}",
        index={"dims": 1536, "embed": "openai:text-embedding-3-small"},
    )
    assert isinstance(store.embeddings, OpenAIEmbeddings)
    assert store.embeddings.model == "text-embedding-3-small"


@pytest.mark.parametrize(
    ("fields", "indexed_text"),
    [
        (["meta.title"], "dark mode editor"),
        (["tags[1]"], "tax return forms"),
        (None, None),  # default "$": the whole value as JSON
    ],
)
def test_field_paths_pick_the_embedded_text_like_the_reference_store(fields, indexed_text):
    from langgraph.store.base import get_text_at_path

    value = {"meta": {"title": "dark mode editor"}, "tags": ["misc", "tax return forms"]}
    ngrams = NGramEmbeddings()
    index = {"dims": 256, "embed": ngrams} | ({"fields": fields} if fields else {})
    if indexed_text is None:
        [indexed_text] = get_text_at_path(value, "$")
    query = "dark mode editor theme"
    expected = sum(a * b for a, b in zip(ngrams.embed_query(query), ngrams.embed_query(indexed_text)))
    scores = []
    for store in _reference_and_chroma(index):
        store.put(("docs",), "k", value)
        [hit] = store.search(("docs",), query=query)
        scores.append(hit.score)
    assert scores == pytest.approx([expected, expected], abs=1e-5)


def test_default_path_without_the_variable_is_dot_engram(tmp_path, monkeypatch):
    monkeypatch.delenv("ENGRAM_DATA_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    store = ChromaStore(collection="defaults")
    store.put(("x",), "k", {"v": 1})
    assert (tmp_path / ".engram" / "chroma" / "chroma.sqlite3").exists()
