"""The consolidate node inside a real compiled LangGraph graph (START -> consolidate -> END)."""

from __future__ import annotations

import logging
from typing import Any
from uuid import uuid4

import chromadb
import pytest
from fakes import FailingStore, NGramEmbeddings, StructuredFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.store.memory import InMemoryStore

from engram.nodes.consolidate import make_consolidate, windows
from engram.nodes.context import Context, Extraction, Recall
from engram.nodes.extract.llm import LLMExtractor
from engram.nodes.state import EngramState
from engram.nodes.text.tokens import counter_for_model
from engram.nodes.text.transcript import to_pending
from engram.stores.chroma.store import ChromaStore
from engram.stores.memory.long_term import LongTermMemory

USER = "alice"
INDEX = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}


def build(store=None, memory_model=None, **kwargs: Any):
    """The consolidate node alone; with a memory model, the extractor that writes memories itself
    (`LLMExtractor`), whose canned answers these tests script (the default review extractor has
    its own tests in test_extract_review.py)."""
    store = store if store is not None else InMemoryStore(index=INDEX)
    if memory_model is not None:
        kwargs.setdefault("extractor", LLMExtractor(memory_model))
    builder = StateGraph(EngramState, context_schema=Context)
    builder.add_node("consolidate", make_consolidate(memory_model, **kwargs))
    builder.add_edge(START, "consolidate")
    builder.add_edge("consolidate", END)
    return builder.compile(store=store, checkpointer=InMemorySaver()), store


def cfg(thread: str = "t1") -> dict:
    return {"configurable": {"thread_id": thread}}


def dialog(*pairs: tuple[str, str], prefix: str = "") -> list[BaseMessage]:
    out: list[BaseMessage] = []
    for i, (user, assistant) in enumerate(pairs):
        out += [HumanMessage(user, id=f"{prefix}u{i}"), AIMessage(assistant, id=f"{prefix}a{i}")]
    return out


CONVERSATION = dialog(
    ("Hi there!", "Hello! How can I help?"),
    ("I prefer React over Vue now.", "Got it."),
    ("We use PostgreSQL 16 for everything.", "Noted."),
    ("Docker build failed because of the network timeout.", "Try proxy-env."),
    ("我打算明年学 Rust", "好的！"),
)


def memories(store, user: str = USER, **kwargs: Any):
    return LongTermMemory(store).list(user, include_superseded=True, include_forgotten=True, **kwargs)


async def run(graph, state: dict, *, thread: str = "t1", **ctx: Any) -> tuple[dict, list[dict]]:
    """Invoke once, returning the final state and the custom-stream events."""
    events, final = [], None
    async for mode, chunk in graph.astream(
        state, cfg(thread), context=Context(user_id=USER, **ctx), stream_mode=["custom", "values"]
    ):
        if mode == "custom":
            events.append(chunk)
        else:
            final = chunk
    return final, events


# -- triggers ----------------------------------------------------------------------------------

async def test_no_trigger_extracts_nothing():
    graph, store = build()
    state, events = await run(graph, {"messages": CONVERSATION, "turns_since_consolidation": 2})
    assert memories(store) == [] and events == []
    assert state["turns_since_consolidation"] == 2 and not state.get("consolidated_message_ids")


@pytest.mark.parametrize(("every", "turns"), [(5, 5), (3, 4)])
async def test_every_n_turns_extracts_and_resets_the_counter(every, turns):
    graph, store = build()
    state, _ = await run(graph, {"messages": CONVERSATION, "turns_since_consolidation": turns},
                         extraction=Extraction(every_turns=every))
    assert len(memories(store)) == 4
    assert state["turns_since_consolidation"] == 0
    assert set(state["consolidated_message_ids"]) == {m.id for m in CONVERSATION}


@pytest.mark.parametrize("backend", ["memory", "chroma"])
async def test_session_end_extracts_with_provenance_and_events(backend):
    store = (InMemoryStore(index=INDEX) if backend == "memory"
             else ChromaStore(chromadb.EphemeralClient(), collection=f"c-{uuid4().hex[:12]}", index=INDEX))
    graph, _ = build(store)
    state, events = await run(graph, {"messages": CONVERSATION, "end_session": True}, thread="thread-42")
    found = {m.content: m for m in memories(store)}
    assert {c: m.category for c, m in found.items()} == {
        "I prefer React over Vue now.": "preference",
        "We use PostgreSQL 16 for everything.": "fact",
        "Docker build failed because of the network timeout.": "lesson",
        "我打算明年学 Rust": "goal",
    }
    pref = found["I prefer React over Vue now."]
    assert pref.source_thread_id == "thread-42" and "u1" in pref.source_message_ids
    assert pref.key == "preference.frontend_framework"
    assert [e["event"] for e in events] == ["memory.created"] * 4
    assert {e["memory_id"] for e in events} == {m.id for m in found.values()}
    assert {(e["category"], e["content"]) for e in events} == {(m.category, m.content) for m in found.values()}
    assert state["failures"] == []
    record = state["consolidation"]
    assert (record["trigger"], record["mode"], record["messages"]) == ("session_end", "offline", 10)
    assert record["actions"] == {"created": 4}
    assert set(record["memory_ids"]) == {m.id for m in found.values()}


async def test_a_pasted_document_stays_a_bounded_write_keeping_the_most_important():
    facts = [f"I have a cousin called Person{i} who lives in Town{i}." for i in range(40)]
    text = " ".join(facts[:20] + ["I prefer tabs over spaces in Go."] + facts[20:])
    graph, store = build()
    await run(graph, {"messages": dialog((text, "ok")), "end_session": True})
    found = [m.content for m in memories(store)]
    assert len(found) == 10  # one window of under 4000 tokens: as many as one model call
    assert "I prefer tabs over spaces in Go." in found  # a preference outranks a plain fact
    assert found.index("I prefer tabs over spaces in Go.") > 0  # written in the message's order


# -- idempotency -------------------------------------------------------------------------------

async def test_consolidating_the_same_messages_twice_creates_nothing_new():
    graph, store = build()
    await run(graph, {"messages": CONVERSATION, "end_session": True})
    before = sorted(m.model_dump_json() for m in memories(store))
    state, events = await run(graph, {"end_session": True})
    assert events == [] and sorted(m.model_dump_json() for m in memories(store)) == before
    # Same messages in another thread (e.g. a replayed checkpoint): the write policy sees a replay.
    state, events = await run(graph, {"messages": CONVERSATION, "end_session": True}, thread="t2")
    assert events == [] and sorted(m.model_dump_json() for m in memories(store)) == before
    assert state["consolidation"]["actions"] == {"unchanged": 4}


async def test_only_new_messages_are_extracted_after_a_consolidation():
    model = StructuredFakeChatModel(structured_responses=[{"memories": []}, {"memories": []}])
    graph, _ = build(memory_model=model)
    await run(graph, {"messages": CONVERSATION, "end_session": True})
    await run(graph, {"messages": [HumanMessage("I live in Berlin.", id="new1")], "end_session": True})
    first, second = (call[1][-1].text for call in model.structured_calls)
    assert "I prefer React" in first and "Berlin" not in first
    new_part = second.split("## New messages", 1)[1]
    assert "Berlin" in new_part and "I prefer React" not in new_part
    # A one-message window is shown with the two messages before it as context.
    context = second.split("## New messages", 1)[0]
    assert "我打算明年学 Rust" in context and "好的！" in context


# -- evicted messages ---------------------------------------------------------------------------

async def test_evicted_messages_are_extracted_then_cleared():
    graph, store = build()
    evicted, kept = CONVERSATION[:6], CONVERSATION[6:]
    state, _ = await run(graph, {"messages": kept, "pending_extraction": to_pending(evicted)})
    assert {m.content for m in memories(store)} == {
        "I prefer React over Vue now.", "We use PostgreSQL 16 for everything.",
        "Docker build failed because of the network timeout.", "我打算明年学 Rust",
    }
    assert state["pending_extraction"] == []
    assert set(state["consolidated_message_ids"]) == {m.id for m in kept}  # evicted ids are not kept


async def test_evicted_messages_already_consolidated_are_skipped():
    model = StructuredFakeChatModel(structured_responses=[{"memories": []}])
    graph, _ = build(memory_model=model)
    await run(graph, {"messages": CONVERSATION[:4], "end_session": True})
    model.structured_responses.append({"memories": []})
    await run(graph, {"messages": CONVERSATION[4:], "pending_extraction": to_pending(CONVERSATION[:4])})
    assert "I prefer React" not in model.structured_calls[1][1][-1].text.split("## New messages")[1]


# -- incognito ---------------------------------------------------------------------------------

async def test_incognito_writes_nothing_and_its_messages_are_never_extracted_later():
    graph, store = build()
    state, events = await run(graph, {"messages": CONVERSATION[:4], "end_session": True}, incognito=True)
    assert memories(store) == [] and events == []
    assert set(state["consolidated_message_ids"]) == {"u1", "a1"}  # the incognito turn
    await run(graph, {"end_session": True})  # the next, normal run on the same thread
    assert memories(store) == []


# -- failures ----------------------------------------------------------------------------------

async def test_malformed_model_output_twice_falls_back_to_the_rules_for_that_window(caplog):
    bad = {"memories": [{"category": "mood", "content": "The user is happy", "importance": 0.9}]}
    good = {"memories": [{"category": "preference", "content": "The user prefers React", "importance": 0.9}]}
    model = StructuredFakeChatModel(structured_responses=[bad, None, good])
    graph, store = build(memory_model=model)
    with caplog.at_level(logging.WARNING):
        state, events = await run(graph, {"messages": CONVERSATION, "end_session": True})
    assert len(model.structured_calls) == 2  # the call and its one corrective retry
    assert [f["stage"] for f in state["failures"]] == ["extract"]
    assert "expected SaveMemories" in state["failures"][0]["error"]
    assert any(r.levelno == logging.WARNING and "extract" in r.getMessage() for r in caplog.records)
    # The offline rules extracted the window instead: nothing the user said is lost.
    contents = [m.content for m in memories(store)]
    assert any("React" in c for c in contents) and any("PostgreSQL 16" in c for c in contents)
    assert "The user is happy" not in contents
    assert state["consolidation"]["fallback_windows"] == 1
    assert len(state["consolidated_message_ids"]) == len(CONVERSATION)
    assert events and all(e["event"] == "memory.created" for e in events)


async def test_a_corrective_retry_that_parses_is_used_and_no_failure_is_recorded():
    bad = {"memories": [{"category": "mood", "content": "The user is happy", "importance": 0.9}]}
    good = {"memories": [{"category": "preference", "content": "The user prefers React", "importance": 0.9}]}
    model = StructuredFakeChatModel(structured_responses=[bad, good])
    graph, store = build(memory_model=model)
    state, _ = await run(graph, {"messages": CONVERSATION, "end_session": True})
    assert state["failures"] == [] and state["consolidation"]["fallback_windows"] == 0
    assert [m.content for m in memories(store)] == ["The user prefers React"]


async def test_a_failing_extractor_is_recorded_and_the_rules_extract_instead():
    model = StructuredFakeChatModel(structured_responses=[ConnectionError("model server down")])
    graph, store = build(memory_model=model)
    state, _ = await run(graph, {"messages": CONVERSATION, "end_session": True})
    assert state["failures"] == [{"stage": "extract", "error": "ConnectionError: model server down"}]
    assert state["consolidation"]["mode"] == "llm" and state["consolidation"]["fallback_windows"] == 1
    assert any("PostgreSQL 16" in m.content for m in memories(store))


async def test_a_failing_store_keeps_the_messages_pending():
    store = FailingStore(index=INDEX)
    graph, _ = build(store)
    evicted, kept = CONVERSATION[:6], CONVERSATION[6:]
    state, _ = await run(graph, {"messages": kept, "pending_extraction": to_pending(evicted)})
    assert [f["stage"] for f in state["failures"]] == ["store"]
    assert [m["data"]["id"] for m in state["pending_extraction"]] == [m.id for m in evicted]
    store.failing = False
    state, _ = await run(graph, {"turns_since_consolidation": 0})
    # `failures` accumulates within a turn (operator.add); in the full graph `start` resets it.
    assert state["pending_extraction"] == [] and len(state["failures"]) == 1
    assert len(memories(store)) == 4


# -- the LLM path, supersede events --------------------------------------------------------------

async def test_llm_extraction_supersedes_and_announces_it():
    vue = {"memories": [{"category": "preference", "content": "The user likes Vue", "importance": 0.9,
                         "key": "preference.frontend_framework"}]}
    react = {"memories": [{"category": "preference", "content": "The user prefers React now", "importance": 0.9,
                           "key": "preference.frontend_framework"},
                          {"category": "fact", "content": "The user has a cat", "importance": 0.2}]}
    model = StructuredFakeChatModel(structured_responses=[vue, react])
    graph, store = build(memory_model=model)
    _, first = await run(graph, {"messages": dialog(("I like Vue", "ok")), "end_session": True})
    _, second = await run(graph, {"messages": dialog(("I prefer React now", "ok"), prefix="b"), "end_session": True})
    [created] = first
    assert [e["event"] for e in second] == ["memory.created", "memory.superseded"]
    assert second[1]["memory_id"] == created["memory_id"]
    assert second[1]["superseded_by"] == second[0]["memory_id"]
    assert [m.content for m in LongTermMemory(store).list(USER)] == ["The user prefers React now"]
    old = LongTermMemory(store).get(USER, created["memory_id"])
    assert old.valid_until is not None  # history kept; the low-importance cat was dropped
    assert len(memories(store)) == 2


# -- windows -------------------------------------------------------------------------------------

def test_windows_respect_message_and_token_limits_without_splitting_exchanges():
    counter = counter_for_model(None)
    messages = dialog(*[(f"user says {i}", f"assistant answers {i}") for i in range(12)])
    packed = windows(messages, counter, max_messages=5, max_tokens=4000)
    assert [len(w) for w in packed] == [4] * 6
    assert [m for w in packed for m in w] == messages
    long = dialog(("x " * 3000, "ok"), ("short", "ok"))
    assert [len(w) for w in windows(long, counter, max_messages=10, max_tokens=1000)] == [2, 2]


@pytest.mark.parametrize("incognito", [False, True])
def test_a_session_end_archives_every_message_still_in_the_thread(incognito) -> None:
    """A short session is never compacted: its end archives its messages as episodes, so a
    later thread can recall what extraction did not keep; an incognito session leaves none."""
    import itertools

    from fakes import RecordingChatModel

    from engram.graph import compile_graph

    store = InMemoryStore(index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]})
    model = RecordingChatModel(messages=itertools.cycle(["Good to know."]))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    ctx = Context(user_id="ivy", incognito=incognito)
    config = {"configurable": {"thread_id": "ivy-1"}}
    said = "the boiler is a Worcester Greenstar 30i, serviced every March, key: sk-abc123abc123abc123abc123"
    graph.invoke({"messages": [HumanMessage(said)]}, config, context=ctx)
    out = graph.invoke({"messages": [], "end_session": True}, config, context=ctx)

    episodes = [item.value for item in store.search(LongTermMemory.episode_namespace("ivy"))]
    if incognito:
        assert episodes == []
        return
    assert not [f for f in out.get("failures", []) if f["stage"] == "archive"]
    contents = [e["content"] for e in episodes]
    assert any("Worcester Greenstar 30i" in c for c in contents), contents
    assert any("Good to know." in c for c in contents)
    assert not any("sk-abc123" in c for c in contents)  # redacted like every persisted text
    assert {e["thread_id"] for e in episodes} == {"ivy-1"}

    graph.invoke({"messages": [], "end_session": True}, config, context=ctx)  # again: no copies
    assert len(store.search(LongTermMemory.episode_namespace("ivy"))) == len(episodes)

    later = graph.invoke(
        {"messages": [HumanMessage("which boiler model do I have?")]},
        {"configurable": {"thread_id": "ivy-2"}},
        context=Context(
            user_id="ivy", recall=Recall(episode_min_similarity=0.0)
        ),  # n-gram test embeddings
    )
    assert later["built_context"]["episode_ids"]


async def test_a_memory_the_model_wrote_from_nothing_the_user_said_is_dropped_and_recorded():
    said = {"memories": [
        {"category": "preference", "content": "The user prefers dark mode", "importance": 0.9},
        {"category": "preference", "content": "Este é o que você gostaria de salvar", "importance": 0.9},
        {"category": "goal", "content": "The user will visit the Louvre and Sainte-Chapelle", "importance": 0.8},
    ]}
    model = StructuredFakeChatModel(structured_responses=[said])
    graph, store = build(memory_model=model)
    messages = dialog(("i like dark themes when coding. in paris for 3 days next week",
                       "Dark mode it is. In Paris, see the Louvre and Sainte-Chapelle."))
    state, events = await run(graph, {"messages": messages, "end_session": True})
    assert [m.content for m in LongTermMemory(store).list(USER)] == ["The user prefers dark mode"]
    dropped = [f for f in state["failures"] if f["stage"] == "ungrounded"]
    assert [f["error"] for f in dropped] == [
        "Este é o que você gostaria de salvar",
        "The user will visit the Louvre and Sainte-Chapelle",
    ]
    assert [e["event"] for e in events] == ["memory.created"]
