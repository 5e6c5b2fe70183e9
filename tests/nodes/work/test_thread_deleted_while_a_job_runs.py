"""A thread deleted while one of its background jobs runs: the job keeps the user's memories
(only a deleted user's go with it), removes what it archived of the thread, never writes its
result, and its lease renewal does not bring the job's entry back."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from langgraph.store.memory import InMemoryStore

from engram.nodes.events import announce_writes
from engram.nodes.work import background
from engram.stores.memory.jobs import job_namespace, pending_op
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.types import MemoryCandidate
from engram.stores.memory.users import adelete_thread, adelete_user

PEANUTS = MemoryCandidate(content="Alice is allergic to peanuts", category="fact")


def _runtime(store: InMemoryStore) -> Any:
    return SimpleNamespace(store=store, execution_info=SimpleNamespace(thread_id="t-new"))


@pytest.mark.parametrize("deleted", ["thread", "user"])
async def test_a_deletion_during_a_job_keeps_what_it_should(deleted: str) -> None:
    store = InMemoryStore()
    ltm = LongTermMemory(store)
    [older] = await ltm.aupsert("alice", [PEANUTS], thread_id="t-old", message_ids=["m-old"])
    store.batch([pending_op("alice", "job-1", kind="consolidate", thread_id="t-new")])
    episodes = LongTermMemory.episode_namespace("alice")

    async def consolidation(job: Any, state: Any, runtime: Any) -> dict[str, Any]:
        results = await ltm.aupsert("alice", [PEANUTS], thread_id="t-new", message_ids=["m-new"])
        await store.aput(episodes, "t-new:m-new", {"content": "peanuts again", "thread_id": "t-new"})
        events: list[dict[str, Any]] = []
        announce_writes(events.append, "alice", results)
        if deleted == "thread":
            await adelete_thread(store, "alice", "t-new")
        else:
            await adelete_user(store, "alice")
        return {"events": events, "episode_keys": ["t-new:m-new"]}

    job = {"id": "job-1", "user_id": "alice", "kind": "consolidate"}
    await background._execute(job, consolidation, {}, _runtime(store))

    assert store.get(episodes, "t-new:m-new") is None
    assert store.get(job_namespace("alice"), "job-1") is None  # no result, no mark left
    kept = ltm.get("alice", older.memory.id)
    assert (kept is not None) == (deleted == "thread")  # a memory merged into is the user's


async def test_a_lease_renewal_does_not_bring_a_deleted_thread_s_job_back(monkeypatch) -> None:
    monkeypatch.setattr(background, "LEASE_SECONDS", 0.3)  # renewed every 0.1 s
    store = InMemoryStore()
    store.batch([pending_op("alice", "job-1", kind="compact", thread_id="t-new")])

    async def compaction(job: Any, state: Any, runtime: Any) -> dict[str, Any]:
        await adelete_thread(store, "alice", "t-new")
        await asyncio.sleep(0.35)  # a memory-model call, over several renewals
        return {"summary": "what the deleted thread said", "events": []}

    job = {"id": "job-1", "user_id": "alice", "kind": "compact"}
    await background._execute(job, compaction, {}, _runtime(store))
    assert store.get(job_namespace("alice"), "job-1") is None
