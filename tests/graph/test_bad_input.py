"""Bad input gets a clear error or a clean result and never breaks a thread: lone surrogates,
a message that can never fit the window, memories without words or too long, and `Context`
settings that make no sense."""

from __future__ import annotations

import itertools
import uuid

import chromadb
import pytest
from fakes import NGramEmbeddings, RecordingChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from engram.graph import Context, Recall, SettingsError, compile_graph
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.nodes.start import ContextOverflowError
from engram.stores.chroma.store import ChromaStore, default_index
from engram.stores.embeddings import LocalEmbeddings
from engram.stores.memory.content import MAX_CONTENT_CHARS
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.markdown.format import parse_markdown
from engram.stores.memory.types import MemoryCandidate

REPLACEMENT = "\ufffd"


def _model() -> RecordingChatModel:
    return RecordingChatModel(messages=itertools.cycle(["noted."]))


def _config() -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


# -- lone surrogates ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embeddings() -> LocalEmbeddings:
    return LocalEmbeddings()


def test_a_lone_surrogate_in_a_message_is_replaced_and_the_turn_answers(tmp_path, embeddings):
    """The real embedder (whose tokenizer raised TypeError on it), Chroma and the SQLite
    checkpointer all see valid text; the message keeps everything else it said."""
    store = ChromaStore(
        chromadb.EphemeralClient(),
        collection=f"s-{uuid.uuid4().hex[:12]}",
        index=default_index(embeddings),
    )
    LongTermMemory(store).upsert(
        "sue", [MemoryCandidate(content="Sue drinks green tea every morning", category="fact")]
    )
    model = _model()
    saver = ThreadedSqliteSaver.from_path(tmp_path / "checkpoints.sqlite")
    graph = compile_graph(model, store=store, checkpointer=saver)
    config, ctx = _config(), Context(user_id="sue", recall=Recall(timeout_ms=60_000))

    out = graph.invoke(
        {"messages": [HumanMessage("I prefer green tea \ud800 over coffee \udfff!")]},
        config,
        context=ctx,
    )

    expected = f"I prefer green tea {REPLACEMENT} over coffee {REPLACEMENT}!"
    assert out["failures"] == []  # recall ran, nothing was worked around
    assert out["built_context"]["memory_ids"]  # and found Sue's memory
    assert out["messages"][0].content == expected
    assert model.calls[-1][-1].content == expected
    assert graph.get_state(config).values["messages"][0].content == expected  # as checkpointed
    out = graph.invoke({"end_session": True}, config, context=ctx)
    stored = [m.content for m in LongTermMemory(store).list("sue")]
    assert expected in stored
    store.close()
    saver.conn.close()


def test_the_memory_api_and_the_embedder_read_a_lone_surrogate_as_the_replacement(embeddings):
    store = InMemoryStore(index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]})
    ltm = LongTermMemory(store)
    [result] = ltm.upsert(
        "u", [MemoryCandidate(content="Likes \udcff jazz", category="preference")]
    )
    assert result.memory is not None and result.memory.content == f"Likes {REPLACEMENT} jazz"
    assert [s.memory.id for s in ltm.search("u", "jazz \ud800")] == [result.memory.id]
    assert ltm.search_episodes("u", "\ud800") == []
    assert embeddings.embed_query("a \ud800 b") == embeddings.embed_query(f"a {REPLACEMENT} b")
    assert embeddings.embed_query("\ud83d\ude00") == embeddings.embed_query("\U0001f600")


# -- a message that can never fit -----------------------------------------------------------------


def test_a_message_that_can_never_fit_fails_its_turn_and_the_next_turn_answers():
    model = _model()
    graph = compile_graph(model, store=InMemoryStore(), checkpointer=InMemorySaver())
    config, ctx = _config(), Context(user_id="big")  # the fake model: 8192 tokens
    huge = "word " * 200_000  # 1 MB

    with pytest.raises(ContextOverflowError, match=r"stays in the thread.*next turn leaves it out"):
        graph.invoke({"messages": [HumanMessage(huge, id="huge")]}, config, context=ctx)
    assert not model.calls

    for question in ("What is the capital of France?", "And of Spain?"):
        out = graph.invoke({"messages": [HumanMessage(question)]}, config, context=ctx)
        assert isinstance(out["messages"][-1], AIMessage)  # answered
        sent = model.calls[-1]
        assert sent[-1].content == question
        assert all(len(m.text) < 5_000 for m in sent)  # the 1 MB never reaches the model
        assert (
            out["built_context"]["token_stats"]["total"]
            <= out["built_context"]["budget"]["available"]
        )

    first_reply = model.calls[0]
    assert [m.id for m in first_reply[1:-1]] == ["huge"]
    assert (
        first_reply[1].content
        == "[left out: a message of 1,000,000 characters, too long for the model's context window]"
    )
    assert isinstance(first_reply[0], SystemMessage)
    messages = graph.get_state(config).values["messages"]
    assert any(m.id == "huge" and m.content == huge for m in messages)  # never lost


def test_several_messages_left_by_failed_turns_are_elided_oldest_first():
    model = _model()
    graph = compile_graph(model, store=InMemoryStore(), checkpointer=InMemorySaver())
    config, ctx = _config(), Context(user_id="big", context_window=4000)
    for n in range(2):
        with pytest.raises(ContextOverflowError):
            graph.invoke(
                {"messages": [HumanMessage(f"{n} " * 5000, id=f"big{n}")]}, config, context=ctx
            )
    out = graph.invoke({"messages": [HumanMessage("short question", id="q")]}, config, context=ctx)
    assert out["built_context"]["elided_message_ids"] == ["big0", "big1"]
    assert [m.id for m in model.calls[-1][1:]] == ["big0", "big1", "q"]


# -- memories without words, or too long ----------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("", "is empty"),
        ("   \n\t", "only whitespace"),
        (".", "no letters or digits"),
        ("!!! ... ???", "no letters or digits"),
        ("。，！", "no letters or digits"),
        ("x" * (MAX_CONTENT_CHARS + 1), f"more than the {MAX_CONTENT_CHARS} a memory holds"),
    ],
)
def test_a_memory_without_words_or_too_long_is_refused_with_what_to_do(content, says):
    with pytest.raises(ValueError, match=says):
        MemoryCandidate(content=content, category="fact")


@pytest.mark.parametrize("content", ["42", "猫", "x" * MAX_CONTENT_CHARS, "C++ > C"])
def test_short_memories_of_any_script_are_accepted(content):
    assert MemoryCandidate(content=f" {content} ", category="fact").content == content


def test_a_byte_order_mark_does_not_hide_the_title_of_a_memory_md():
    text = "\ufeff# Memories of alice\n\n## Facts\n\n- Alice lives in Lyon\n"
    doc = parse_markdown(text)
    assert doc.warnings == []
    assert [b.content for b in doc.bullets] == ["Alice lives in Lyon"]


# -- Context ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("user_id", ""),
        ("user_id", "   "),
        ("user_id", "\t\n"),
        ("user_id", None),
        ("user_id", 7),
        ("user_id", "bad \ud800"),
        ("context_window", 0),
        ("context_window", -8192),
        ("context_window", 8192.5),
        ("compaction.message_threshold", 0),
        ("compaction.token_threshold", 0),
        ("compaction.token_threshold", "3000"),
        ("compaction.max_summary_tokens", 0),
        ("compaction.keep_recent_messages", -1),
        ("compaction.max_messages", 0),
        ("extraction.every_turns", 0),
        ("recall.k", -1),
        ("recall.k", True),
        ("recall.episodes", -2),
        ("recall.episode_min_similarity", 1.5),
        ("recall.episode_min_similarity", float("nan")),
        ("recall.timeout_ms", 0),
        ("incognito", "yes"),
        ("system_prompt", None),
        ("memory_work", "later"),
        ("extraction.mode", "llm"),
        ("working_memory.offload_threshold_tokens", 0),
    ],
)
def test_context_refuses_a_bad_field_naming_it_and_what_it_accepts(field, value):
    group, _, name = field.rpartition(".")
    with pytest.raises(SettingsError) as raised:
        Context(**({group: {name: value}} if group else {name: value}))
    message = str(raised.value)
    assert message.startswith(f"Context.{field}: ") and message.endswith(f"got {value!r}")
    assert "pydantic" not in message and "http" not in message


@pytest.mark.parametrize(
    ("old", "new"),
    [("recall_k", "recall.k"), ("consolidate_every_turns", "extraction.every_turns")],
)
def test_a_setting_from_before_the_groups_says_where_it_went(old, new):
    with pytest.raises(SettingsError, match=rf"^Context\.{old} is now Context\.{new}: pass "):
        Context(**{old: 3})


def test_a_misspelt_setting_is_refused_not_ignored():
    with pytest.raises(SettingsError, match=r"^Context\.recall\.kk is not a setting"):
        Context(recall={"kk": 3})


@pytest.mark.parametrize("user_id", ["alice@example.com", "*", "/", "用户", "a b", ".", "x" * 500])
def test_any_other_user_id_is_accepted(user_id):
    assert Context(user_id=user_id).user_id == user_id


def test_a_bad_context_fails_the_invoke_that_brings_it():
    model = _model()
    graph = compile_graph(model, store=InMemoryStore(), checkpointer=InMemorySaver())
    with pytest.raises(ValueError, match=r"Context\.recall\.k: input should be greater than or"):
        graph.invoke({"messages": [HumanMessage("hi")]}, _config(), context={"recall": {"k": -1}})
    assert not model.calls
