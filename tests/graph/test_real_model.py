"""One real chat model answers and writes memory, through every entry point.

The model is a real OpenAI-compatible HTTP server: llama.cpp's, started in this process by
`local_chat_model` (Qwen2.5-Coder-0.5B, the weights cached by the first model test). It is
reached through `local_chat_model`'s own `ChatOpenAI` and through plain `ChatOpenAI(base_url=...)`
objects, which share langchain-openai's async HTTP client per base URL, as an app's do.

The async cases share one event loop, as the requests of one web app do (langchain-openai's
shared async client belongs to the loop it first ran on, whoever calls it). Every case asserts
that the reply came, that the summary and the extraction ran on the model
(not the offline fallback), and that a new thread of the same user recalls what was said.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_openai import ChatOpenAI

from engram.graph import (
    Compaction,
    Context,
    EngramMiddleware,
    Extraction,
    compile_graph,
    wait_for_memory_work,
)
from engram.graph.builder import default_checkpointer, default_store
from engram.graph.local_model import local_chat_model

pytestmark = pytest.mark.model

TURNS = (
    "Hi! I'm Priya. I am vegetarian and I live in Lisbon.",
    "I work as a nurse at the Santa Maria hospital, night shifts mostly.",
    "My daughter Mira is seven and she plays the violin.",
)
PROBE = "Where do I live, and what do I eat?"
ONE_APP = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def served() -> ChatOpenAI:
    # Short answers keep the run quick; the memory calls set their own output limits.
    return local_chat_model("local:0.5b", threads=1, timeout=900, max_tokens=32)


@pytest.fixture
def plain(served: ChatOpenAI):
    """Plain `ChatOpenAI` objects on the served base URL, with langchain-openai's default
    (shared) HTTP clients."""

    def make() -> ChatOpenAI:
        return ChatOpenAI(
            base_url=served.openai_api_base, api_key="local", model=served.model_name,
            max_tokens=32, timeout=900, max_retries=0, temperature=0.0,
        )

    return make


@pytest.fixture(autouse=True)
def data_folder(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))


def _ctx(user: str, memory_work: str) -> Context:
    # The 0.5B reviews the rules' candidates: "auto" picks that for local_chat_model's objects,
    # and plain ChatOpenAI objects on the same server are told so.
    return Context(
        user_id=user,
        compaction=Compaction(message_threshold=4, keep_recent_messages=2),
        extraction=Extraction(every_turns=2, mode="review"),
        memory_work=memory_work,
    )


def _config() -> dict[str, Any]:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _check_session(results: list[dict[str, Any]], final: dict[str, Any]) -> None:
    """The replies came, and the memory work of the session ran on the model."""
    for result in results:
        reply = result["messages"][-1]
        assert isinstance(reply, AIMessage) and reply.text.strip(), reply
    failures = [f for r in [*results, final] for f in r.get("failures", [])]
    assert not [f for f in failures if f["stage"] in ("summarize", "extract")], failures
    assert final["summary_info"]["mode"] == "llm", final.get("summary_info")
    assert final["consolidation"]["mode"] == "llm"
    assert final["consolidation"]["fallback_windows"] == 0


def _check_recall(result: dict[str, Any]) -> None:
    assert result["built_context"]["memory_ids"], result["built_context"]
    assert result["messages"][-1].text.strip()


@pytest.mark.parametrize("memory_work", ["inline", "background"])
def test_one_model_object_in_both_roles_through_invoke(served, memory_work) -> None:
    graph = compile_graph(served, memory_model=served)
    ctx, config = _ctx("priya", memory_work), _config()
    results = [graph.invoke({"messages": [HumanMessage(t)]}, config, context=ctx) for t in TURNS]
    final = graph.invoke({"messages": [], "end_session": True}, config, context=ctx)
    _check_session(results, final)

    _check_recall(graph.invoke({"messages": [HumanMessage(PROBE)]}, _config(), context=ctx))
    assert wait_for_memory_work(timeout=600)


@ONE_APP
async def test_two_plain_models_on_one_base_url_three_users_at_once_through_ainvoke(plain):
    graph = compile_graph(plain(), memory_model=plain())

    async def session(user: str) -> None:
        ctx, config = _ctx(user, "background"), _config()
        results = []
        for text in TURNS:
            results.append(
                await graph.ainvoke({"messages": [HumanMessage(text)]}, config, context=ctx)
            )
        final = await graph.ainvoke({"messages": [], "end_session": True}, config, context=ctx)
        _check_session(results, final)
        probe = {"messages": [HumanMessage(PROBE)]}
        _check_recall(await graph.ainvoke(probe, _config(), context=ctx))

    await asyncio.gather(*(session(user) for user in ("ana", "ben", "chen")))
    # then the same graph from sync code: the shared async client is never put on a new loop
    ctx, config = _ctx("ana", "inline"), _config()
    _check_recall(graph.invoke({"messages": [HumanMessage(PROBE)]}, config, context=ctx))


@ONE_APP
async def test_one_plain_object_for_both_roles_through_ainvoke_then_invoke(plain):
    model = plain()
    graph = compile_graph(model, memory_model=model)
    ctx, config = _ctx("dara", "inline"), _config()
    results = [
        await graph.ainvoke({"messages": [HumanMessage(t)]}, config, context=ctx) for t in TURNS
    ]
    final = await asyncio.to_thread(
        graph.invoke, {"messages": [], "end_session": True}, config, context=ctx
    )
    _check_session(results, final)
    _check_recall(await graph.ainvoke({"messages": [HumanMessage(PROBE)]}, _config(), context=ctx))


def _agent(model: ChatOpenAI) -> Any:
    return create_agent(
        model,
        middleware=[EngramMiddleware(memory_model=model)],
        store=default_store(),
        checkpointer=default_checkpointer(),
        context_schema=Context,
    )


def test_the_middleware_in_a_sync_agent(served) -> None:
    agent = _agent(served)
    ctx, config = _ctx("eve", "background"), _config()
    results = [agent.invoke({"messages": [HumanMessage(t)]}, config, context=ctx) for t in TURNS]
    final = agent.invoke({"messages": [], "end_session": True}, config, context=ctx)
    _check_session(results, final)
    _check_recall(agent.invoke({"messages": [HumanMessage(PROBE)]}, _config(), context=ctx))


@ONE_APP
async def test_the_middleware_in_an_async_agent(plain) -> None:
    agent = _agent(plain())
    ctx, config = _ctx("finn", "inline"), _config()
    results = [
        await agent.ainvoke({"messages": [HumanMessage(t)]}, config, context=ctx) for t in TURNS
    ]
    final = await agent.ainvoke({"messages": [], "end_session": True}, config, context=ctx)
    _check_session(results, final)
    _check_recall(await agent.ainvoke({"messages": [HumanMessage(PROBE)]}, _config(), context=ctx))


def test_the_local_model_writing_memories_is_robust(served) -> None:
    """extraction="write" on a small model (which "auto" would not pick): whatever it answers,
    the turn goes on, the rules' candidates are stored with the model's, and any fallback is
    counted; a new thread recalls."""
    from engram.stores.memory.long_term import LongTermMemory

    graph = compile_graph(served, memory_model=served)
    ctx = Context(
        user_id="gia", extraction=Extraction(every_turns=2, mode="write"), memory_work="inline"
    )
    config = _config()
    results = [graph.invoke({"messages": [HumanMessage(t)]}, config, context=ctx) for t in TURNS]
    final = graph.invoke({"messages": [], "end_session": True}, config, context=ctx)
    assert all(r["messages"][-1].text.strip() for r in results)
    assert final["consolidation"]["extraction"] == "write"
    failures = [f for r in [*results, final] for f in r.get("failures", [])]
    fallbacks = [f for f in failures if f["stage"] == "extract"]
    assert final["consolidation"]["fallback_windows"] <= len(fallbacks)
    stored = [m.content.lower() for m in LongTermMemory(graph.store).list("gia")]
    assert any("vegetarian" in c for c in stored), stored  # the rules' candidate, at least
    _check_recall(graph.invoke({"messages": [HumanMessage(PROBE)]}, _config(), context=ctx))


def test_sync_stream_and_batch_with_one_model_object(served) -> None:
    """`stream` (tokens of the answer, none of the memory model's) and `batch` (threads at once
    on LangGraph's executor threads), the same object in both roles."""
    graph = compile_graph(served, memory_model=served)
    ctx = _ctx("hal", "inline")
    chunks = [
        chunk for chunk, meta in graph.stream(
            {"messages": [HumanMessage(TURNS[0])]}, _config(), context=ctx, stream_mode="messages"
        )
        if meta["langgraph_node"] == "respond"
    ]
    assert chunks and "".join(c.text for c in chunks).strip()

    configs = [_config() for _ in TURNS]
    outs = graph.batch([{"messages": [HumanMessage(t)]} for t in TURNS], configs, context=ctx)
    finals = [graph.invoke({"messages": [], "end_session": True}, c, context=ctx) for c in configs]
    for out, final in zip(outs, finals, strict=True):
        assert out["messages"][-1].text.strip()
        failures = [*out.get("failures", []), *final.get("failures", [])]
        assert not [f for f in failures if f["stage"] in ("summarize", "extract")], failures
        assert final["consolidation"]["mode"] == "llm"
