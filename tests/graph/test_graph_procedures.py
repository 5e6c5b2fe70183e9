"""Procedures learned from tool runs, in a real `create_agent` agent and in the graph (embedded
ChromaStore with the local embedder, SQLite checkpointer; sync and async): a run whose tool
calls worked becomes a `skill` memory once the user moves on, and a second, similar task in
another thread gets its steps in the prompt; a run the user says failed, or an incognito run,
teaches nothing."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fakes import ToolCallingChatModel
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from engram.graph import Context, EngramMiddleware, compile_graph
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.stores.chroma.store import ChromaStore, default_index
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.procedures import is_procedure


@tool
def fetch_logs(service: str) -> str:
    """Fetch the recent logs of a service."""
    return f"{service}: ERROR the connection pool was exhausted"


@tool
def restart_service(name: str) -> str:
    """Restart a service."""
    return f"{name} restarted"


@tool
def publish_docs(site: str) -> str:
    """Publish a documentation site."""
    return f"{site} published"


TOOLS = [fetch_logs, restart_service, publish_docs]


def _call(tool_name: str, **args: Any) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": tool_name, "args": args, "id": uuid.uuid4().hex[:8]}])


@pytest.fixture(scope="module")
def index() -> dict:
    return default_index()


@pytest.fixture
def store(tmp_path: Path, index: dict) -> Iterator[ChromaStore]:
    with ChromaStore(path=tmp_path / "chroma", index=index) as chroma:
        yield chroma


@pytest.fixture
def saver(tmp_path: Path) -> Iterator[ThreadedSqliteSaver]:
    with ThreadedSqliteSaver.from_path(tmp_path / "checkpoints.sqlite") as sqlite:
        yield sqlite


def _app(kind: str, model: Any, store: Any, saver: Any) -> Any:
    if kind == "graph":
        return compile_graph(model, store=store, checkpointer=saver, tools=TOOLS)
    return create_agent(model, tools=TOOLS, middleware=[EngramMiddleware()], store=store,
                        checkpointer=saver, context_schema=Context)


async def _say(app: Any, mode: str, text: str, thread: str, ctx: Context) -> None:
    payload = {"messages": [HumanMessage(text)]}
    config = {"configurable": {"thread_id": thread}}
    if mode == "sync":
        app.invoke(payload, config, context=ctx)
    else:
        await app.ainvoke(payload, config, context=ctx)


def _procedures(store: ChromaStore, user: str = "alice") -> list:
    return [m for m in LongTermMemory(store).list(user) if is_procedure(m.structured_data)]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["graph", "agent"])
async def test_a_similar_task_later_gets_the_steps_that_worked(
    kind: str, mode: str, store: ChromaStore, saver: ThreadedSqliteSaver
) -> None:
    model = ToolCallingChatModel(messages=iter([
        _call("fetch_logs", service="checkout"),
        _call("restart_service", name="checkout"),
        AIMessage("The pool was exhausted; I restarted checkout."),
        AIMessage("Glad it works."),
        AIMessage("Looking at it."),
    ]))
    app = _app(kind, model, store, saver)
    ctx = Context(user_id="alice")
    first = str(uuid.uuid4())
    await _say(app, mode, "The checkout service keeps crashing since Monday, can you fix it?",
               first, ctx)
    assert _procedures(store) == []  # not before the user moved on
    await _say(app, mode, "Great, thanks, that fixed it.", first, ctx)
    [procedure] = _procedures(store)
    assert procedure.category == "skill"
    assert [s["tool"] for s in procedure.structured_data["workflow"]] == [
        "fetch_logs", "restart_service"
    ]
    assert procedure.source_thread_id == first

    await _say(app, mode, "The payments service keeps crashing too, can you fix it?",
               str(uuid.uuid4()), ctx)
    prompt = str(model.calls[-1][0].content)
    assert "Steps that worked for: The checkout service keeps crashing since Monday" in prompt
    assert '1. fetch_logs(service="checkout")' in prompt
    assert '2. restart_service(name="checkout")' in prompt
    # another user's agent is not shown alice's procedure
    other = ToolCallingChatModel(messages=iter([AIMessage("Looking at it.")]))
    await _say(_app(kind, other, store, saver), mode,
               "The payments service keeps crashing too, can you fix it?", str(uuid.uuid4()),
               Context(user_id="bob"))
    assert "Steps that worked" not in str(other.calls[-1][0].content)


@pytest.mark.parametrize("kind", ["graph", "agent"])
async def test_a_run_the_user_says_failed_or_an_incognito_one_teaches_nothing(
    kind: str, store: ChromaStore, saver: ThreadedSqliteSaver
) -> None:
    script = [
        _call("publish_docs", site="docs"),
        _call("restart_service", name="docs"),
        AIMessage("Published."),
        AIMessage("Sorry, let me look again."),
    ]
    model = ToolCallingChatModel(messages=iter(script * 2))
    app = _app(kind, model, store, saver)
    thread = str(uuid.uuid4())
    ctx = Context(user_id="alice")
    await _say(app, "async", "Publish the docs site please.", thread, ctx)
    await _say(app, "async", "That didn't work, the page is blank.", thread, ctx)
    assert _procedures(store) == []

    private = str(uuid.uuid4())
    incognito = Context(user_id="alice", incognito=True)
    await _say(app, "async", "Publish the docs site please.", private, incognito)
    await _say(app, "async", "Thanks, all good.", private, incognito)
    assert _procedures(store) == []


async def test_a_session_end_writes_the_last_procedure(
    store: ChromaStore, saver: ThreadedSqliteSaver
) -> None:
    model = ToolCallingChatModel(messages=iter([
        _call("fetch_logs", service="search"),
        _call("restart_service", name="search"),
        AIMessage("Restarted search."),
    ]))
    app = _app("graph", model, store, saver)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(user_id="alice")
    await app.ainvoke({"messages": [HumanMessage("Search is down, fix it.")]}, config, context=ctx)
    assert _procedures(store) == []
    await app.ainvoke({"end_session": True}, config, context=ctx)
    [procedure] = _procedures(store)
    assert procedure.content.startswith("Steps that worked for: Search is down, fix it.")
