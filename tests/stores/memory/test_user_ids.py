"""Any non-empty string without whitespace at its start or end is a user id: labels, the store,
the graph, the CLI, old data folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import chromadb
import pytest
from conftest import run_engram
from fakes import NGramEmbeddings, RecordingChatModel
from hypothesis import given, settings
from hypothesis import strategies as st
from langchain_core.messages import HumanMessage
from langgraph.store.base import PutOp
from typer.testing import CliRunner

from engram.graph import Context, Recall, compile_graph
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.graph.cli import app
from engram.stores.chroma import relabel
from engram.stores.chroma.store import ChromaStore, default_index
from engram.stores.memory.long_term import LongTermMemory, MemoryCandidate
from engram.stores.memory.users import stats_steps, users_steps
from engram.stores.namespaces import memory_namespace, user_label, user_of_label
from engram.stores.steps import run_steps

ODD_IDS = [
    "alice@example.com",
    "*",
    "/",
    ".",
    "a b",
    "张三",
    "x" * 200,
    "50%off",
    "%2E",
    "..*..",
]
runner = CliRunner()


def cli(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, ["memory", *args])
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return json.loads(result.stdout) if "--json" in args and code == 0 else result


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path / "data"))
    for name in ("ENGRAM_CHROMA_URL", "ENGRAM_USER", "ENGRAM_MEMORY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "data"


# -- the mapping ----------------------------------------------------------------------------------


@pytest.mark.parametrize("user_id", ODD_IDS)
def test_a_label_is_a_valid_namespace_label_and_reads_back(user_id):
    label = user_label(user_id)
    assert label and "." not in label and "*" not in label
    assert user_of_label(label) == user_id


def test_simple_ids_are_their_own_label_and_odd_ones_never_collide_with_them():
    assert [user_label(u) for u in ("alice", "a b", "张三", "/")] == ["alice", "a b", "张三", "/"]
    assert user_label("alice@example.com") == "alice@example%2Ecom"
    assert user_label("%2E") != user_label(".")  # the escape character is escaped itself
    assert user_of_label("*") is None and user_of_label("50%off") is None  # never written today


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.text(max_size=12).filter(lambda s: s.strip() == s != ""),
        min_size=2,
        max_size=6,
        unique=True,
    )
)
def test_distinct_ids_have_distinct_labels(user_ids):
    labels = [user_label(u) for u in user_ids]
    assert len(set(labels)) == len(labels)
    assert [user_of_label(label) for label in labels] == user_ids


@pytest.mark.parametrize("bad", ["", "  \n", None, 7, "alice ", " alice", "alice\n"])
def test_empty_non_string_or_spaced_ids_are_refused_clearly(bad):
    with pytest.raises(ValueError, match="non-empty string without whitespace at its start or end"):
        memory_namespace(bad)


@pytest.mark.parametrize("spaced", ["alice ", " alice", "alice\t"])
def test_an_id_with_whitespace_around_it_is_refused_the_same_way_wherever_it_comes_in(
    data, spaced
):
    cli("add", "--user", "alice", "Alice keeps bees")
    for args in (["list", "--user", spaced], ["add", "--user", spaced, "Alice keeps wasps"]):
        done = run_engram("memory", *args)
        assert done.returncode == 2, done.stderr
        said = " ".join(done.stderr.split())
        assert f"--user (or $ENGRAM_USER) {spaced!r} starts or ends with whitespace" in said
        assert "pass it without that whitespace (--user alice)" in said
    mcp = run_engram("mcp", "--user", spaced, input="")
    assert mcp.returncode == 2 and "starts or ends with whitespace" in mcp.stderr
    with pytest.raises(ValueError, match=r"Context\.user_id: .* starts or ends with whitespace"):
        Context(user_id=spaced)
    assert [m["content"] for m in cli("list", "--user", "alice", "--json")] == ["Alice keeps bees"]


# -- the store and the CLI ------------------------------------------------------------------------


@pytest.mark.parametrize("user_id", ODD_IDS)
def test_every_command_works_for_an_odd_id_and_touches_no_one_else(data, user_id):
    cli("add", "--user", "bob", "Bob keeps bees in Lisbon")
    cli("add", "--user", "carol", "Carol sails a boat called Mistral")
    added = cli("add", "--user", user_id, "I collect vintage typewriters", "--json")["memory"]

    assert [m["id"] for m in cli("list", "--user", user_id, "--json")] == [added["id"]]
    assert cli("stats", "--user", user_id, "--json")["memories"] == 1
    everyone = {s["user_id"]: s["memories"] for s in cli("stats", "--json")}
    assert everyone == {"bob": 1, "carol": 1, user_id: 1}  # shown as given, never as a label
    exported = data.parent / "out.md"
    cli("export", "--user", user_id, "--out", str(exported))
    assert "vintage typewriters" in exported.read_text(encoding="utf-8")
    assert "Bob" not in exported.read_text(encoding="utf-8")

    cli("delete", "--all", "--user", user_id, "--yes")
    assert {s["user_id"] for s in cli("stats", "--json")} == {"bob", "carol"}
    assert len(cli("list", "--user", "bob", "--json")) == 1
    assert len(cli("list", "--user", "carol", "--json")) == 1


def test_star_is_not_a_wildcard_when_deleting(data):
    cli("add", "--user", "bob", "Bob keeps bees in Lisbon")
    cli("add", "--user", "*", "Star prefers dark mode")
    assert cli("stats", "--user", "*", "--json")["memories"] == 1
    report = cli("delete", "--all", "--user", "*", "--yes", "--json")
    assert sum(report["deleted"].values()) == 2  # its memory and its hash record, no more
    assert [m["content"] for m in cli("list", "--user", "bob", "--json")] == [
        "Bob keeps bees in Lisbon"
    ]


def test_an_email_id_goes_through_the_graph_recall_export_and_delete(data):
    user = "alice@example.com"
    store = ChromaStore(path=data / "chroma", index=default_index())
    saver = ThreadedSqliteSaver.from_path(data / "checkpoints.sqlite")
    model = RecordingChatModel(messages=iter([f"noted {i}" for i in range(100)]))
    graph = compile_graph(model, store=store, checkpointer=saver)
    ctx = Context(user_id=user, recall=Recall(timeout_ms=30_000))
    turns = [
        "I prefer dark mode in every editor.",
        "My cat is called Quixotelle.",
        "I work at Zanzibarco as a data engineer.",
        "I live in Lisbon.",
        "We use PostgreSQL 16 for everything.",
        "I plan to learn Rust next year.",
        "I drink oolong tea every morning.",
        "My favourite band is Radiohead.",
        "I ride a blue bicycle to work.",
        "I am allergic to peanuts.",
        "My sister lives in Porto.",
        "I collect vintage typewriters.",
    ]
    bob = MemoryCandidate(content="Bob's parrot is Fandangolo", category="fact")
    LongTermMemory(store).upsert("bob", [bob])
    first = {"configurable": {"thread_id": "t-1"}}
    for text in turns:
        out = graph.invoke({"messages": [HumanMessage(text)]}, first, context=ctx)
    graph.invoke({"end_session": True}, first, context=ctx)

    second = {"configurable": {"thread_id": "t-2"}}
    out = graph.invoke({"messages": [HumanMessage("What is my cat called?")]}, second, context=ctx)
    assert "Quixotelle" in out["built_context"]["memory_block"]  # recalled in a new thread
    memories = LongTermMemory(store).list(user, limit=100)
    assert any("Quixotelle" in m.content for m in memories)
    assert run_steps(store, users_steps()) == [user, "bob"]

    exported = data.parent / "alice.md"
    cli("export", "--user", user, "--out", str(exported))
    assert "Quixotelle" in exported.read_text(encoding="utf-8")
    stats = cli("stats", "--user", user, "--json")
    assert stats["user_id"] == user and stats["memories"] == len(memories)

    report = cli("delete", "--all", "--user", user, "--yes", "--json")
    assert sorted(report["threads"]) == ["t-1", "t-2"]
    assert run_steps(store, stats_steps(user)).memories == 0
    assert saver.get_tuple(first) is None and saver.get_tuple(second) is None
    store.close()
    saver.conn.close()
    leftovers = {word: files_holding(data, word) for word in ("Quixotelle", "Zanzibarco")}
    assert leftovers == {"Quixotelle": [], "Zanzibarco": []}
    assert files_holding(data, "Fandangolo")  # the search does find text that is still there


def files_holding(folder: Path, word: str) -> list[str]:
    """Files under `folder` whose bytes hold `word`, in any case (like `grep -rail`)."""
    needle = word.lower().encode()
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and needle in p.read_bytes().lower()
    )


# -- folders written before ids were mapped -------------------------------------------------------


def test_old_labels_are_moved_to_todays_when_the_store_opens(tmp_path):
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    client = chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    old = ChromaStore(client, collection="old", index=index)
    # what an earlier engram wrote for ids "*" and "50%off": the raw id as the label
    old.batch(
        [
            PutOp(("memories", "*"), "m1", _memory("m1", "Star likes jazz")),
            PutOp(("memory_hashes", "*"), "h1", {"memory_id": "m1"}, index=False),
            PutOp(("memories", "50%off"), "m2", _memory("m2", "Sale loves bargains")),
            PutOp(("memories", "bob"), "m3", _memory("m3", "Bob keeps bees")),
        ]
    )
    old.close()
    client.get_collection("old").modify(metadata={"created_by": "an earlier engram"})  # no mark

    store = ChromaStore(client, collection="old", index=index)
    ltm = LongTermMemory(store)
    assert [m.content for m in ltm.list("*")] == ["Star likes jazz"]
    assert [s.memory.content for s in ltm.search("*", "jazz")] == ["Star likes jazz"]
    assert [m.content for m in ltm.list("50%off")] == ["Sale loves bargains"]
    assert [m.content for m in ltm.list("bob")] == ["Bob keeps bees"]
    assert run_steps(store, users_steps()) == ["*", "50%off", "bob"]
    assert store.list_namespaces(prefix=("memories",)) == [
        ("memories", "%2A"),
        ("memories", "50%25off"),
        ("memories", "bob"),
    ]
    assert store.get(("memory_hashes", "%2A"), "h1").value == {"memory_id": "m1"}
    store.close()
    assert relabel.labels_current(client.get_collection("old"))  # the next open lists nothing


def _memory(memory_id: str, content: str) -> dict[str, Any]:
    return {
        "id": memory_id,
        "content": content,
        "category": "fact",
        "importance": 0.8,
        "valid_from": "2026-01-01T00:00:00+00:00",
        "created_at": "2026-01-01T00:00:00+00:00",
        "updated_at": "2026-01-01T00:00:00+00:00",
        "current": True,
        "forgotten": False,
    }
