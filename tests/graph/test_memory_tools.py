"""The memory tools an agent calls (search, remember, forget; restore and delete on request), in
a `create_agent` agent and in the graph: scoped to the run's user, through the write policy,
announced, undoable (deletion excepted, which purges)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from conftest import files_holding
from fakes import NGramEmbeddings, ToolCallingChatModel
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from engram.graph import Context, EngramMiddleware, compile_graph
from engram.graph.tools import memory_tools
from engram.nodes.extract.statement import statement_candidate
from engram.stores.chroma.store import ChromaStore
from engram.stores.memory.long_term import LongTermMemory


def _store() -> InMemoryStore:
    return InMemoryStore(index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]})


def _call(name: str, args: dict[str, Any], call_id: str | None = None) -> AIMessage:
    call_id = call_id or f"call-{uuid.uuid4().hex[:8]}"
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def _config() -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _app(kind: str, model: ToolCallingChatModel, store: InMemoryStore) -> Any:
    if kind == "graph":
        return compile_graph(model, store=store, checkpointer=InMemorySaver(), tools=memory_tools())
    return create_agent(
        model,
        tools=memory_tools(),
        middleware=[EngramMiddleware()],
        store=store,
        checkpointer=InMemorySaver(),
        context_schema=Context,
    )


@pytest.mark.parametrize("kind", ["graph", "agent"])
async def test_remember_search_and_forget_a_memory(kind: str) -> None:
    store = _store()
    model = ToolCallingChatModel(
        messages=iter(
            [
                _call("remember", {"content": "The user prefers TypeScript's strict mode"}),
                AIMessage("I'll remember that."),
                _call("search_memory", {"query": "TypeScript strict mode"}),
                AIMessage("You prefer strict mode."),
            ]
        )
    )
    app = _app(kind, model, store)
    ctx = Context(user_id="alice")
    config = _config()
    events = [
        e
        async for e in app.astream(
            {"messages": [HumanMessage("Remember: I like TypeScript's strict mode")]},
            config,
            context=ctx,
            stream_mode="custom",
        )
    ]
    [created] = [e for e in events if e["event"] == "memory.created"]
    assert created["user_id"] == "alice" and created["category"] == "preference"
    memory_id = created["memory_id"]
    stored = LongTermMemory(store).get("alice", memory_id)
    assert stored is not None and stored.confidence == 1.0
    assert stored.source_thread_id == config["configurable"]["thread_id"]
    tool_result = (await app.aget_state(config)).values["messages"][2]
    assert memory_id in tool_result.content and tool_result.artifact["action"] == "created"

    app.invoke({"messages": [HumanMessage("What do I prefer?")]}, config, context=ctx)
    found = json.loads(app.get_state(config).values["messages"][-2].content)
    assert [row["id"] for row in found] == [memory_id]

    # forget, in a sync run, by the id the search gave
    model_two = ToolCallingChatModel(
        messages=iter([_call("forget_memory", {"memory_id": memory_id}), AIMessage("Forgotten.")])
    )
    app_two = _app(kind, model_two, store)
    events = list(
        app_two.stream(
            {"messages": [HumanMessage("Forget that.")]},
            _config(),
            context=ctx,
            stream_mode="custom",
        )
    )
    assert [(e["event"], e["memory_id"]) for e in events] == [("memory.forgotten", memory_id)]
    memory = LongTermMemory(store).get("alice", memory_id)
    assert memory.forgotten and LongTermMemory(store).search("alice", "TypeScript") == []

    # and back, through the opt-in restore tool
    model_three = ToolCallingChatModel(
        messages=iter([_call("restore_memory", {"memory_id": memory_id}), AIMessage("Back.")])
    )
    app_three = (
        compile_graph(
            model_three, store=store, checkpointer=InMemorySaver(), tools=memory_tools(restore=True)
        )
        if kind == "graph"
        else create_agent(
            model_three,
            tools=memory_tools(restore=True),
            middleware=[EngramMiddleware()],
            store=store,
            context_schema=Context,
        )
    )
    events = [
        e
        async for e in app_three.astream(
            {"messages": [HumanMessage("Remember that again.")]},
            _config(),
            context=ctx,
            stream_mode="custom",
        )
    ]
    assert [(e["event"], e["memory_id"]) for e in events] == [("memory.restored", memory_id)]
    assert not LongTermMemory(store).get("alice", memory_id).forgotten


def test_the_user_comes_from_the_run_never_from_the_model() -> None:
    store = _store()
    [mine] = LongTermMemory(store).upsert(
        "alice", [statement_candidate("Alice keeps her notes in Obsidian")]
    )
    arguments = {
        t.name: set(t.tool_call_schema.model_json_schema()["properties"]) for t in memory_tools()
    }
    assert arguments == {  # what the model fills in: no user
        "search_memory": {"query", "limit"},
        "remember": {"content", "category"},
        "forget_memory": {"memory_id"},
    }
    model = ToolCallingChatModel(
        messages=iter(
            [
                _call("search_memory", {"query": "notes Obsidian"}),
                _call("forget_memory", {"memory_id": mine.memory.id}),
                AIMessage("Done."),
            ]
        )
    )
    app = _app("agent", model, store)
    out = app.invoke(
        {"messages": [HumanMessage("Where are my notes?")]},
        _config(),
        context=Context(user_id="mallory"),
    )
    search_result, forget_result = out["messages"][2], out["messages"][4]
    assert json.loads(search_result.content) == []
    assert forget_result.content.startswith("No memory has the id")
    assert not LongTermMemory(store).get("alice", mine.memory.id).forgotten


def test_an_incognito_run_neither_searches_nor_remembers() -> None:
    store = _store()
    model = ToolCallingChatModel(
        messages=iter(
            [_call("remember", {"content": "I am planning a surprise party"}), AIMessage("OK.")]
        )
    )
    app = _app("agent", model, store)
    out = app.invoke(
        {"messages": [HumanMessage("remember this")]},
        _config(),
        context=Context(user_id="alice", incognito=True),
    )
    assert out["messages"][2].content.startswith("Memory is off")
    assert LongTermMemory(store).list("alice") == []


@pytest.mark.parametrize("kind", ["graph", "agent"])
async def test_the_opt_in_delete_tool_purges_the_memory_from_every_file(
    kind: str, tmp_path: Path
) -> None:
    store = ChromaStore(
        path=tmp_path / "chroma",
        index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]},
    )
    try:
        ltm = LongTermMemory(store)
        [gone] = ltm.upsert("alice", [statement_candidate("Alice keeps an iguana named Wobbleton")])
        ltm.upsert("alice", [statement_candidate("Alice studied violin with Krzanowski")])
        [bobs] = ltm.upsert("bob", [statement_candidate("Bob's parrot is called Fandangolo")])
        assert files_holding(tmp_path, "Wobbleton")
        assert "delete_memory" not in [t.name for t in memory_tools()]
        tools = memory_tools(delete=True)
        model = ToolCallingChatModel(
            messages=iter(
                [
                    _call("delete_memory", {"memory_id": bobs.memory.id}),  # not alice's
                    _call("delete_memory", {"memory_id": gone.memory.id}),
                    AIMessage("It is gone for good."),
                ]
            )
        )
        app = (
            compile_graph(model, store=store, checkpointer=InMemorySaver(), tools=tools)
            if kind == "graph"
            else create_agent(
                model,
                tools=tools,
                middleware=[EngramMiddleware()],
                store=store,
                checkpointer=InMemorySaver(),
                context_schema=Context,
            )
        )
        config = _config()
        events = [
            e
            async for e in app.astream(
                {"messages": [HumanMessage("Erase that pet memory completely, please.")]},
                config,
                context=Context(user_id="alice"),
                stream_mode="custom",
            )
        ]
        deleted = [e for e in events if e["event"] == "memory.deleted"]
        assert deleted == [
            {"event": "memory.deleted", "user_id": "alice", "memory_id": gone.memory.id}
        ]
        messages = (await app.aget_state(config)).values["messages"]
        refused, done = messages[2], messages[4]
        assert refused.content.startswith("No memory has the id") and refused.artifact is None
        assert done.artifact == gone.memory.id

        assert ltm.get("alice", gone.memory.id) is None
        assert ltm.get("bob", bobs.memory.id) is not None
        assert [m.content for m in ltm.list("alice")] == ["Alice studied violin with Krzanowski"]
    finally:
        store.close()
    assert files_holding(tmp_path, "Wobbleton") == []  # the raw bytes of every file
    assert files_holding(tmp_path, "Krzanowski") and files_holding(tmp_path, "Fandangolo")
