"""A turn's memory block never shows a replaced statement as current: a replaced memory the
recall matches comes as the history of its current version, and the archived messages it came
from (and the replies to them) are marked as changed since. On every store, with the write
policy's own supersedes."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.base import BaseStore

from engram.nodes.context import Context, Recall
from engram.nodes.episodes import episode_ops
from engram.nodes.start import prepare_context, recall
from engram.stores.memory.long_term import LongTermMemory, MemoryCandidate
from engram.stores.memory.types import Memory, memory_put

USER = "ada"
CTX = Context(
    user_id=USER,
    recall=Recall(episode_min_similarity=0.0, episode_min_relevance=0.0, reply_min_relevance=0.0),
)


def _say(store: BaseStore, text: str, day: str, message_id: str, key: str = "home.city") -> Memory:
    [result] = LongTermMemory(store).upsert(
        USER,
        [MemoryCandidate(content=text, category="fact", key=key, said_at=f"{day}T10:00:00+00:00")],
        thread_id=f"t-{message_id}",
        message_ids=[message_id],
    )
    assert result.memory is not None
    return result.memory


async def _block(store: BaseStore, query: str) -> str:
    built, failures = await prepare_context(
        {"messages": [HumanMessage(query, id="now")]}, CTX, store, model_name=None, window=8192
    )
    assert failures == []
    return built["memory_block"]


async def test_a_replaced_memory_is_shown_under_its_current_version_never_alone(
    store: BaseStore,
) -> None:
    lisbon = _say(store, "I live in Lisbon", "2026-01-05", "m1")
    porto = _say(store, "I moved to Porto last month", "2026-03-01", "m2")
    assert LongTermMemory(store).get(USER, lisbon.id).superseded_by == porto.id
    block = await _block(store, "I live in Lisbon")
    assert "- [1 March 2026] I moved to Porto last month (current)\n" in block
    assert "  - earlier [5 January 2026]: I live in Lisbon" in block
    assert block.count("I live in Lisbon") == 1  # not also a bullet of its own
    memories, _ = await recall(store, CTX, "I live in Lisbon", first_turn=True)
    assert [(s.memory.id, [m.id for m in s.earlier]) for s in memories] == [(porto.id, [lisbon.id])]


async def test_a_chain_of_changes_shows_its_current_end_with_what_it_replaced(
    store: BaseStore,
) -> None:
    lisbon = _say(store, "I live in Lisbon", "2026-01-05", "m1")
    _say(store, "I moved to Porto", "2026-03-01", "m2")
    braga = _say(store, "I moved to Braga", "2026-06-01", "m3")
    memories, _ = await recall(store, CTX, "I live in Lisbon", first_turn=True)
    [shown] = [s for s in memories if lisbon.id in {m.id for m in s.earlier}]
    assert shown.memory.id == braga.id and shown.memory.superseded_by is None
    assert all(s.memory.superseded_by is None for s in memories)


async def test_nothing_of_a_change_the_person_forgot_is_shown(store: BaseStore) -> None:
    _say(store, "I live in Lisbon", "2026-01-05", "m1")
    porto = _say(store, "I moved to Porto", "2026-03-01", "m2")
    LongTermMemory(store).forget(USER, porto.id)
    memories, _ = await recall(store, CTX, "I live in Lisbon", first_turn=True)
    assert [s.memory.content for s in memories] == []


async def test_of_a_memory_whose_untouched_clauses_were_kept_the_history_shows_what_changed(
    store: BaseStore,
) -> None:
    kept = Memory.new("I'm vegetarian", "fact", 0.8, now="2026-01-05T10:00:00+00:00")
    porto = Memory.new("I moved to Porto", "fact", 0.8, now="2026-03-01T10:00:00+00:00")
    both = Memory.new("I live in Lisbon and I'm vegetarian", "fact", 0.8,
                      now="2026-01-05T10:00:00+00:00").model_copy(
        update={"superseded_by": porto.id, "valid_until": porto.created_at, "kept_as": kept.id}
    )
    store.batch([memory_put(("memories", USER), m) for m in (kept, porto, both)])
    memories, _ = await recall(store, CTX, "I live in Lisbon and I'm vegetarian", first_turn=True)
    [history] = [s for s in memories if s.earlier]
    assert history.memory.id == porto.id
    assert [m.content for m in history.earlier] == ["I live in Lisbon"]
    assert kept.id in {s.memory.id for s in memories}


async def test_the_messages_a_replaced_memory_came_from_are_marked_changed(
    store: BaseStore,
) -> None:
    _say(store, "I live in Lisbon", "2026-01-05", "m1")
    _say(store, "I moved to Porto", "2026-03-01", "m2")
    said = [
        HumanMessage("btw I live in Lisbon, near the river", id="m1"),
        AIMessage("Lisbon by the river sounds lovely", id="a1"),
        HumanMessage("my cat Miso hates the river", id="m9"),
    ]
    store.batch(episode_ops(said, user_id=USER, thread_id="t-m1"))
    block = await _block(store, "I live in Lisbon near the river, my cat Miso hates it")
    assert "- user: btw I live in Lisbon, near the river (changed since)" in block
    assert "Lisbon by the river sounds lovely (changed since)" in block
    assert "- user: my cat Miso hates the river\n" in block + "\n"  # not from a replaced memory


def test_the_sync_and_async_turn_recall_agree(store: BaseStore) -> None:
    import asyncio

    lisbon = _say(store, "I live in Lisbon", "2026-01-05", "m1")
    porto = _say(store, "I moved to Porto", "2026-03-01", "m2")
    ltm = LongTermMemory(store)
    sync = ltm.recall_for_turn(USER, "I live in Lisbon")
    both = asyncio.run(ltm.arecall_for_turn(USER, "I live in Lisbon"))
    for found in (sync, both):
        assert [(s.memory.id, [m.id for m in s.earlier]) for s in found] == [(porto.id, [lisbon.id])]
