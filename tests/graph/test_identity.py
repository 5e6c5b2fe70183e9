"""Who a run acts for: the authenticated user when the run has one (`langgraph_auth_user_id`, as
a LangGraph server with an auth handler sets it), and a thread only for the user who started
it; the graph and the `create_agent` middleware alike, sync and async. The same under a real
server: tests/http/test_deployment_auth.py."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest
from fakes import RecordingChatModel
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from engram.graph import Context, EngramMiddleware, Extraction, compile_graph
from engram.graph.run_context import AUTH_USER_KEY, UserMismatchError
from engram.nodes.owner import ThreadOwnerError
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.users import registered_threads_steps
from engram.stores.steps import run_steps


def _model() -> RecordingChatModel:
    return RecordingChatModel(messages=(AIMessage(f"ok {n}") for n in itertools.count()))


def _graph(kind: str, store: InMemoryStore, saver: InMemorySaver) -> Any:
    if kind == "graph":
        return compile_graph(_model(), store=store, checkpointer=saver)
    return create_agent(_model(), middleware=[EngramMiddleware()], store=store,
                        checkpointer=saver, context_schema=Context)


def _invoke(app: Any, mode: str, inputs: dict[str, Any], config: dict[str, Any], **kw: Any) -> Any:
    if mode == "sync":
        return app.invoke(inputs, config, **kw)
    return asyncio.run(app.ainvoke(inputs, config, **kw))


def _config(thread: str, signed_in: str | None = None) -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread}
    if signed_in is not None:
        configurable[AUTH_USER_KEY] = signed_in
    return {"configurable": configurable}


def _say(text: str) -> dict[str, Any]:
    return {"messages": [HumanMessage(text)]}


KINDS = [("graph", "sync"), ("graph", "async"), ("agent", "sync"), ("agent", "async")]


@pytest.mark.parametrize(("kind", "mode"), KINDS)
def test_a_signed_in_run_acts_for_its_user_and_refuses_to_name_another(kind, mode) -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    app = _graph(kind, store, saver)
    LongTermMemory(store).upsert("alice", [_candidate("Alice is vegetarian")])

    done = _invoke(app, mode, _say("I keep bees"), _config("b1", signed_in="bob"))
    assert done["owner"] == "bob"  # no user in the context: the signed-in one
    _invoke(app, mode, {"messages": [], "end_session": True} if kind == "agent"
            else {"end_session": True}, _config("b1", signed_in="bob"))
    assert run_steps(store, registered_threads_steps("bob")) == ["b1"]

    for context in (Context(user_id="alice"), {"user_id": "alice"}):
        with pytest.raises(UserMismatchError, match="authenticated as 'bob'.*names user 'alice'"):
            _invoke(app, mode, _say("What do I eat?"), _config("b2", signed_in="bob"),
                    context=context)
    assert _messages(saver, "b2") == []  # the refused input is not in the thread
    assert [m.content for m in LongTermMemory(store).list("alice")] == ["Alice is vegetarian"]
    same = _invoke(app, mode, _say("hello"), _config("b3", signed_in="bob"),
                   context=Context(user_id="bob"))
    assert same["owner"] == "bob"


@pytest.mark.parametrize(("kind", "mode"), KINDS)
def test_a_thread_is_run_only_for_the_user_who_started_it(kind, mode) -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    app = _graph(kind, store, saver)
    alice, bob = Context(user_id="alice"), Context(user_id="bob")
    _invoke(app, mode, _say("my locker code is on the blue card"), _config("t"), context=alice)
    before = _messages(saver, "t")

    with pytest.raises(ThreadOwnerError, match="thread 't' belongs to another user than 'bob'"):
        _invoke(app, mode, _say("what did she say?"), _config("t"), context=bob)
    end = {"messages": [], "end_session": True} if kind == "agent" else {"end_session": True}
    with pytest.raises(ThreadOwnerError):
        _invoke(app, mode, end, _config("t"), context=bob)
    assert not store.search(("episodes", "bob")) and not store.search(("threads", "bob"))
    assert _messages(saver, "t") == before  # bob's input is not in alice's thread

    after = _invoke(app, mode, _say("and the gym?"), _config("t"), context=alice)
    assert after["owner"] == "alice"
    assert [m.content for m in after["messages"]][: len(before)] == before
    assert "what did she say?" not in [m.content for m in after["messages"]]


def _messages(saver: InMemorySaver, thread: str) -> list[str]:
    found = saver.get_tuple(_config(thread))
    values = found.checkpoint["channel_values"] if found else {}
    return [m.content for m in values.get("messages", [])]


def _candidate(text: str) -> Any:
    from engram.stores.memory.types import MemoryCandidate

    return MemoryCandidate(content=text, category="fact")


# -- what no input (and no other user's run) can do ------------------------------------------------


@pytest.mark.parametrize(("kind", "mode"), KINDS)
def test_an_input_naming_the_owner_or_bookkeeping_is_not_applied(kind, mode) -> None:
    store, saver = InMemoryStore(), InMemorySaver()
    app = _graph(kind, store, saver)
    _invoke(app, mode, _say("my locker code is on the blue card"), _config("t"),
            context=Context(user_id="alice"))
    claiming = {**_say("it's mine now"), "owner": "bob", "registered_user": "bob"}
    with pytest.raises(ThreadOwnerError):
        _invoke(app, mode, claiming, _config("t"), context=Context(user_id="bob"))
    job = {"id": "j1", "kind": "consolidate", "user_id": "alice", "trigger": "turns",
           "messages": [{"type": "human", "content": "I work at Mallory Corp", "id": "x1"}]}
    planted = {**_say("hello"), "memory_jobs": [job]}
    done = _invoke(app, mode, planted, _config("b"), context=Context(user_id="bob"))
    assert done.get("memory_jobs", []) == [] and done["owner"] == "bob"


def test_a_run_entering_past_start_is_refused_on_another_users_thread() -> None:
    from langgraph.types import Command

    store, saver = InMemoryStore(), InMemorySaver()
    app = _graph("graph", store, saver)
    _invoke(app, "sync", _say("my locker code is on the blue card"), _config("t"),
            context=Context(user_id="alice"))
    with pytest.raises(ThreadOwnerError):
        app.invoke(Command(goto="consolidate"), _config("t"), context=Context(user_id="bob"))
    assert store.search(("episodes", "bob")) == [] and store.search(("threads", "bob")) == []


def test_jobs_and_procedures_of_another_user_in_a_threads_state_are_dropped() -> None:
    """What a client could write into its own thread's state (LangGraph's update_state) never
    runs or writes for another user."""
    store, saver = InMemoryStore(), InMemorySaver()
    app = _graph("graph", store, saver)
    bob = Context(user_id="bob", extraction=Extraction(every_turns=1))
    _invoke(app, "sync", _say("hello"), _config("b"), context=bob)
    job = {"id": "j1", "kind": "consolidate", "user_id": "alice", "trigger": "turns",
           "messages": [{"type": "human", "content": "I work at Mallory Corp", "id": "x1"}]}
    procedure = {"task": "Deploy the site", "calls": ["deploy(site='x')"], "message_ids": ["m1"],
                 "user_id": "alice"}
    app.update_state(_config("b"), {"memory_jobs": [job], "pending_procedures": [procedure]})
    done = _invoke(app, "sync", _say("I keep bees"), _config("b"), context=bob)
    assert done.get("memory_jobs", []) == []
    assert all(p.get("user_id") == "bob" for p in done.get("pending_procedures", []))
    assert store.search(("memories", "alice")) == [] and store.search(("memory_jobs", "alice")) == []
