"""Failures in the full graph that the other tests only cover node by node: an extractor or an
embedder that fails while a turn consolidates or compacts still leaves the user a reply, and
the failure is in the state."""

from __future__ import annotations

import itertools
import uuid

from fakes import FailingEmbeddings, RecordingChatModel, StructuredFakeChatModel
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from engram.graph import Compaction, Context, Extraction, compile_graph
from engram.stores.memory.long_term import LongTermMemory

NO_COMPACTION = Compaction(message_threshold=1000, token_threshold=None)


def _turns(graph, ctx: Context, texts: list[str], thread: str) -> dict:
    config = {"configurable": {"thread_id": thread}}
    out: dict = {}
    for text in texts:
        out = graph.invoke({"messages": [HumanMessage(text)]}, config, context=ctx)
    return out


def test_a_failing_extractor_on_a_turn_still_answers_says_so_and_falls_back_to_rules() -> None:
    memory_model = StructuredFakeChatModel(
        messages=itertools.cycle(["SUMMARY"]),
        structured_responses=[ConnectionError("model server down")] * 5,
    )
    model = RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
    store = InMemoryStore(index={"dims": 256, "embed": FailingEmbeddings(failing=False)})
    graph = compile_graph(
        model, memory_model=memory_model, store=store, checkpointer=InMemorySaver()
    )
    ctx = Context(
        user_id="ext",
        extraction=Extraction(every_turns=3),
        memory_work="inline",
        compaction=NO_COMPACTION,
    )

    out = _turns(graph, ctx, ["I prefer tea.", "I live in Oslo.", "I use Vim."], str(uuid.uuid4()))

    assert out["messages"][-1].content == "reply 2"
    assert {"stage": "extract", "error": "ConnectionError: model server down"} in out["failures"]
    assert len(memory_model.structured_calls) >= 1  # the extractor really was asked
    # The offline rules extracted the window instead of the unreachable model.
    contents = [m.content for m in LongTermMemory(store).list("ext")]
    assert any("Oslo" in c for c in contents) and any("Vim" in c for c in contents)
    assert {m.id for m in out["messages"][:2]} <= set(out["consolidated_message_ids"])


def test_an_embedder_failing_at_session_end_records_it_and_keeps_the_messages() -> None:
    embeddings = FailingEmbeddings(failing=False)
    store = InMemoryStore(index={"dims": 256, "embed": embeddings, "fields": ["content"]})
    model = RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    ctx = Context(user_id="emb", compaction=NO_COMPACTION)
    thread = str(uuid.uuid4())
    _turns(graph, ctx, ["I prefer React over Vue now."], thread)

    embeddings.failing = True
    config = {"configurable": {"thread_id": thread}}
    out = graph.invoke({"end_session": True}, config, context=ctx)

    # the memory's write and the session's archive both need the embedder
    assert [f["stage"] for f in out["failures"]] == ["store", "archive"]
    assert all("embedder unavailable" in f["error"] for f in out["failures"])
    assert LongTermMemory(store).list("emb") == []
    embeddings.failing = False
    out = graph.invoke({"end_session": True}, config, context=ctx)  # retried: nothing was lost
    assert out["failures"] == []
    assert [m.content for m in LongTermMemory(store).list("emb")] == [
        "I prefer React over Vue now."
    ]
    archived = store.search(LongTermMemory.episode_namespace("emb"))
    assert any("React over Vue" in e.value["content"] for e in archived)


def test_an_embedder_failing_while_compacting_evicts_nothing_and_the_turn_answers() -> None:
    embeddings = FailingEmbeddings(failing=False)
    store = InMemoryStore(index={"dims": 256, "embed": embeddings, "fields": ["content"]})
    model = RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    ctx = Context(user_id="arc")
    thread = str(uuid.uuid4())
    _turns(graph, ctx, [f"note {i}" for i in range(4)], thread)

    embeddings.failing = True
    out = _turns(graph, ctx, ["note 4"], thread)  # the 10th message: compaction fires

    assert out["messages"][-1].content == "reply 4"
    assert len(out["messages"]) == 10, "nothing may be evicted when it could not be archived"
    assert "archive" in [f["stage"] for f in out["failures"]]
    embeddings.failing = False
    assert store.search(LongTermMemory.episode_namespace("arc")) == []
