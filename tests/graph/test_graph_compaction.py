"""The compaction edge and `compact`: thresholds, restart, summary, eviction, episodes."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from fakes import (
    FailingChatModel,
    FailingStore,
    NGramEmbeddings,
    RecordingChatModel,
    StructuredFakeChatModel,
)
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.memory import InMemoryStore

from engram.graph import Compaction, Context, Recall, compile_graph
from engram.nodes.episodes import episode_ops
from engram.nodes.prompts import SUMMARY_SYSTEM_PROMPT
from engram.nodes.text.tokens import counter_for_model
from engram.nodes.text.transcript import from_pending
from engram.stores.memory.long_term import LongTermMemory

INDEX = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}


def _graph(
    memory_model: Any = None, store: InMemoryStore | None = None
) -> tuple[CompiledStateGraph, InMemoryStore]:
    store = store if store is not None else InMemoryStore(index=INDEX)
    model = RecordingChatModel(messages=(f"reply {i}: noted." for i in itertools.count()))
    graph = compile_graph(
        model, memory_model=memory_model, store=store, checkpointer=InMemorySaver()
    )
    return graph, store


def _run_turns(
    graph: CompiledStateGraph, texts: list[str], ctx: Context, thread: str | None = None
) -> tuple[dict, list[dict], list[dict]]:
    """One turn per text; the last state, each turn's compaction event and node updates."""
    config = {"configurable": {"thread_id": thread or str(uuid.uuid4())}}
    events: list[dict] = []
    updates: list[dict] = []
    for text in texts:
        turn_events, turn_updates = [], {}
        for mode, chunk in graph.stream(
            {"messages": [HumanMessage(text)]},
            config,
            context=ctx,
            stream_mode=["custom", "updates"],
        ):
            if mode == "custom":
                turn_events.append(chunk)
            else:
                turn_updates.update(chunk)
        events.append(turn_events[0] if turn_events else {})
        updates.append(turn_updates)
    return graph.get_state(config).values, events, updates


def test_sixty_turns_compact_at_the_threshold_never_twice_in_a_row_and_lose_nothing() -> None:
    graph, store = _graph()
    ctx = Context(user_id="sam")
    texts = [f"Fact {i}: my locker number {i} is in building {i % 7}." for i in range(60)]
    state, events, updates = _run_turns(graph, texts, ctx, thread="sixty")

    fired = [turn for turn, event in enumerate(events, start=1) if event]
    assert fired == list(range(5, 61, 5))  # 10 new messages every 5 turns of 2 messages
    assert all(b - a > 1 for a, b in itertools.pairwise(fired))
    assert all(e["event"] == "context.compacted" and e["mode"] == "offline" for e in events if e)

    # every message ever written is still in the state, or summarized and archived as an episode
    written = {m.id for u in updates for m in u.get("respond", {}).get("messages", [])}
    written |= {m.id for u in updates for m in u.get("start", {}).get("messages", [])}
    live = {m.id for m in state["messages"]}
    episodes = store.search(LongTermMemory.episode_namespace("sam"), limit=1000)
    archived = [i for item in episodes for i in item.value["message_ids"]]
    assert len(archived) == len(set(archived)) == state["evicted_message_count"]
    assert len(live) + len(archived) == 120
    assert live.isdisjoint(archived)
    assert {m for m in written if m} <= live | set(archived)
    assert all(item.value["thread_id"] == "sixty" for item in episodes)
    assert state["summary_info"]["summarized_messages"] == len(archived)
    assert len(state["messages"]) <= 10


LONG = "The quarterly report lists revenue per region and per product line. " * 70  # 841 tokens


def test_the_token_threshold_fires_before_the_message_count() -> None:
    graph, _ = _graph()
    _, events, _ = _run_turns(graph, [LONG] * 4, Context(user_id="tok", context_window=32_000))
    assert [bool(e) for e in events] == [False, False, False, True]  # 4 x ~850 > 3000 tokens
    assert events[-1]["evicted"] == 4


def test_a_turn_over_the_token_threshold_does_not_compact_on_the_very_next_turn() -> None:
    graph, _ = _graph()
    huge = (
        "Every sentence in this memo matters to the audit of the warehouse. " * 280
    )  # 3641 tokens
    _, events, updates = _run_turns(
        graph, [huge] * 6, Context(user_id="huge", context_window=32_000)
    )
    assert ["compact" in u for u in updates] == [True, False, True, False, True, False]
    # the first time only the kept tail exists: the counters restart, nothing is evicted
    assert [e.get("evicted") for e in events] == [None, None, 2, None, 4, None]


def test_disabling_the_token_threshold_leaves_only_the_message_count() -> None:
    graph, _ = _graph()
    _, events, _ = _run_turns(
        graph,
        [LONG] * 5,
        Context(user_id="t", compaction=Compaction(token_threshold=None), context_window=32_000),
    )
    assert [bool(e) for e in events] == [False, False, False, False, True]


def test_compaction_keeps_a_tail_and_queues_evicted_messages_for_extraction() -> None:
    graph, _ = _graph()
    _, _, updates = _run_turns(graph, [f"note {i}" for i in range(5)], Context(user_id="q"))
    compacted = updates[-1]["compact"]
    removed = [m.id for m in compacted["messages"]]
    assert len(removed) == 6 and len(compacted["kept_tail_ids"]) == 4
    pending = from_pending(compacted["pending_extraction"])
    assert [m.id for m in pending] == removed
    assert [m.content for m in pending if m.type == "human"] == ["note 0", "note 1", "note 2"]


def test_the_offline_summary_keeps_names_and_numbers_within_its_limit() -> None:
    graph, _ = _graph()
    texts = [
        "hi",
        "My sister Lena moved to Porto in 2019.",
        "ok thanks",
        "The budget is 4200 euros.",
        "cool",
    ]
    state, _, _ = _run_turns(
        graph, texts, Context(user_id="s", compaction=Compaction(max_summary_tokens=40))
    )
    summary = state["summary"]
    assert "Lena" in summary and "Porto" in summary and "2019" in summary
    assert counter_for_model(None).count_text(summary) <= 40
    assert state["summary_info"]["mode"] == "offline"


def test_the_llm_summarizer_gets_seed_prompts_and_the_previous_summary() -> None:
    memory_model = StructuredFakeChatModel(
        messages=(f"SUMMARY v{i}" for i in itertools.count(1)),
        structured_responses=[{"memories": []}] * 10,  # the extractor's answers
    )
    graph, _ = _graph(memory_model=memory_model)
    state, _, _ = _run_turns(graph, [f"message {i}" for i in range(10)], Context(user_id="llm", memory_work="inline"))
    summaries = [
        c for c in memory_model.calls if c[0].content.startswith(SUMMARY_SYSTEM_PROMPT[:30])
    ]
    assert len(summaries) == 2
    assert "Summarize the following conversation" in summaries[0][1].content
    assert "## Existing summary\nSUMMARY v1" in summaries[1][1].content
    assert "user: message 0" in summaries[0][1].content
    assert state["summary"] == "SUMMARY v2"
    assert state["summary_info"]["mode"] == "llm"


def test_a_failing_summarizer_evicts_nothing_and_retries_next_turn() -> None:
    graph, store = _graph(memory_model=FailingChatModel())
    state, events, updates = _run_turns(
        graph, [f"message {i}" for i in range(6)], Context(user_id="f", memory_work="inline")
    )
    assert not any(events)
    assert len(state["messages"]) == 12  # nothing evicted
    assert state["messages"][-1].content.startswith("reply 5")  # the turn still answered
    assert state["failures"] == [{"stage": "summarize", "error": "RuntimeError: model unavailable"}]
    assert {"stage": "summarize", "error": "RuntimeError: model unavailable"} in updates[4][
        "compact"
    ]["failures"]
    assert "summary" not in state
    assert store.search(LongTermMemory.episode_namespace("f")) == []
    assert "compact" in updates[4] and "compact" in updates[5]  # retried on the next trigger


def test_over_the_hard_cap_a_failing_summarizer_still_evicts_with_the_lossy_note() -> None:
    graph, store = _graph(memory_model=FailingChatModel())
    state, events, _ = _run_turns(
        graph,
        [f"message {i}" for i in range(7)],
        Context(user_id="cap", compaction=Compaction(max_messages=12), memory_work="inline"),
    )
    assert events[-1]["lossy"] is True and events[-1]["evicted"] == 10
    assert "10 earlier messages could not be summarized" in state["summary"]
    assert state["summary_info"]["lossy"] is True
    assert len(state["messages"]) == 4
    assert len(store.search(LongTermMemory.episode_namespace("cap"), limit=100)) == 10  # archived


def test_a_failing_store_evicts_nothing_and_the_turn_still_answers() -> None:
    store = FailingStore(index=INDEX)
    store.failing = False
    graph, _ = _graph(store=store)
    config_thread = str(uuid.uuid4())
    _run_turns(
        graph, [f"message {i}" for i in range(4)], Context(user_id="st"), thread=config_thread
    )
    store.failing = True
    state, events, _ = _run_turns(graph, ["message 4"], Context(user_id="st"), thread=config_thread)
    assert events == [{}]
    assert len(state["messages"]) == 10
    assert state["messages"][-1].content.startswith("reply 4")
    assert [f["stage"] for f in state["failures"]] == ["recall", "archive"]
    assert all(f["error"] == "OSError: store unavailable" for f in state["failures"])


def test_episodes_keep_details_recallable_by_meaning() -> None:
    graph, store = _graph()
    texts = [
        "My bike locker number is 7391.",
        "I like rain.",
        "Lunch was fine.",
        "Nothing new.",
        "Okay.",
    ]
    _run_turns(graph, texts, Context(user_id="ep"))
    namespace = LongTermMemory.episode_namespace("ep")
    hits = store.search(namespace, query="bike locker number", limit=1)
    assert hits[0].value["content"].endswith("] user: My bike locker number is 7391.")
    assert hits[0].value["role"] == "user" and hits[0].value["context"] == ""
    reply = store.search(namespace, query="reply 0: noted.", limit=1)[0].value
    assert reply["role"] == "assistant"
    assert reply["context"] == "user: My bike locker number is 7391."  # the message it answered


def test_episodes_redact_secrets_and_share_one_item_per_repeated_text() -> None:
    store = InMemoryStore(index=INDEX)
    model = RecordingChatModel(messages=itertools.repeat("ok"))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    texts = ["my key is sk-proj-Zx81kQ0vT3mNa9Lq2Wc7Yb4Hd6Fj", "ok", "ok", "ok", "ok"]
    _run_turns(graph, texts, Context(user_id="dup"))  # turn 5 evicts six messages
    episodes = store.search(LongTermMemory.episode_namespace("dup"), limit=100)
    contents = [e.value["content"] for e in episodes]
    assert not any(
        "sk-proj" in c or "sk-proj" in e.value["context"] for c, e in zip(contents, episodes)
    )
    by_text = {c.split("] ", 1)[1]: e.value["message_ids"] for c, e in zip(contents, episodes)}
    assert set(by_text) == {"user: my key is [REDACTED]", "user: ok", "assistant: ok"}
    assert len(by_text["assistant: ok"]) == 3 and len(by_text["user: ok"]) == 2


def test_incognito_compacts_but_archives_and_queues_nothing() -> None:
    graph, store = _graph()
    _, events, updates = _run_turns(
        graph, [f"secret {i}" for i in range(5)], Context(user_id="inc", incognito=True)
    )
    assert events[-1]["evicted"] == 6 and events[-1]["episodes"] == 0
    assert updates[-1]["compact"]["pending_extraction"] == []
    assert store.search(LongTermMemory.episode_namespace("inc")) == []


def test_an_archived_detail_comes_back_when_asked_about_in_a_later_thread() -> None:
    store = InMemoryStore(index=INDEX)
    model = RecordingChatModel(messages=(f"reply {i}: noted." for i in itertools.count()))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    texts = ["My bike locker number is 7391.", "I like rain.", "Lunch was fine.", "Nothing new.", "Ok."]
    _run_turns(graph, texts, Context(user_id="ep2"))  # turn 5 evicts the first three exchanges
    ctx = Context(user_id="ep2", recall=Recall(episodes=1, episodes_first_turn=1))
    state, _, _ = _run_turns(graph, ["What is my bike locker number?"], ctx)
    system = model.calls[-1][0].content
    block = system[system.index("<user_memory>") : system.index("</user_memory>")]
    assert "## Earlier Messages" in block
    assert "]\n- user: My bike locker number is 7391.\n" in block  # under its date
    assert len(state["built_context"]["episode_ids"]) == 1

    unrelated = Context(user_id="ep2", recall=Recall(episode_min_similarity=0.99))
    state, _, _ = _run_turns(graph, ["What is my bike locker number?"], unrelated)
    assert state["built_context"]["episode_ids"] == []


def test_messages_are_stamped_once_and_episodes_carry_their_own_dates() -> None:
    graph, store = _graph()
    said = HumanMessage(
        "My locker is number 48.", additional_kwargs={"timestamp": "2023-05-08T13:56:00"}
    )
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke({"messages": [said]}, config, context=Context(user_id="dates"))
    first = graph.get_state(config).values["messages"]
    assert first[0].additional_kwargs["timestamp"] == "2023-05-08T13:56:00"  # the app's own time
    assert "timestamp" in first[1].additional_kwargs  # the reply, stamped by respond
    _run_turns(
        graph,
        ["ok", "fine", "sure", "right"],
        Context(user_id="dates"),
        thread=config["configurable"]["thread_id"],
    )
    state = graph.get_state(config).values
    assert all("timestamp" in m.additional_kwargs for m in state["messages"])  # start stamps input
    episodes = store.search(LongTermMemory.episode_namespace("dates"), limit=100)
    locker = next(e.value["content"] for e in episodes if "locker" in e.value["content"])
    assert locker == "[8 May 2023] user: My locker is number 48."


def test_an_unstamped_message_is_archived_without_a_date() -> None:
    (op,) = episode_ops([HumanMessage("no time here", id="m1")], user_id="u", thread_id="t")
    assert op.value["content"] == "user: no time here"
