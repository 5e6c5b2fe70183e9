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


async def test_an_edited_memory_is_not_history_the_edit_alone_is_shown(store: BaseStore) -> None:
    from engram.stores.memory.manage.edit import edit_steps
    from engram.stores.steps import run_steps

    said = _say(store, "I live at 12 Rua Augusta in Lisbon with my ex Maria", "2026-01-05", "m1")
    run_steps(store, edit_steps(USER, said.id, "I live in Lisbon", "fact", "2026-01-06T10:00:00+00:00"))
    memories, _ = await recall(store, CTX, "I live at 12 Rua Augusta with Maria", first_turn=True)
    assert [(s.memory.content, s.earlier) for s in memories] == [("I live in Lisbon", ())]
    assert "Rua Augusta" not in await _block(store, "I live at 12 Rua Augusta with Maria")


async def test_a_memory_retired_with_nothing_replacing_it_is_not_shown(store: BaseStore) -> None:
    acme = Memory.new("I work at Acme", "fact", 0.8, now="2026-01-05T10:00:00+00:00")
    retired = acme.model_copy(update={"valid_until": "2026-02-01T00:00:00+00:00"})
    store.batch([memory_put(("memories", USER), retired)])
    memories, _ = await recall(store, CTX, "I work at Acme", first_turn=True)
    assert memories == []


async def test_versions_of_one_memory_take_one_place_and_show_the_latest_two(
    store: BaseStore,
) -> None:
    for n, day in enumerate(["01", "02", "03", "04", "05", "06", "07"], 1):
        _say(store, f"I have saved {n * 50} euros for the bike", f"2026-{day}-01", f"s{n}",
             key="goal.bike_savings")
    for n, text in enumerate(["my bike is a blue gravel bike", "the bike shop is on Rua Nova",
                              "I ride the bike to work", "the bike needs new tyres"]):
        _say(store, text, "2026-01-10", f"o{n}", key=f"fact.bike_{n}")
    memories, _ = await recall(store, CTX.replace(recall=CTX.recall.replace(k_first_turn=5)),
                               "how much have I saved for the bike", first_turn=True)
    assert len(memories) == 5
    [savings] = [s for s in memories if "euros" in s.memory.content]
    assert savings.memory.content == "I have saved 350 euros for the bike"
    assert [m.content for m in savings.earlier] == [
        "I have saved 250 euros for the bike", "I have saved 300 euros for the bike"
    ]


async def test_an_unreadable_date_on_a_replaced_memory_does_not_break_recall(
    store: BaseStore,
) -> None:
    lisbon = _say(store, "I live in Lisbon", "2026-01-05", "m1")
    _say(store, "I moved to Porto", "2026-03-01", "m2")
    broken = LongTermMemory(store).get(USER, lisbon.id).model_copy(update={"valid_from": "soon"})
    store.batch([memory_put(("memories", USER), broken)])
    block = await _block(store, "I live in Lisbon")
    assert "I moved to Porto (current)" in block and "earlier: I live in Lisbon" in block


def test_a_memory_whose_history_does_not_fit_is_shown_without_it() -> None:
    from engram.nodes.start import fit_recall
    from engram.nodes.text.tokens import counter_for_model
    from engram.stores.memory.types import ScoredMemory

    old = [Memory.new(f"I lived in city number {n} for a long while", "fact", 0.8,
                      now=f"2025-0{n}-01T00:00:00+00:00") for n in (1, 2)]
    porto = Memory.new("I moved to Porto", "fact", 0.8, now="2026-03-01T00:00:00+00:00")
    entry = ScoredMemory(porto, 0.9, 0.9, 1.0, earlier=tuple(old))
    counter = counter_for_model(None)
    from engram.nodes.recalled import render_memory_block

    room = counter.count_text(render_memory_block([ScoredMemory(porto, 0.9, 0.9, 1.0)])) + 10
    used, _, block, _ = fit_recall([entry], [], room, counter)
    assert [s.memory.content for s in used] == ["I moved to Porto"] and used[0].earlier == ()
    assert "I moved to Porto" in block and "city number" not in block


async def test_only_the_messages_about_a_replaced_memory_are_marked_changed(
    store: BaseStore,
) -> None:
    """A memory the model wrote lists every message of its window as a source."""
    window = ["m1", "m9"]
    [first] = LongTermMemory(store).upsert(
        USER,
        [MemoryCandidate(content="The user lives in Lisbon", category="fact", key="home.city",
                         said_at="2026-01-05T10:00:00+00:00")],
        thread_id="t1", message_ids=window,
    )
    _say(store, "I moved to Porto", "2026-03-01", "m2")
    store.batch(episode_ops([HumanMessage("btw I live in Lisbon", id="m1"),
                             HumanMessage("my cat Miso loves Lisbon trams", id="m9")],
                            user_id=USER, thread_id="t1"))
    block = await _block(store, "I live in Lisbon, my cat Miso")
    assert "- user: btw I live in Lisbon (changed since)" in block
    assert "- user: my cat Miso loves Lisbon trams (changed since)" in block  # shares "Lisbon"
    store.batch(episode_ops([HumanMessage("Miso sleeps all day", id="m9")], user_id=USER,
                            thread_id="t1"))
    block = await _block(store, "I live in Lisbon, my cat Miso sleeps all day")
    assert "- user: Miso sleeps all day\n" in block + "\n"
