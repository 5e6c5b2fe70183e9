"""A slow or broken embedder, store or memory model never costs the user a reply: the turn goes
on without what failed, and says so in `state["failures"]`."""

from __future__ import annotations

import itertools
import uuid

from fakes import FailingEmbeddings, FailingStore, RecordingChatModel, SlowEmbeddings
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from engram.graph import Context, compile_graph
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.types import MemoryCandidate


def _store(embeddings: Embeddings) -> InMemoryStore:
    return InMemoryStore(index={"dims": 256, "embed": embeddings, "fields": ["content"]})


def _turn(
    store: BaseStore, ctx: Context, text: str = "What do I like to drink?"
) -> tuple[dict, RecordingChatModel]:
    model = RecordingChatModel(messages=itertools.cycle(["Here is my answer."]))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    out = graph.invoke(
        {"messages": [HumanMessage(text)]},
        {"configurable": {"thread_id": str(uuid.uuid4())}},
        context=ctx,
    )
    return out, model


def test_a_failing_embedder_skips_recall() -> None:
    embeddings = FailingEmbeddings(failing=False)
    store = _store(embeddings)
    LongTermMemory(store).upsert(
        "ann", [MemoryCandidate(content="Ann drinks green tea", category="preference")]
    )
    embeddings.failing = True
    out, model = _turn(store, Context(user_id="ann"))
    assert out["messages"][-1].content == "Here is my answer."
    assert out["failures"] == [{"stage": "recall", "error": "RuntimeError: embedder unavailable"}]
    assert out["built_context"]["memory_ids"] == []
    assert "<user_memory>" not in model.calls[0][0].content


def test_a_slow_recall_is_abandoned_after_the_timeout() -> None:
    store = _store(SlowEmbeddings(delay=5.0))
    out, _ = _turn(store, Context(user_id="ann", recall_timeout_ms=50))
    assert out["messages"][-1].content == "Here is my answer."
    assert out["failures"] == [{"stage": "recall", "error": "TimeoutError: no answer within 50 ms"}]


def test_a_failing_store_skips_recall() -> None:
    out, _ = _turn(FailingStore(), Context(user_id="ann"))
    assert out["messages"][-1].content == "Here is my answer."
    assert out["failures"] == [{"stage": "recall", "error": "OSError: store unavailable"}]


def test_failures_are_those_of_the_current_turn_only() -> None:
    store = FailingStore()
    model = RecordingChatModel(messages=itertools.cycle(["ok"]))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "t"}}
    assert graph.invoke({"messages": [HumanMessage("one")]}, config)["failures"] != []
    store.failing = False
    assert graph.invoke({"messages": [HumanMessage("two")]}, config)["failures"] == []
