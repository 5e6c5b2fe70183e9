"""Deleting one thread of a user (`engram.stores.memory.users.delete_thread`, sync and async) on
an embedded ChromaStore with the local embedder and a SQLite checkpointer: the thread's
checkpoints, archived episodes, offloaded tool results, job entries and registry entry go, and
none of its text is recalled, listed or left in any file of the data folder; the user's other
thread and another user's thread of the same id stay whole."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import files_holding
from fakes import RecordingChatModel, ToolCallingChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from engram.graph import Context, compile_graph
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.stores.chroma.store import ChromaStore, default_index
from engram.stores.memory.jobs import done_op, job_namespace
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.users import adelete_thread, delete_thread, registered_threads_steps
from engram.stores.namespaces import episode_namespace, tool_result_namespace
from engram.stores.steps import run_steps
from engram.stores.working import head_of, kept_text
from engram.stores.working.results import write_steps

THREAD = "support.1*"
"""Alice's thread and Bob's: the same id (its `.` and `*` are escaped in a namespace label)."""
GONE = ("Wobbleton", "Quizzlewick", "Snorkelwhip", "Grizzleback")
"""Words only alice's THREAD holds: two said in it, one in a tool result, one in a job result."""
KEPT = {("alice", "other"): "Zephyrine", ("bob", THREAD): "Fandangolo"}
"""The word each of the other two threads holds."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ChromaStore]:
    chroma = ChromaStore(path=str(tmp_path / "chroma"), index=default_index())
    yield chroma
    chroma.close()


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[ThreadedSqliteSaver]:
    with ThreadedSqliteSaver.from_path(tmp_path / "checkpoints.sqlite") as sqlite:
        yield sqlite


def _session(graph, user: str, thread: str, *said: str) -> None:
    """Talk in a thread, then end its session: every message is archived as an episode."""
    config = {"configurable": {"thread_id": thread}}
    for text in said:
        graph.invoke({"messages": [HumanMessage(text)]}, config, context=Context(user_id=user))
    graph.invoke({"end_session": True}, config, context=Context(user_id=user))


def _keep_aside(store: BaseStore, user: str, thread: str, logged: str, summed: str) -> None:
    """An offloaded tool result of the thread holding `logged`, and a finished background job
    of it whose result holds `summed`."""
    kept = kept_text(f"log line: the {logged} service restarted\n" * 50)
    head = head_of(f"r-{logged}", kept, tool="logs", tool_call_id="c1", summary="s", preview="p")
    run_steps(store, write_steps(tool_result_namespace(user, thread), head, kept.text))
    result = {"summary": f"The user asked about {summed}."}
    store.batch([done_op(user, f"job-{logged}", kind="compact", thread_id=thread, result=result)])


def _episodes(store: BaseStore, user: str) -> list[dict]:
    return [i.value for i in store.search(episode_namespace(user), limit=1000)]


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_deleting_a_thread_leaves_none_of_its_text_anywhere(
    mode: str, store: ChromaStore, saver: ThreadedSqliteSaver, tmp_path: Path
) -> None:
    model = RecordingChatModel(messages=itertools.cycle([AIMessage("Let me look.")]))
    graph = compile_graph(model, store=store, checkpointer=saver)
    # a checkpointer keys a thread by its id alone: Bob's thread of the same id is another app's
    bobs_graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    # alice's other thread first, so that it never recalled anything of THREAD
    _session(graph, "alice", "other", f"Can you spell {KEPT['alice', 'other']} backwards?")
    _session(bobs_graph, "bob", THREAD, f"Can you spell {KEPT['bob', THREAD]} backwards?")
    _session(
        graph,
        "alice",
        THREAD,
        f"Can you spell {GONE[0]} backwards?",
        f"And how do you pronounce {GONE[1]}?",
    )
    _keep_aside(store, "alice", THREAD, GONE[2], GONE[3])
    for (user, thread), word in KEPT.items():
        _keep_aside(store, user, thread, word, word)
    assert all(files_holding(tmp_path, word) for word in GONE)
    assert any(e["thread_id"] == THREAD for e in _episodes(store, "alice"))

    if mode == "sync":
        deleted = delete_thread(store, "alice", THREAD, checkpointer=saver)
    else:
        deleted = await adelete_thread(store, "alice", THREAD, checkpointer=saver)

    assert deleted["episodes"] == 3 and deleted["tool_results"] > 1
    assert (deleted["memory_jobs"], deleted["threads"]) == (1, 1)
    assert saver.get_tuple({"configurable": {"thread_id": THREAD}}) is None
    # not listed: alice's episodes are her other thread's only, bob's thread of the same id stays
    alice, bob = _episodes(store, "alice"), _episodes(store, "bob")
    assert alice and {e["thread_id"] for e in alice} == {"other"}
    assert any(KEPT["bob", THREAD] in e["content"] for e in bob if e["thread_id"] == THREAD)
    listed = " ".join(
        str(i.value) for ns in store.list_namespaces() for i in store.search(ns, limit=1000)
    )
    assert not [word for word in GONE if word in listed]
    assert [i.value["thread_id"] for i in store.search(job_namespace("bob"))] == [THREAD]
    assert [i.value["thread_id"] for i in store.search(job_namespace("alice"))] == ["other"]
    assert run_steps(store, registered_threads_steps("alice")) == ["other"]
    assert run_steps(store, registered_threads_steps("bob")) == [THREAD]
    # not recalled: by a search, nor into a new thread's prompt
    ltm = LongTermMemory(store)
    for word in GONE[:2]:
        recalled = [i.value["content"] for i in ltm.search_episodes("alice", f"spell {word}", k=10)]
        assert recalled and not [text for text in recalled if word in text]
    assert KEPT["bob", THREAD] in str([i.value for i in ltm.search_episodes("bob", "spell", k=5)])
    new = {"configurable": {"thread_id": "new"}}
    graph.invoke(
        {"messages": [HumanMessage("Which words did I ask you to spell backwards?")]},
        new,
        context=Context(user_id="alice"),
    )
    prompt = str(model.calls[-1][0].content)
    assert KEPT["alice", "other"] in prompt  # recall works
    assert not [word for word in GONE if word in prompt]
    # in no file of the data folder
    assert [files_holding(tmp_path, word) for word in GONE] == [[], [], [], []]
    assert all(files_holding(tmp_path / "chroma", word) for word in KEPT.values())


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_another_user_cannot_delete_a_thread_by_its_id(mode: str) -> None:
    """Checkpoints are keyed by the thread id alone: a thread another user ran is refused,
    whole, before anything is deleted."""
    store, saver = InMemoryStore(), InMemorySaver()
    model = ToolCallingChatModel(messages=(AIMessage(f"ok {n}") for n in itertools.count()))
    app = compile_graph(model, store=store, checkpointer=saver)
    config = {"configurable": {"thread_id": "support-42"}}
    app.invoke({"messages": [HumanMessage("my account number is 1234")]}, config,
               context=Context(user_id="alice"))
    with pytest.raises(ValueError, match="belongs to another user than 'mallory'"):
        if mode == "sync":
            delete_thread(store, "mallory", "support-42", checkpointer=saver)
        else:
            await adelete_thread(store, "mallory", "support-42", checkpointer=saver)
    assert len(app.get_state(config).values["messages"]) == 2
    delete_thread(store, "alice", "support-42", checkpointer=saver)
    assert app.get_state(config).values == {}
