"""Bounded memories: similar texts that state different facts stay apart, and a merge stays short."""

from __future__ import annotations

from uuid import uuid4

import chromadb
import pytest
from fakes import NGramEmbeddings

from engram.stores.chroma.store import ChromaStore, default_index
from engram.stores.memory.long_term import LongTermMemory, MemoryCandidate
from engram.stores.memory.types import MAX_CONTENT_CHARS
from engram.stores.memory.write.specifics import conflict, specifics


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("I use Postgres 16 for project number 3", "I use Postgres 16 for project number 4"),
        ("I use Python 3.11 at work", "I use Python 3.12 at work"),
        ("My manager is called Alice", "My manager is called Beatriz"),
        ("I live in Lisbon", "I live in Porto"),
        ("Deploys run from branch release-7", "Deploys run from branch release-8"),
        ("The config lives in src/app.yaml", "The config lives in src/web.yaml"),
        ("My e-mail is ann@example.com", "My e-mail is ann@example.org"),
        ("The standup is at 09:30", "The standup is at 10:15"),
        ("我用 Postgres 16 做项目 3", "我用 Postgres 16 做项目 4"),
    ],
)
def test_texts_that_name_different_things_conflict(a, b):
    assert conflict(a, b) and conflict(b, a)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("I use Vim", "I use Vim with the LazyVim config"),  # adds detail
        ("I prefer dark mode", "I really prefer dark mode everywhere"),  # nothing specific
        ("I live in Lisbon", "I live in Lisbon, Portugal"),
        ("We use PostgreSQL 16", "We use PostgreSQL 16 for everything"),
    ],
)
def test_texts_that_repeat_or_add_detail_do_not_conflict(a, b):
    assert not conflict(a, b)


def test_specifics_are_numbers_identifiers_and_names():
    assert specifics("I'm learning Rust and gpt-4o on py311 at 10:30") == {
        "rust",
        "gpt-4o",
        "py311",
        "10:30",
    }
    assert specifics("I prefer dark-mode and well-known tools") == set()
    assert specifics("Bob's config is in max_tokens.yaml, see @ann and #42") == {
        "bob",
        "max_tokens.yaml",
        "@ann",
        "#42",
    }


@pytest.fixture(scope="module")
def real_index():
    return default_index()  # all-MiniLM-L6-v2: the similarities these texts really have


def _store(index) -> ChromaStore:
    return ChromaStore(chromadb.EphemeralClient(), collection=f"m-{uuid4().hex[:12]}", index=index)


def test_twelve_projects_stay_twelve_memories(real_index):
    store = _store(real_index)
    ltm = LongTermMemory(store)
    texts = [f"I use Postgres 16 for project number {n}" for n in range(1, 13)]
    results = [ltm.upsert("ann", [MemoryCandidate(content=t, category="project")])[0] for t in texts]
    assert [r.action for r in results] == ["created"] * 12
    assert sorted(m.content for m in ltm.list("ann", limit=50)) == sorted(texts)
    store.close()


def test_a_repeated_fact_with_more_detail_still_merges(real_index):
    store = _store(real_index)
    ltm = LongTermMemory(store)
    first, again = "I prefer dark mode in every editor", "I prefer dark mode in every editor I use"
    [a] = ltm.upsert("ann", [MemoryCandidate(content=first, category="preference")])
    [b] = ltm.upsert("ann", [MemoryCandidate(content=again, category="preference")])
    assert b.action == "merged" and b.memory.id == a.memory.id
    assert b.memory.content == again
    store.close()


def test_a_keyed_value_that_names_another_version_supersedes(real_index):
    store = _store(real_index)
    ltm = LongTermMemory(store)
    first = MemoryCandidate(content="We run Postgres 15", category="project", key="project.db")
    second = MemoryCandidate(content="We run Postgres 16", category="project", key="project.db")
    [a] = ltm.upsert("ann", [first])
    [b] = ltm.upsert("ann", [second])
    assert b.action == "superseded" and [m.id for m in b.superseded] == [a.memory.id]
    assert [m.content for m in ltm.list("ann")] == ["We run Postgres 16"]
    store.close()


def test_a_merge_never_grows_a_memory_past_the_cap():
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    store = _store(index)
    ltm = LongTermMemory(store)
    notes = "I keep notes about gardening tomatoes and basil " * 39  # about 1,900 chars
    morning, evening = notes + "in the morning", notes + "in the evening"
    [a] = ltm.upsert("ann", [MemoryCandidate(content=morning, category="fact")])
    [b] = ltm.upsert("ann", [MemoryCandidate(content=evening, category="fact")])
    assert b.action == "created"  # merged, the two would make about 3,800 characters
    assert ltm.get("ann", a.memory.id).content == morning  # and nothing of it is lost
    assert all(len(m.content) <= MAX_CONTENT_CHARS for m in ltm.list("ann", limit=50))
    [c] = ltm.upsert("ann", [MemoryCandidate(content=morning + " too", category="fact")])
    assert c.action == "merged" and c.memory.id == a.memory.id  # containing it: no growth past it
    store.close()
