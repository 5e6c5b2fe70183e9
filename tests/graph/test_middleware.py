"""`EngramMiddleware` in a real `create_agent` agent: the embedded ChromaStore, the SQLite
checkpointer, a tool the agent calls, sync and async runs; and the same turns through the graph,
which must give the model the same input."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass
from typing import Any

import chromadb
import pytest
from fakes import NGramEmbeddings, RecordingChatModel, ToolCallingChatModel
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool

from engram.graph import Compaction, Context, EngramMiddleware, Extraction, compile_graph
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.stores.chroma.store import ChromaStore


@tool
def order_status(order_id: str) -> str:
    """Look up the delivery status of an order."""
    return f"order {order_id} was delivered on 2024-05-02"


@pytest.fixture
def store(tmp_path) -> ChromaStore:
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    chroma = ChromaStore(
        chromadb.PersistentClient(path=str(tmp_path / "chroma")), collection="agent", index=index
    )
    yield chroma
    chroma.close()


@pytest.fixture
def saver(tmp_path) -> ThreadedSqliteSaver:
    return ThreadedSqliteSaver.from_path(tmp_path / "checkpoints.sqlite")


@pytest.fixture(params=["sync", "async"])
def run(request: pytest.FixtureRequest):
    """Run one agent turn the sync or the async way; returns the custom events it emitted."""

    async def turn(agent: Any, payload: dict, config: dict, context: Any) -> list[dict]:
        if request.param == "sync":
            chunks = agent.stream(payload, config, context=context, stream_mode="custom")
            return list(chunks)
        return [
            c async for c in agent.astream(payload, config, context=context, stream_mode="custom")
        ]

    return turn


def _config() -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _tool_call(order_id: str, call_id: str) -> AIMessage:
    return AIMessage(
        "", tool_calls=[{"name": "order_status", "args": {"order_id": order_id}, "id": call_id}]
    )


async def test_memories_written_by_one_thread_are_recalled_in_the_next(store, saver, run) -> None:
    model = RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
    agent = create_agent(
        model,
        middleware=[EngramMiddleware()],
        store=store,
        checkpointer=saver,
        context_schema=Context,
    )
    ctx = Context(user_id="alice", extraction=Extraction(every_turns=1))
    events = await run(
        agent, {"messages": [HumanMessage("I prefer dark mode in every editor")]}, _config(), ctx
    )
    created = [e for e in events if e["event"] == "memory.created"]
    assert [e["content"] for e in created] == ["I prefer dark mode in every editor"]

    config = _config()
    await run(agent, {"messages": [HumanMessage("Which editor theme do I like?")]}, config, ctx)
    system = model.calls[-1][0]
    assert system.type == "system" and "- I prefer dark mode in every editor\n" in system.content
    state = agent.get_state(config).values
    assert state["built_context"]["memory_ids"] == [created[0]["memory_id"]]
    assert state["turn"] == 1
    # another user sees nothing of alice's
    await run(
        agent, {"messages": [HumanMessage("Which theme?")]}, _config(), Context(user_id="bob")
    )
    assert "dark mode" not in model.calls[-1][0].content


async def test_the_tool_loop_reuses_the_turns_context(store, saver, run) -> None:
    model = ToolCallingChatModel(
        messages=iter([_tool_call("A17", "call-1"), AIMessage("Delivered on May 2.")])
    )
    agent = create_agent(
        model,
        tools=[order_status],
        system_prompt="You track orders.",
        middleware=[EngramMiddleware()],
        store=store,
        checkpointer=saver,
    )
    config = _config()
    await run(agent, {"messages": [HumanMessage("Where is order A17?")]}, config, None)
    first, second = model.calls
    assert [m.type for m in first] == ["system", "human"]
    assert [m.type for m in second] == ["system", "human", "ai", "tool"]
    assert first[0].content == second[0].content == "You track orders."  # the agent's prompt
    state = agent.get_state(config).values
    assert state["turn"] == 1  # one turn, two model calls
    assert [type(m) for m in state["messages"]] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    said = [m for m in state["messages"] if m.type in ("human", "ai")]
    assert all("timestamp" in m.additional_kwargs for m in said)  # as `start` and `respond` do
    assert state["built_context"]["token_stats"]["current_input"] > 0


async def test_compaction_summarizes_archives_and_keeps_tool_pairs(store, saver, run) -> None:
    model = ToolCallingChatModel(
        messages=iter([_tool_call("B2", "call-2"), *(AIMessage(f"answer {i}") for i in range(4))])
    )
    agent = create_agent(
        model,
        tools=[order_status],
        middleware=[EngramMiddleware()],
        store=store,
        checkpointer=saver,
        context_schema=Context,
    )
    ctx = Context(
        user_id="carol", compaction=Compaction(message_threshold=6, keep_recent_messages=5)
    )
    config = _config()
    events: list[dict] = []
    for text in ["Where is my parcel B2?", "My cat is called Miso", "I live in Lyon"]:
        events += await run(agent, {"messages": [HumanMessage(text)]}, config, ctx)
    # before the third turn's model call: 7 messages; keeping 5 would split the tool call from
    # its result, so only the first message is evicted and the tail starts at the call
    [compacted] = [e for e in events if e["event"] == "context.compacted"]
    assert (compacted["evicted"], compacted["kept"], compacted["episodes"]) == (1, 6, 1)
    state = agent.get_state(config).values
    assert [m.type for m in state["messages"]][:2] == ["ai", "tool"]
    assert state["messages"][0].tool_calls[0]["id"] == state["messages"][1].tool_call_id
    assert "parcel B2" in state["summary"] and state["evicted_message_count"] == 1
    archived = store.search(("episodes", "carol"), query="parcel B2")
    assert [item.value["content"].split(": ", 1)[1] for item in archived] == [
        "Where is my parcel B2?"
    ]
    assert "parcel B2" in model.calls[-1][0].content  # the summary reaches the model
    assert state["pending_extraction"] == [] and state["consolidation"]["trigger"] == "eviction"


async def test_incognito_recalls_and_writes_nothing(store, saver, run) -> None:
    model = RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
    agent = create_agent(
        model,
        middleware=[EngramMiddleware()],
        store=store,
        checkpointer=saver,
        context_schema=Context,
    )
    await run(
        agent,
        {"messages": [HumanMessage("I prefer tea over coffee")]},
        _config(),
        Context(user_id="dan", extraction=Extraction(every_turns=1)),
    )
    secret = Context(user_id="dan", extraction=Extraction(every_turns=1), incognito=True)
    config = _config()
    events = await run(
        agent, {"messages": [HumanMessage("I prefer green tea actually")]}, config, secret
    )
    assert events == []
    assert "tea over coffee" not in model.calls[-1][0].content  # no recall
    events = await run(agent, {"messages": [], "end_session": True}, config, secret)
    assert events == []
    contents = [item.value["content"] for item in store.search(("memories", "dan"))]
    assert contents == ["I prefer tea over coffee"]


async def test_a_session_end_consolidates_without_calling_the_model(store, saver, run) -> None:
    model = RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
    agent = create_agent(model, middleware=[EngramMiddleware()], store=store, checkpointer=saver)
    config = _config()

    @dataclass
    class AppContext:  # the app's own context schema: engram reads its user_id
        user_id: str
        plan: str = "free"

    await run(
        agent,
        {"messages": [HumanMessage("I work at Acme as a data engineer")]},
        config,
        AppContext("erin"),
    )
    events = await run(agent, {"messages": [], "end_session": True}, config, AppContext("erin"))
    assert len(model.calls) == 1
    assert [(e["event"], e["user_id"]) for e in events] == [("memory.created", "erin")]
    assert agent.get_state(config).values["consolidation"]["trigger"] == "session_end"


def test_the_agent_and_the_graph_give_the_model_the_same_input(tmp_path) -> None:
    """One copy of the logic: the same turns through `compile_graph` and through
    `create_agent` + `EngramMiddleware` give the same model inputs and the same memory state."""
    texts = [
        "I prefer dark mode in every editor",
        "My sister Ana lives in Porto",
        "I work at Acme as a data engineer",
        "We deploy with Argo CD",
        "Remind me which editor theme I like",
        "And where does Ana live?",
    ]
    ctx = Context(
        user_id="fay",
        compaction=Compaction(message_threshold=5, keep_recent_messages=2),
        extraction=Extraction(every_turns=2),
    )
    results = []
    for kind in ("graph", "agent"):
        index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
        store = ChromaStore(
            chromadb.PersistentClient(path=str(tmp_path / kind)), collection="same", index=index
        )
        model = RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
        if kind == "graph":
            app = compile_graph(
                model,
                store=store,
                checkpointer=ThreadedSqliteSaver.from_path(tmp_path / f"{kind}.sqlite"),
            )
        else:
            app = create_agent(
                model,
                middleware=[EngramMiddleware()],
                store=store,
                checkpointer=ThreadedSqliteSaver.from_path(tmp_path / f"{kind}.sqlite"),
                context_schema=Context,
            )
        config = _config()
        for text in texts:
            app.invoke({"messages": [HumanMessage(text)]}, config, context=ctx)
        state = app.get_state(config).values
        inputs = [[(m.type, m.content) for m in call] for call in model.calls]
        memories = sorted(i.value["content"] for i in store.search(("memories", "fay"), limit=50))
        results.append((inputs, memories, state))
        store.close()
    (graph_inputs, graph_memories, graph_state), (agent_inputs, agent_memories, agent_state) = (
        results
    )
    assert len(graph_inputs) == len(texts)
    assert "Ana lives in Porto" in graph_inputs[-1][0][1]  # recalled or summarized
    assert agent_memories == graph_memories and len(graph_memories) >= 3
    keys = ("turn", "turns_since_consolidation")
    assert {k: agent_state.get(k) for k in keys} == {k: graph_state.get(k) for k in keys}
    # the graph compacts at the end of a turn, the agent before the next model call (the new
    # message is then in the kept tail): the inputs agree up to the first compaction
    assert agent_inputs[:2] == graph_inputs[:2]
    assert graph_state["summary"] and agent_state["summary"]


async def test_without_a_user_in_the_context_the_config_names_it(store, saver, run) -> None:
    model = RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
    agent = create_agent(model, middleware=[EngramMiddleware()], store=store, checkpointer=saver)
    config = {"configurable": {"thread_id": str(uuid.uuid4()), "user_id": "gus"}}
    await run(agent, {"messages": [HumanMessage("I prefer tabs over spaces")]}, config, None)
    await run(agent, {"messages": [], "end_session": True}, config, None)
    assert [i.value["content"] for i in store.search(("memories", "gus"))] == [
        "I prefer tabs over spaces"
    ]
    assert store.search(("memories", "default")) == []
