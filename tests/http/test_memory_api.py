"""The memory API in-process: every endpoint against a Chroma store in a temporary data folder,
and the app langgraph.json serves opening engram's default store once and closing it."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from api_client import Api, memory_api
from conftest import files_holding
from fakes import NGramEmbeddings, compression_model
from starlette.testclient import TestClient

from engram.graph.http import USER_HEADER, create_app
from engram.nodes.model.compress import make_compressor
from engram.stores.chroma.store import ChromaStore, make_store
from engram.stores.maintenance import maintain
from engram.stores.memory.long_term import LongTermMemory, MemoryCandidate
from engram.stores.memory.types import utc_now


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with memory_api(tmp_path) as api:
        yield api


def test_add_answers_what_the_write_policy_did(api: Api) -> None:
    created = api.client.post("/api/memories", json={"text": "I prefer dark mode"})
    assert created.status_code == 201
    dark = created.json()
    assert (dark["action"], dark["memory"]["category"], dark["memory"]["state"]) == (
        "created",
        "preference",  # guessed by the offline rules, as `engram memory add` does
        "current",
    )
    again = api.client.post("/api/memories", json={"text": "i prefer dark mode."})
    assert (again.status_code, again.json()["action"]) == (200, "unchanged")
    assert again.json()["memory"]["id"] == dark["memory"]["id"]

    light = api.client.post("/api/memories", json={"text": "I prefer light mode"}).json()
    assert light["action"] == "superseded"
    assert [m["id"] for m in light["superseded"]] == [dark["memory"]["id"]]
    assert light["superseded"][0]["state"] == "superseded"

    api.add("I use Vim")
    merged = api.client.post("/api/memories", json={"text": "I use Vim with the LazyVim config"})
    assert (merged.status_code, merged.json()["action"]) == (200, "merged")

    project = api.client.post(
        "/api/memories",
        json={"text": "Deploys go through Argo CD", "category": "project", "importance": 0.7},
    ).json()["memory"]
    assert (project["category"], project["importance"]) == ("project", 0.7)


def test_list_pages_filters_and_counts(api: Api) -> None:
    ids = [api.add(f"Fact number {n} about the harbour")["id"] for n in range(5)]
    goal = api.add("I want to learn Rust next year", category="goal")
    forgotten = api.add("Alice has a cat named Miso")
    api.client.delete(f"/api/memories/{forgotten['id']}")

    first = api.client.get("/api/memories", params={"limit": 4}).json()
    second = api.client.get("/api/memories", params={"limit": 4, "offset": 4}).json()
    assert (first["total"], len(first["memories"]), len(second["memories"])) == (6, 4, 2)
    listed = [m["id"] for m in first["memories"] + second["memories"]]
    assert sorted(listed) == sorted([*ids, goal["id"]])
    updated = [m["updated_at"] for m in first["memories"] + second["memories"]]
    assert updated == sorted(updated, reverse=True)  # most recently updated first

    goals = api.client.get("/api/memories", params={"category": "goal"}).json()
    assert [m["id"] for m in goals["memories"]] == [goal["id"]]
    both = api.client.get("/api/memories", params=[("category", "goal"), ("category", "fact")])
    assert both.json()["total"] == 6
    harbour = api.client.get("/api/memories", params={"q": "NUMBER 3"}).json()
    assert [m["content"] for m in harbour["memories"]] == ["Fact number 3 about the harbour"]

    gone = api.client.get("/api/memories", params={"state": "forgotten"}).json()
    assert [(m["id"], m["state"]) for m in gone["memories"]] == [(forgotten["id"], "forgotten")]
    assert api.client.get("/api/memories", params={"state": "all"}).json()["total"] == 7


def test_search_ranks_by_relevance_without_counting_a_recall(api: Api) -> None:
    dark = api.add("I prefer dark mode in every editor")
    api.add("My cat is called Miso")
    api.add("I want to run a marathon", category="goal")

    found = api.client.post("/api/memories/search", json={"query": "dark mode editor"}).json()
    top = found["results"][0]
    assert top["memory"]["id"] == dark["id"]
    assert top["score"] == pytest.approx(  # importance and recency only break near-ties
        top["relevance"] + 0.05 * (0.6 * top["memory"]["importance"] + 0.4 * top["recency"])
    )
    assert [r["memory"]["id"] for r in found["results"]] == [dark["id"]]  # the cat is unrelated
    assert top["memory"]["access_count"] == 0
    assert api.client.get(f"/api/memories/{dark['id']}").json()["access_count"] == 0

    goals = api.client.post(
        "/api/memories/search", json={"query": "run a marathon", "categories": ["goal"]}
    ).json()
    assert [r["memory"]["category"] for r in goals["results"]] == ["goal"]
    one = api.client.post("/api/memories/search", json={"query": "mode", "limit": 1}).json()
    assert len(one["results"]) == 1

    api.client.delete(f"/api/memories/{dark['id']}")
    current = api.client.post("/api/memories/search", json={"query": "dark mode editor"}).json()
    assert dark["id"] not in [r["memory"]["id"] for r in current["results"]]
    forgotten = api.client.post(
        "/api/memories/search", json={"query": "dark mode editor", "state": "forgotten"}
    ).json()
    assert [r["memory"]["id"] for r in forgotten["results"]] == [dark["id"]]


def test_get_forget_restore_and_delete_for_good(api: Api) -> None:
    kept = api.add("Alice has a cat named Miso")
    memory = api.add("Alice keeps a zebra finch named Quillon")
    path = f"/api/memories/{memory['id']}"

    shown = api.client.get(path).json()
    assert (shown["content"], shown["state"], shown["maintenance"]) == (
        memory["content"],
        "current",
        None,
    )
    forgotten = api.client.delete(path)
    assert (forgotten.status_code, forgotten.json()["state"]) == (200, "forgotten")
    assert api.client.get(path).json()["forgotten"] is True

    restored = api.client.post(f"{path}/restore").json()
    assert restored["changed"] and restored["memory"]["state"] == "current"
    again = api.client.post(f"{path}/restore").json()
    assert again["changed"] is False and "nothing to restore" in again["reason"]

    deleted = api.client.delete(path, params={"permanent": "true"})
    assert (deleted.status_code, deleted.json()) == (200, {"deleted": memory["id"]})
    assert api.client.get(path).status_code == 404
    assert api.client.delete(path, params={"permanent": "true"}).status_code == 404
    assert files_holding(api.folder, "Quillon") == []  # gone from every file, as the CLI's delete
    assert api.client.get(f"/api/memories/{kept['id']}").status_code == 200


def test_stats_and_export(api: Api) -> None:
    assert api.client.get("/api/memories/stats").json()["memories"] == 0  # no memories yet
    api.add("Alice prefers dark mode")
    acme = api.add("Alice works at Acme as a data engineer")
    api.client.delete(f"/api/memories/{acme['id']}")

    stats = api.client.get("/api/memories/stats").json()
    assert "user_id" not in stats
    assert (stats["user"], stats["active"], stats["forgotten"], stats["by_category"]) == (
        "alice",
        1,
        1,
        {"preference": 1},
    )
    exported = api.client.get("/api/memories/export")
    assert exported.headers["content-type"] == "text/markdown; charset=utf-8"
    assert exported.headers["content-disposition"] == 'attachment; filename="memory.md"'
    assert exported.text.startswith("# Memories of alice\n")
    assert "- Alice prefers dark mode <!-- id:" in exported.text
    assert "Acme" not in exported.text
    with_forgotten = api.client.get("/api/memories/export", params={"forgotten": "true"}).text
    assert "# Forgotten" in with_forgotten and "Acme" in with_forgotten


def test_the_default_app_opens_engrams_store_once_and_closes_it(tmp_path, monkeypatch) -> None:
    """`app`, which langgraph.json serves, on `$ENGRAM_DATA_DIR` under `langgraph dev`."""
    from engram.graph.http.app import app

    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ENGRAM_CHROMA_URL", raising=False)
    monkeypatch.setenv("LANGSMITH_LANGGRAPH_API_VARIANT", "local_dev")  # as `langgraph dev`
    monkeypatch.delenv("LANGGRAPH_AUTH", raising=False)
    opened: list[ChromaStore] = []

    def counting_make_store() -> ChromaStore:
        opened.append(make_store())
        return opened[-1]

    monkeypatch.setattr("engram.stores.chroma.store.make_store", counting_make_store)
    with TestClient(app, headers={USER_HEADER: "alice"}) as client:
        assert client.get("/memories").status_code == 200 and opened == []  # lazily
        client.post("/api/memories", json={"text": "Alice prefers dark mode"})
        assert client.get("/api/memories").json()["total"] == 1
        assert len(opened) == 1
    assert opened[0]._closed  # closed when the app shut down

    with ChromaStore(path=tmp_path / "chroma") as store:  # e.g. `engram memory list`
        assert [m.content for m in LongTermMemory(store).list("alice")] == [
            "Alice prefers dark mode"
        ]


def test_create_app_leaves_a_store_it_is_given_open(tmp_path: Path) -> None:
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    with ChromaStore(path=tmp_path / "chroma", index=index) as store:
        with TestClient(create_app(store, user_header=True)) as client:
            added = client.post(
                "/api/memories",
                json={"text": "Alice prefers dark mode"},
                headers={USER_HEADER: "bo"},
            )
            assert added.status_code == 201
        assert not store._closed
        assert [m.content for m in LongTermMemory(store).list("bo")] == ["Alice prefers dark mode"]


def test_a_memory_is_named_by_the_prefix_the_page_shows_as_the_cli_takes_it(api: Api) -> None:
    tea = api.add("Alice drinks green tea")
    short = tea["id"][:8]
    assert api.client.get(f"/api/memories/{short}").json()["id"] == tea["id"]
    assert api.client.delete(f"/api/memories/{short}").json()["state"] == "forgotten"
    restored = api.client.post(f"/api/memories/{short}/restore").json()
    assert (restored["changed"], restored["memory"]["id"]) == (True, tea["id"])

    bobs = api.add("Bob drinks black coffee", user="bob")["id"]
    missing = api.client.get(f"/api/memories/{bobs[:8]}")  # never another user's memory
    assert missing.status_code == 404 and bobs[:8] in missing.json()["detail"]

    firsts = {tea["id"][0]}
    for n in itertools.count():  # until two of alice's ids start alike: at most 17 memories
        first = api.add(f"Alice planted {n} tomato seedlings today")["id"][0]
        if first in firsts:
            break
        firsts.add(first)
    for method, path in [("GET", ""), ("DELETE", "?permanent=true"), ("POST", "/restore")]:
        ambiguous = api.client.request(method, f"/api/memories/{first}{path}")
        assert ambiguous.status_code == 400
        assert f"id prefix {first!r} matches " in ambiguous.json()["detail"]
        assert "give more of it" in ambiguous.json()["detail"]
    assert api.client.get("/api/memories", params={"state": "all"}).json()["total"] == n + 2


def compress_three_old_facts(store: Any, user: str) -> list[str]:
    """Three facts of 100 days ago, compressed into one by maintenance (as `engram memory
    maintain --model ...` does); their ids."""
    then = utc_now() - timedelta(days=100)
    old = LongTermMemory(store, clock=lambda: then)
    facts = ["Alice's team deploys on Fridays", "Alice's team uses Helm", "Alice runs k3s at home"]
    ids = [
        r.memory.id
        for text in facts
        for r in old.upsert(user, [MemoryCandidate(content=text, category="fact", importance=0.9)])
    ]
    report = maintain(store, user, compressor=make_compressor(compression_model()))
    assert sorted(report.compressed[0].sources) == sorted(ids)
    return ids


def test_a_superseded_memory_says_whether_restore_brings_it_back(api: Api) -> None:
    originals = compress_three_old_facts(api.store, "alice")
    vue = api.add("I prefer Vue for frontends")
    api.add("I prefer React for frontends")

    listed = api.client.get("/api/memories", params={"state": "superseded"}).json()["memories"]
    compressed_into = {m["id"]: m["compressed_into"] for m in listed}
    [new_id] = {compressed_into[i] for i in originals}
    assert new_id is not None and compressed_into[vue["id"]] is None  # a value change
    current = api.client.get("/api/memories").json()["memories"]
    assert all(m["compressed_into"] is None for m in current)
    found = api.client.post(
        "/api/memories/search", json={"query": "team deploys", "state": "superseded"}
    ).json()["results"]
    assert {r["memory"]["compressed_into"] for r in found if r["memory"]["id"] in originals} == {
        new_id
    }

    kept = api.client.post(f"/api/memories/{vue['id']}/restore").json()
    assert not kept["changed"] and "restate it to make it current again" in kept["reason"]
    back = api.client.post(f"/api/memories/{originals[0]}/restore").json()
    assert back["changed"] and back["memory"]["state"] == "current"
