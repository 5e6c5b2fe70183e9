"""A user's data as a whole: the thread registry `consolidate` keeps, stats, and delete_user."""

from __future__ import annotations

import asyncio
import json
import uuid

import pytest
from fakes import NGramEmbeddings
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.memory import InMemoryStore
from typer.testing import CliRunner

from engram.graph.cli import app
from engram.nodes.consolidate import make_consolidate
from engram.nodes.context import Context
from engram.nodes.state import EngramState
from engram.stores.memory.long_term import LongTermMemory, MemoryCandidate
from engram.stores.memory.users import (
    adelete_user,
    delete_user,
    registered_threads_steps,
    stats_steps,
)
from engram.stores.namespaces import thread_namespace
from engram.stores.steps import run_steps

INDEX = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}


def consolidate_graph(store: InMemoryStore, checkpointer: InMemorySaver | None = None):
    builder = StateGraph(EngramState, context_schema=Context)
    builder.add_node("consolidate", make_consolidate(None))
    builder.add_edge(START, "consolidate")
    builder.add_edge("consolidate", END)
    return builder.compile(store=store, checkpointer=checkpointer or InMemorySaver())


def turn(graph, thread: str, user: str, **ctx) -> dict:
    messages = [
        HumanMessage("Hello there", id=str(uuid.uuid4())),
        AIMessage("Hi!", id=str(uuid.uuid4())),
    ]
    return asyncio.run(
        graph.ainvoke(  # the bare node is async-only
            {"messages": messages},
            {"configurable": {"thread_id": thread}},
            context=Context(user_id=user, **ctx),
        )
    )


def test_each_thread_is_registered_once_per_user():
    store = InMemoryStore(index=INDEX)
    graph = consolidate_graph(store)
    state = turn(graph, "t1", "alice")
    assert state["registered_user"] == "alice"
    assert run_steps(store, registered_threads_steps("alice")) == ["t1"]

    store.delete(thread_namespace("alice"), "t1")
    turn(graph, "t1", "alice")  # the marker says it is done: no write on every turn
    assert run_steps(store, registered_threads_steps("alice")) == []

    turn(graph, "t2", "alice", incognito=True)  # incognito threads hold messages too
    assert run_steps(store, registered_threads_steps("alice")) == ["t2"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_delete_user_matches_the_user_label_exactly(mode):
    store = InMemoryStore(index=INDEX)
    saver = InMemorySaver()
    graph = consolidate_graph(store, saver)
    ltm = LongTermMemory(store)
    for user in ("al", "alice"):
        ltm.upsert(user, [MemoryCandidate(content=f"{user} prefers tea", category="preference")])
        store.put(("episodes", user), "e1", {"content": f"{user} said hello"})
        turn(graph, f"{user}-thread", user)  # a checkpointed thread, registered
    store.put(("notes", "x", "al"), "n", {"content": "al as a third label is not a user id"})

    stats = run_steps(store, stats_steps("al"))
    assert (stats.active, stats.namespaces) == (
        1,
        {"episodes": 1, "memories": 1, "memory_hashes": 1, "threads": 1},
    )

    if mode == "sync":
        report = delete_user(store, "al", checkpointer=saver)
    else:
        report = asyncio.run(adelete_user(store, "al", checkpointer=saver))
    assert report.deleted == {"episodes": 1, "memories": 1, "memory_hashes": 1, "threads": 1}
    assert report.threads == ["al-thread"]
    assert saver.get_tuple({"configurable": {"thread_id": "al-thread"}}) is None
    assert saver.get_tuple({"configurable": {"thread_id": "alice-thread"}}) is not None
    assert store.search(("memories", "al")) == [] and len(store.search(("memories", "alice"))) == 1
    assert store.get(("notes", "x", "al"), "n") is not None
    assert run_steps(store, stats_steps("alice")).namespaces["threads"] == 1


def test_delete_user_without_a_checkpointer_lists_the_threads_it_left():
    store = InMemoryStore(index=INDEX)
    store.put(thread_namespace("alice"), "t1", {"thread_id": "t1"})
    report = delete_user(store, "alice")
    assert (report.threads, report.threads_not_deleted) == ([], ["t1"])


@pytest.mark.server
def test_the_cli_works_on_a_chroma_server(chroma_server, tmp_path, monkeypatch):
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    user = f"server-{uuid.uuid4().hex[:8]}"
    runner = CliRunner()
    added = runner.invoke(
        app,
        ["memory", "add", "--data", chroma_server, "--user", user, "I prefer dark mode", "--json"],
    )
    assert added.exit_code == 0, added.stderr
    listed = runner.invoke(app, ["memory", "list", "--data", chroma_server, "-u", user, "--json"])
    assert [m["content"] for m in json.loads(listed.stdout)] == ["I prefer dark mode"]
    monkeypatch.setenv("ENGRAM_CHROMA_URL", chroma_server)  # the same, from the environment
    deleted = runner.invoke(app, ["memory", "delete", "--all", "-u", user, "--yes", "--json"])
    assert json.loads(deleted.stdout)["deleted"] == {"memories": 1, "memory_hashes": 1}
    assert not (tmp_path / "chroma").exists()  # the server was used, not the local folder


def test_a_registry_entry_alone_never_makes_another_users_thread_deletable():
    store, saver = InMemoryStore(index=INDEX), InMemorySaver()
    graph = consolidate_graph(store, saver)
    turn(graph, "alices-thread", "alice")
    store.put(("threads", "bob"), "alices-thread", {"thread_id": "alices-thread"}, index=False)
    report = delete_user(store, "bob", checkpointer=saver)
    assert report.threads == []
    assert saver.get_tuple({"configurable": {"thread_id": "alices-thread"}}) is not None
