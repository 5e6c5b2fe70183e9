"""The task state through compaction, in the graph and in a real `create_agent` agent (embedded
ChromaStore, SQLite checkpointer): written when messages are folded, shown in its own block of
the model's context, in the checkpointed state, and never lost with the evicted messages; a
plain chat (no tool call) has none, and its compactions make no call for it."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from typing import Any

import chromadb
import pytest
from fakes import GatedMemoryModel, NGramEmbeddings, ToolCallingChatModel
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from engram.graph import Compaction, Context, EngramMiddleware, compile_graph
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.nodes.task.update import TaskStateAnswer
from engram.stores.chroma.store import ChromaStore

GOAL = "Find out why checkout fails since Monday and fix it."
PLAN = "Plan:\n1. Read the checkout logs\n2. Check the database pool\n3. Patch the config"


@tool
def check_pool(database: str) -> str:
    """Check a database's connection pool."""
    return f"pool of {database}: 50 of 50 connections in use"


@pytest.fixture
def store(tmp_path) -> Iterator[ChromaStore]:
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    chroma = ChromaStore(
        chromadb.PersistentClient(path=str(tmp_path / "chroma")), collection="tasks", index=index
    )
    yield chroma
    chroma.close()


def _replies() -> Iterator[AIMessage]:
    yield AIMessage(PLAN)
    yield AIMessage("", tool_calls=[{"name": "check_pool", "args": {"database": "orders"},
                                     "id": "call-pool"}])
    yield AIMessage("The orders pool is full.")
    yield from (AIMessage(f"Noted {n}.") for n in itertools.count())


@pytest.mark.parametrize("kind", ["graph", "agent"])
async def test_the_task_state_survives_compaction_and_is_shown_to_the_model(
    kind: str, store: ChromaStore, tmp_path
) -> None:
    model = ToolCallingChatModel(messages=_replies())
    saver = ThreadedSqliteSaver.from_path(tmp_path / "checkpoints.sqlite")
    if kind == "graph":
        app: Any = compile_graph(model, store=store, checkpointer=saver, tools=[check_pool])
    else:
        app = create_agent(model, tools=[check_pool], middleware=[EngramMiddleware()],
                           store=store, checkpointer=saver, context_schema=Context)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(
        user_id="alice",
        compaction=Compaction(message_threshold=4, keep_recent_messages=2, token_threshold=None),
    )
    turns = [GOAL, "Go ahead.", "What next?", "And then?", "Anything else?", "Thanks, bye now."]
    for n, text in enumerate(turns):
        payload = {"messages": [HumanMessage(text)]}
        out = app.invoke(payload, config, context=ctx) if n % 2 else (
            await app.ainvoke(payload, config, context=ctx)
        )

    state = (await app.aget_state(config)).values  # what Studio shows
    task = state["task_state"]
    assert task["current_goal"] == GOAL and task["mode"] == "offline"
    assert task["completed_steps"] == ['check_pool(database="orders")']
    assert task["key_findings"] == ["check_pool: pool of orders: 50 of 50 connections in use"]
    assert task["pending_steps"] == [
        "Read the checkout logs", "Check the database pool", "Patch the config",
    ]
    # the goal's message was folded away long ago; the task state kept it
    assert all(m.content != GOAL for m in state["messages"])
    assert state["evicted_message_count"] >= 8

    system = model.calls[-1][0].content
    assert system.count("<task_state>") == 1 and f"Goal: {GOAL}" in system
    assert system.index("<task_state>") < system.index("<conversation_summary>")
    assert out["built_context"]["token_stats"]["task_state"] > 0
    saver.close()


def _app(kind: str, model: Any, store: ChromaStore, saver: Any, memory_model: Any) -> Any:
    if kind == "graph":
        return compile_graph(model, memory_model=memory_model, store=store, checkpointer=saver,
                             tools=[check_pool])
    return create_agent(model, tools=[check_pool], store=store, checkpointer=saver,
                        middleware=[EngramMiddleware(memory_model=memory_model)],
                        context_schema=Context)


@pytest.mark.parametrize("kind", ["graph", "agent"])
@pytest.mark.parametrize("uses_tools", [False, True])
async def test_only_a_tool_using_thread_gets_a_task_state_and_its_model_call(
    kind: str, uses_tools: bool, store: ChromaStore, tmp_path
) -> None:
    chat = (AIMessage(f"Here is fact {n}.") for n in itertools.count())
    model = ToolCallingChatModel(messages=_replies() if uses_tools else chat)
    memory_model = GatedMemoryModel()
    memory_model.gate.set()
    saver = ThreadedSqliteSaver.from_path(tmp_path / "checkpoints.sqlite")
    app = _app(kind, model, store, saver, memory_model)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(
        user_id="alice",
        compaction=Compaction(message_threshold=4, keep_recent_messages=2, token_threshold=None),
        memory_work="inline",
    )
    turns = [GOAL if uses_tools else "Tell me about cats.",
             *(f"Tell me fact number {n} about cats." for n in range(7))]
    for text in turns:
        await app.ainvoke({"messages": [HumanMessage(text)]}, config, context=ctx)

    state = (await app.aget_state(config)).values
    assert state["evicted_message_count"] >= 8  # several compactions
    task_calls = [c for c in memory_model.structured_calls if c[0] is TaskStateAnswer]
    systems = [call[0].content for call in model.calls]
    if uses_tools:
        assert task_calls and state["task_state"]["current_goal"]
        assert "<task_state>" in systems[-1]
    else:
        assert task_calls == [] and "task_state" not in state
        assert not any("<task_state>" in system for system in systems)
    saver.close()


@pytest.mark.parametrize("kind", ["graph", "agent"])
async def test_the_task_state_follows_the_thread_after_its_tool_messages_are_folded(
    kind: str, store: ChromaStore, tmp_path
) -> None:
    """Once a thread has a task state it keeps being updated, also when its tool calls have
    all been folded away (it stayed at the old goal while the model was still shown it)."""
    saver = ThreadedSqliteSaver.from_path(tmp_path / "checkpoints.sqlite")
    app = _app(kind, ToolCallingChatModel(messages=_replies()), store, saver, None)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(
        user_id="alice",
        compaction=Compaction(message_threshold=4, keep_recent_messages=2, token_threshold=None),
        memory_work="inline",
    )
    turns = [GOAL, *(f"Now write a haiku about topic number {n} please." for n in range(10))]
    for text in turns:
        await app.ainvoke({"messages": [HumanMessage(text)]}, config, context=ctx)
    state = (await app.aget_state(config)).values
    assert not any(m.type == "tool" for m in state["messages"])
    goal = state["task_state"]["current_goal"]
    assert goal.startswith("Now write a haiku about topic number")
    assert int(goal.split("number ")[1].split()[0]) >= 5  # a recent request, not the first
    saver.close()
