"""A slow or broken embedder, store or memory model never costs the user a reply: the turn goes
on without what failed, and says so in `state["failures"]`."""

from __future__ import annotations

import itertools
import uuid
import warnings

import pytest
from fakes import (
    FailingChatModel,
    FailingEmbeddings,
    FailingStore,
    NGramEmbeddings,
    RecordingChatModel,
    SlowEmbeddings,
)
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from engram.graph import Context, Recall, compile_graph
from engram.nodes import failures
from engram.nodes.failures import MemoryModelFallbackWarning
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
    embeddings = SlowEmbeddings(delay=0.0)
    store = _store(embeddings)
    _turn(store, Context(user_id="ann"))  # the store's first recall: its start-up is done
    embeddings.delay = 5.0
    out, _ = _turn(store, Context(user_id="ann", recall=Recall(timeout_ms=50)))
    assert out["messages"][-1].content == "Here is my answer."
    assert out["failures"] == [{"stage": "recall", "error": "TimeoutError: no answer within 50 ms"}]


def test_the_first_recall_from_a_store_may_take_its_start_up_time() -> None:
    """Loading the embedder and the indexes is not a slow store: a quiet machine's first turn
    recalls, however short the budget of the turns after it."""
    embeddings = SlowEmbeddings(delay=0.3)
    store = _store(embeddings)
    LongTermMemory(store).upsert("ann", [MemoryCandidate(content="I drink oolong tea", category="preference")])
    out, _ = _turn(store, Context(user_id="ann", recall=Recall(timeout_ms=50)))
    assert out["failures"] == [] and out["built_context"]["memory_ids"]
    out, _ = _turn(store, Context(user_id="ann", recall=Recall(timeout_ms=50)))
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


def test_a_failing_memory_model_falls_back_visibly_and_warns_once(monkeypatch) -> None:
    """The offline rules do the extraction; the state lists the fallback, and a warning saying
    what to check is shown once per process, not on every turn."""
    monkeypatch.setattr(failures, "_WARNED", set())
    store = _store(NGramEmbeddings())
    model = RecordingChatModel(messages=itertools.cycle(["Noted."]))
    graph = compile_graph(model, memory_model=FailingChatModel(), store=store,
                          checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(user_id="ada", memory_work="inline")
    graph.invoke({"messages": [HumanMessage("I am vegetarian.")]}, config, context=ctx)
    with pytest.warns(MemoryModelFallbackWarning, match="extract call failed") as shown:
        out = graph.invoke({"messages": [], "end_session": True}, config, context=ctx)
    assert [f["stage"] for f in out["failures"]] == ["extract"]
    assert out["consolidation"]["mode"] == "llm" and out["consolidation"]["fallback_windows"] == 1
    assert LongTermMemory(store).list("ada")  # the rules' memory was written

    with warnings.catch_warnings():
        warnings.simplefilter("error", MemoryModelFallbackWarning)  # a second one would raise
        graph.invoke({"messages": [HumanMessage("I live in Porto.")]}, config, context=ctx)
        out = graph.invoke({"messages": [], "end_session": True}, config, context=ctx)
    assert [f["stage"] for f in out["failures"]] == ["extract"]
    assert len([w for w in shown if w.category is MemoryModelFallbackWarning]) == 1
