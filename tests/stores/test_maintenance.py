"""Maintenance: the forgetting thresholds, the cap, TTLs, compression, and restore after each.

Expected relevances are computed here from the formula with the test's own numbers; the store
runs are on langgraph's InMemoryStore and ChromaStore (ephemeral), through the sync and the
async driver.
"""

from __future__ import annotations

import asyncio
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fakes import StructuredFakeChatModel
from langgraph.store.base import BaseStore

from engram.nodes.model.compress import make_compressor
from engram.stores.maintenance.maintain import (
    amaintain,
    finish_steps,
    idle_days,
    maintain,
    relevance,
    start_steps,
)
from engram.stores.maintenance.types import Compressed, CompressedDraft, MaintenanceSettings
from engram.stores.memory.long_term import LongTermMemory, Memory, MemoryCandidate
from engram.stores.memory.types import INDEX_FIELDS
from engram.stores.memory.users import memories_steps
from engram.stores.steps import run_steps

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
USER = "alice"


@pytest.fixture(params=["sync", "async"])
def run(request, store):
    """One maintenance run at `now` (default NOW), through the sync or the async driver."""

    def go(now: datetime = NOW, **kwargs: Any):
        if request.param == "sync":
            return maintain(store, USER, clock=lambda: now, **kwargs)
        return asyncio.run(amaintain(store, USER, clock=lambda: now, **kwargs))

    return go


def put(
    store: BaseStore,
    content: str,
    *,
    importance: float,
    days: float,
    category: str = "fact",
    access_count: int = 0,
    accessed_days: float | None = None,
    key: str | None = None,
    user: str = USER,
) -> Memory:
    """A memory written `days` before NOW, last recalled `accessed_days` before NOW."""
    memory = Memory.new(
        content,
        category,
        importance,
        now=(NOW - timedelta(days=days)).isoformat(),  # type: ignore[arg-type]
        access_count=access_count,
        key=key,
        last_accessed=(NOW - timedelta(days=accessed_days)).isoformat() if accessed_days else None,
    )
    store.put(LongTermMemory.namespace(user), memory.id, memory.to_value(), index=INDEX_FIELDS)
    return memory


def everything(store: BaseStore, user: str = USER) -> dict[str, Memory]:
    return {m.id: m for m in run_steps(store, memories_steps(user))}


def seed_formula(days: float, access_count: int, importance: float) -> float:
    """The relevance formula, written out: exp(-0.01 days) * (1 + ln(1 + accesses)) * importance."""
    return math.exp(-0.01 * days) * (1 + math.log(1 + access_count)) * importance


# -- the formula ----------------------------------------------------------------------------------


def test_relevance_matches_hand_computed_values():
    fresh = Memory.new("x", "fact", 0.8, now=(NOW - timedelta(days=150)).isoformat())
    assert relevance(fresh, NOW) == pytest.approx(0.8 * math.exp(-1.5))  # 0.1785
    used = fresh.model_copy(
        update={
            "importance": 0.6,
            "access_count": 3,
            "last_accessed": (NOW - timedelta(days=40)).isoformat(),
        }
    )
    assert idle_days(used, NOW) == pytest.approx(40)
    assert relevance(used, NOW) == pytest.approx(math.exp(-0.4) * (1 + math.log(4)) * 0.6)  # 0.7

    confirmed = fresh.model_copy(update={"updated_at": (NOW - timedelta(days=5)).isoformat()})
    assert idle_days(confirmed, NOW) == pytest.approx(5)  # a write that confirmed it counts


# -- thresholds -----------------------------------------------------------------------------------


def test_thresholds_forget_lower_and_keep(store, run):
    cases = {
        # name: (importance, days since creation, access count, days since last access)
        "fresh": (0.9, 10, 0, None),  # 0.814: kept
        "fading": (0.8, 150, 0, None),  # 0.1785: importance lowered
        "stale": (0.5, 250, 2, 250),  # 0.0861: forgotten
        "used": (0.9, 400, 10, 30),  # 2.27: kept, recall counts
        "just_below": (0.6, 70, 0, None),  # 0.2980: lowered
        "just_above": (0.6, 69, 0, None),  # 0.3009: kept
    }
    ids = {}
    for name, (importance, days, count, accessed) in cases.items():
        ids[name] = put(
            store,
            f"memory {name}",
            importance=importance,
            days=days,
            access_count=count,
            accessed_days=accessed,
        ).id
    bob = put(store, "bob's stale memory", importance=0.2, days=400, user="bob")

    expected = {
        name: seed_formula(accessed if accessed else days, count, importance)
        for name, (importance, days, count, accessed) in cases.items()
    }
    forgotten = {n for n, r in expected.items() if r < 0.1}
    lowered = {n for n, r in expected.items() if 0.1 <= r < 0.3}
    assert forgotten == {"stale"} and lowered == {
        "fading",
        "just_below",
    }  # the cases cover each band

    report = run()
    assert set(report.forgotten) == {ids[n] for n in forgotten}
    assert {x.memory_id for x in report.lowered} == {ids[n] for n in lowered}
    for x in report.lowered:
        name = next(n for n, i in ids.items() if i == x.memory_id)
        assert x.relevance == pytest.approx(expected[name])
        assert x.importance_after == pytest.approx(cases[name][0] * 0.5)
    after = everything(store)
    assert after[ids["stale"]].forgotten and after[ids["stale"]].importance == 0.5
    assert after[ids["fading"]].importance == pytest.approx(0.4)
    assert after[ids["fresh"]] == everything(store)[ids["fresh"]]
    assert {m.forgotten for n, m in ((n, after[i]) for n, i in ids.items()) if n != "stale"} == {
        False
    }
    # maintenance writes keep updated_at: recall's recency and the next run's idle days stand
    assert after[ids["fading"]].updated_at == (NOW - timedelta(days=150)).isoformat()
    assert not everything(store, "bob")[bob.id].forgotten  # another user is untouched

    again = run()  # the same day: nothing left to do (the lowering is not applied twice)
    assert again.changed == 0 and everything(store) == after


def test_a_lowered_memory_is_forgotten_when_the_formula_says_so(store, run):
    memory = put(store, "a fading fact", importance=0.8, days=150)
    run()
    # the formula uses the importance from before the lowering: 0.8 * exp(-2.4) = 0.073 at 240
    # days, while 0.8 * exp(-2.0) = 0.108 at 200 days
    assert run(NOW + timedelta(days=50)).changed == 0
    report = run(NOW + timedelta(days=90))
    assert report.forgotten == [memory.id]


def test_dry_run_reports_the_same_and_writes_nothing(store, run):
    put(store, "fading", importance=0.8, days=150)
    put(store, "stale", importance=0.3, days=300)
    before = everything(store)
    dry = run(dry_run=True)
    assert dry.dry_run and dry.changed == 2 and everything(store) == before
    real = run()
    assert (real.forgotten, [x.memory_id for x in real.lowered]) == (
        dry.forgotten,
        [x.memory_id for x in dry.lowered],
    )


# -- restore after each kind of maintenance -------------------------------------------------------


def test_restore_brings_back_a_lowered_then_forgotten_memory_with_its_importance(store, run):
    memory = put(store, "The user's old laptop is a ThinkPad", importance=0.8, days=150)
    run()
    assert everything(store)[memory.id].importance == pytest.approx(0.4)
    report = run(NOW + timedelta(days=150))
    assert report.forgotten == [memory.id]

    result = LongTermMemory(store).restore(USER, memory.id)
    assert result is not None and result.changed
    back = everything(store)[memory.id]
    assert not back.forgotten and back.importance == 0.8
    assert LongTermMemory(store).list(USER)[0].id == memory.id
    # restoring confirms it: the next run does not forget it again
    assert run(NOW + timedelta(days=150)).changed == 0
    assert not LongTermMemory(store).restore(USER, memory.id).changed  # nothing left to restore


def test_cap_forgets_lowest_importance_oldest_first_and_restore_undoes_it(store, run):
    keep = [put(store, f"important {i}", importance=0.9, days=5) for i in range(2)]
    low_old = put(store, "low and old", importance=0.6, days=20)
    low_new = put(store, "low and new", importance=0.6, days=2)
    lowest = put(store, "lowest", importance=0.55, days=1)

    report = run(settings=MaintenanceSettings(max_memories=3))
    assert report.capped == [lowest.id, low_old.id]
    assert {m.id for m in LongTermMemory(store).list(USER)} == {keep[0].id, keep[1].id, low_new.id}

    asyncio.run(LongTermMemory(store).arestore(USER, low_old.id))
    back = everything(store)[low_old.id]
    assert not back.forgotten and back.importance == 0.6


def test_ttl_expires_a_category_and_restore_keeps_it(store, run):
    old_goal = put(
        store,
        "The user plans to learn Rust",
        category="goal",
        importance=0.9,
        days=200,
        access_count=20,
        accessed_days=1,
    )
    young_goal = put(
        store, "The user plans to run a marathon", category="goal", importance=0.9, days=100
    )
    old_fact = put(
        store,
        "The user lives in Lisbon",
        importance=0.9,
        days=200,
        access_count=20,
        accessed_days=1,
    )
    settings = MaintenanceSettings(ttl_days={"goal": 180})

    report = run(settings=settings)
    assert report.expired == [old_goal.id] and report.forgotten == []
    assert relevance(everything(store)[old_goal.id], NOW) > 0.3  # expired despite being relevant
    assert {m.id for m in LongTermMemory(store).list(USER)} == {young_goal.id, old_fact.id}

    LongTermMemory(store).restore(USER, old_goal.id)
    assert not everything(store)[old_goal.id].forgotten
    assert run(settings=settings).expired == []  # restoring confirms it: the TTL restarts


def test_settings_are_validated():
    with pytest.raises(ValueError, match="unknown category 'goals'"):
        MaintenanceSettings(ttl_days={"goals": 30})
    with pytest.raises(ValueError, match="forget_below <= lower_below"):
        MaintenanceSettings(forget_below=0.5, lower_below=0.3)


# -- compression ----------------------------------------------------------------------------------


def compressible(store: BaseStore) -> dict[str, Memory]:
    """Four old, unused facts, plus what must not be compressed."""
    facts = {  # older first: the compressor sees them in this order
        f"f{i}": put(store, text, importance=0.9, days=103 - i)
        for i, text in enumerate(
            [
                "The user's team deploys on Fridays",
                "The user's team deploys with Helm",
                "The user's team runs Kubernetes 1.29",
                "The user has a cat named Miso",
            ]
        )
    }
    return {
        **facts,
        "keyed": put(
            store, "The user works at Acme", importance=0.9, days=100, key="fact.employer"
        ),
        "pref0": put(store, "The user likes tea", category="preference", importance=0.9, days=100),
        "pref1": put(store, "The user likes jazz", category="preference", importance=0.9, days=100),
        "recent": put(store, "The user's team uses Argo CD", importance=0.9, days=10),
        "used": put(
            store,
            "The user's team uses Grafana",
            importance=0.9,
            days=100,
            access_count=6,
            accessed_days=95,
        ),
    }


def test_compression_replaces_old_rarely_used_memories_and_restore_undoes_it(store, run):
    mem = compressible(store)
    answer = {
        "memories": [
            {
                "content": "The user's team deploys on Fridays with Helm to Kubernetes 1.29",
                "importance": 0.85,
                "replaces": [1, 2, 3],
            }
        ]
    }
    model = StructuredFakeChatModel(structured_responses=[answer])

    report = run(compressor=make_compressor(model))
    assert report.compression == "llm"
    [(_, messages)] = model.structured_calls
    prompt = messages[-1].text
    shown = [k for k, m in mem.items() if m.content in prompt]
    assert sorted(shown) == ["f0", "f1", "f2", "f3"]  # old, unused, unkeyed, 3+ of a category
    sources = [mem[k].id for k in ("f0", "f1", "f2")]  # created in this order: numbered 1-3
    assert (
        prompt.index(mem["f0"].content)
        < prompt.index(mem["f1"].content)
        < prompt.index(mem["f2"].content)
    )
    [compressed] = report.compressed
    assert (compressed.category, sorted(compressed.sources)) == ("fact", sorted(sources))
    [new_id] = compressed.created

    after = everything(store)
    new = after[new_id]
    assert new.current and sorted(new.supersedes) == sorted(sources) and new.importance == 0.85
    for source in sources:
        assert after[source].superseded_by == new_id and not after[source].current
        assert after[source].updated_at == after[source].valid_until == NOW.isoformat()
    current = {m.content for m in LongTermMemory(store).list(USER)}
    assert new.content in current and mem["f3"].content in current
    assert not current & {mem[k].content for k in ("f0", "f1", "f2")}

    # restoring one original brings it back next to the compressed memory
    LongTermMemory(store).restore(USER, sources[0])
    after = everything(store)
    assert after[sources[0]].current and after[new_id].current and not after[new_id].forgotten
    # restoring the compressed memory undoes the rest of the compression
    result = LongTermMemory(store).restore(USER, new_id)
    assert sorted(result.also_restored) == sorted(sources[1:])
    after = everything(store)
    assert after[new_id].forgotten and all(after[s].current for s in sources)
    assert {m.id for m in LongTermMemory(store).list(USER)} == {m.id for m in mem.values()}


def test_restoring_every_original_retires_the_compressed_memory(store, run):
    mem = compressible(store)
    model = StructuredFakeChatModel(
        structured_responses=[
            {
                "memories": [
                    {
                        "content": "The user's team deploys on Fridays with Helm",
                        "importance": 0.9,
                        "replaces": [1, 2],
                    }
                ]
            }
        ]
    )
    [compressed] = run(compressor=make_compressor(model)).compressed
    for source in compressed.sources:
        LongTermMemory(store).restore(USER, source)
    after = everything(store)
    assert after[compressed.created[0]].forgotten
    assert {mem["f0"].id, mem["f1"].id} <= {m.id for m in LongTermMemory(store).list(USER)}


def test_compression_without_a_model_is_skipped_and_reported(store, run):
    compressible(store)
    before = everything(store)
    report = run()
    assert report.compression.startswith("skipped: no memory model configured (4 memories")
    assert report.compressed == [] and everything(store) == before


def test_a_failing_model_leaves_the_memories_as_they_were(store, run):
    compressible(store)
    before = everything(store)
    model = StructuredFakeChatModel(structured_responses=[ConnectionError("model server down")])
    report = run(compressor=make_compressor(model))
    assert report.failures == ["fact (4 memories): ConnectionError: model server down"]
    assert everything(store) == before


def test_dry_run_lists_compression_groups_without_calling_the_model(store, run):
    mem = compressible(store)
    model = StructuredFakeChatModel(structured_responses=[])
    report = run(compressor=make_compressor(model), dry_run=True)
    assert model.structured_calls == []
    assert report.compressed == [
        Compressed("fact", [mem[k].id for k in ("f0", "f1", "f2", "f3")], [])
    ]


# -- writes while a run decides -------------------------------------------------------------------


def test_memories_written_while_the_run_waits_for_the_model_keep_those_writes(store):
    mem = compressible(store)
    lisbon = put(store, "The user lives in Lisbon", importance=0.8, days=150, key="fact.city")
    lesson = put(store, "Pin the base image tag", category="lesson", importance=0.8, days=150)
    run = run_steps(
        store, start_steps(USER, settings=MaintenanceSettings(), now=NOW, dry_run=False)
    )
    [(category, group)] = run.groups
    sources = [mem[k].id for k in ("f0", "f1", "f2")]
    run.compress(category, group, [CompressedDraft(content="The team ships", sources=sources)])
    # while the model answered: a new value of the city, and a recall of one original
    ltm = LongTermMemory(store, clock=lambda: NOW)
    [porto] = ltm.upsert(
        USER, [MemoryCandidate(content="The user lives in Porto", category="fact", key="fact.city")]
    )
    ltm.touch(USER, [mem["f1"].id])
    before = everything(store)

    report = run_steps(store, finish_steps(run))
    after = everything(store)
    # the superseded city stays superseded, not written back as current with a lower importance
    assert after[lisbon.id] == before[lisbon.id] and not after[lisbon.id].current
    assert after[lisbon.id].superseded_by == porto.memory.id
    # a compression whose originals changed is dropped as a whole: no new memory, no history
    assert all(after[i] == before[i] and after[i].current for i in sources)
    assert after[mem["f1"].id].access_count == 1
    assert set(after) == set(before)
    assert report.compressed == [] and sorted(report.skipped) == sorted([lisbon.id, *sources])
    # what nobody touched meanwhile is written as decided
    assert [x.memory_id for x in report.lowered] == [lesson.id]
    assert after[lesson.id].importance == pytest.approx(0.4)
    assert report.changed == 1


def test_the_episode_cap_deletes_the_oldest_archived_messages_for_good(store, run):
    """Every session is archived: above `max_episodes` the oldest episodes go, and (on Chroma)
    their text is purged from the store's files; a dry run only reports them."""
    from langgraph.store.base import PutOp

    namespace = LongTermMemory.episode_namespace(USER)
    for n in range(5):
        value = {"content": f"user: session {n} note", "created_at": f"2026-05-0{n + 1}T00:00:00+00:00"}
        store.batch([PutOp(namespace, f"e{n}", value, index=["content"])])
    other = LongTermMemory.episode_namespace("bob")
    store.batch([PutOp(other, "b0", {"content": "user: bob's", "created_at": "2026-01-01"})])

    dry = run(settings=MaintenanceSettings(max_episodes=3), dry_run=True)
    assert dry.episodes_deleted == ["e0", "e1"]
    assert len(store.search(namespace, limit=10)) == 5

    report = run(settings=MaintenanceSettings(max_episodes=3))
    assert report.episodes_deleted == ["e0", "e1"]
    assert sorted(i.key for i in store.search(namespace, limit=10)) == ["e2", "e3", "e4"]
    assert [i.key for i in store.search(other)] == ["b0"]  # another user's are not counted
    assert run(settings=MaintenanceSettings(max_episodes=None)).episodes_deleted == []
