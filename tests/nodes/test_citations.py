"""Memory citations and undo: each reply names the memories its model was given,
and each `memory.created` event carries the id that undoes it."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest
from fakes import NGramEmbeddings, RecordingChatModel
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from engram.graph import Context, EngramMiddleware, Extraction, compile_graph
from engram.nodes.extract.statement import statement_candidate
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.manage.undo import aundo_memory, undo_memory


def _app(kind: str, store: InMemoryStore) -> tuple[Any, RecordingChatModel]:
    model = RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
    if kind == "graph":
        return compile_graph(model, store=store, checkpointer=InMemorySaver()), model
    agent = create_agent(
        model,
        middleware=[EngramMiddleware()],
        store=store,
        checkpointer=InMemorySaver(),
        context_schema=Context,
    )
    return agent, model


def _turn(app: Any, text: str, ctx: Context, config: dict | None = None) -> list[dict]:
    config = config or {"configurable": {"thread_id": str(uuid.uuid4())}}
    return list(
        app.stream({"messages": [HumanMessage(text)]}, config, context=ctx, stream_mode="custom")
    )


@pytest.mark.parametrize("kind", ["graph", "agent"])
def test_a_reply_cites_the_memories_its_model_was_given(kind: str) -> None:
    store = InMemoryStore(index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]})
    app, model = _app(kind, store)
    ctx = Context(user_id="alice", extraction=Extraction(every_turns=1))
    [created] = _turn(app, "I prefer dark mode in every editor", ctx)
    assert created["event"] == "memory.created"

    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    _turn(app, "Which editor theme do I prefer?", ctx, config)
    state = app.get_state(config).values
    reply = state["messages"][-1]
    assert reply.additional_kwargs["memory_ids"] == [created["memory_id"]]
    assert state["built_context"]["memory_ids"] == [created["memory_id"]]
    assert "dark mode" in model.calls[-1][0].content

    # a reply given no memory cites none
    bobs = {"configurable": {"thread_id": str(uuid.uuid4())}}
    _turn(app, "hello", Context(user_id="bob"), bobs)
    assert "memory_ids" not in app.get_state(bobs).values["messages"][-1].additional_kwargs


@pytest.mark.parametrize("kind", ["graph", "agent"])
async def test_undo_forgets_a_created_memory_and_brings_back_what_it_replaced(kind: str) -> None:
    store = InMemoryStore(index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]})
    app, _ = _app(kind, store)
    ctx = Context(user_id="carol", extraction=Extraction(every_turns=1))
    [first] = _turn(app, "My favorite editor is vim", ctx)
    events = _turn(app, "My favorite editor is emacs", ctx)
    created = next(e for e in events if e["event"] == "memory.created")
    superseded = next(e for e in events if e["event"] == "memory.superseded")
    assert superseded["memory_id"] == first["memory_id"]
    assert superseded["superseded_by"] == created["memory_id"]

    undone = await aundo_memory(store, "carol", created["memory_id"])
    assert undone.memory.forgotten
    assert [m.id for m in undone.restored] == [first["memory_id"]]
    ltm = LongTermMemory(store)
    assert [s.memory.content for s in ltm.search("carol", "favorite editor")] == [
        "My favorite editor is vim"
    ]
    assert undo_memory(store, "carol", "no-such-id") is None
    assert undo_memory(store, "dave", created["memory_id"]) is None  # only the owner's


def test_an_undone_memory_can_be_restored() -> None:
    store = InMemoryStore(index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]})
    ltm = LongTermMemory(store)
    [created] = ltm.upsert("erin", [statement_candidate("I run every morning")])
    assert undo_memory(store, "erin", created.memory.id).restored == []
    assert ltm.search("erin", "running") == []
    assert ltm.restore("erin", created.memory.id).changed
    assert [s.memory.id for s in ltm.search("erin", "run every morning")] == [created.memory.id]
