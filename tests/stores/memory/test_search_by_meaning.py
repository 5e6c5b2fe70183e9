"""A memory search ranks by meaning, above a floor; a turn's recall still weighs importance.

Real embedded Chroma and all-MiniLM-L6-v2: the floor's scale is the embedder's.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engram.stores.chroma.store import ChromaStore, default_index
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.types import Memory, memory_put
from engram.stores.namespaces import memory_namespace

USER = "alice"
NOW = "2026-06-01T00:00:00+00:00"
OLD = "2026-01-01T00:00:00+00:00"
MEMORIES = [
    ("Building a Rust CLI called ferrous for renaming photos.", "project", 0.95, NOW),
    ("Card ends in 4421; uses it for work travel only.", "fact", 0.9, NOW),
    ("Drinks green tea every morning, never coffee.", "preference", 0.5, OLD),
    ("Uses a dark theme in every code editor.", "preference", 0.5, OLD),
    ("Is vegetarian since 2019.", "preference", 0.9, OLD),
]


@pytest.fixture(scope="module")
def memory(tmp_path_factory) -> Iterator[LongTermMemory]:
    store = ChromaStore(path=tmp_path_factory.mktemp("search"), index=default_index())
    store.batch(
        [
            memory_put(memory_namespace(USER), Memory.new(text, category, importance, now=when))
            for text, category, importance, when in MEMORIES
        ]
    )
    yield LongTermMemory(store)
    store.close()


@pytest.mark.parametrize(
    ("query", "wanted"),
    [
        ("what tea do I drink", "Drinks green tea"),
        ("editor theme", "dark theme"),
        ("am I vegetarian", "vegetarian"),
    ],
)
def test_the_memory_asked_for_comes_first_whatever_the_others_importance(memory, query, wanted):
    found = memory.search(USER, query, touch=False)
    assert wanted in found[0].memory.content


@pytest.mark.parametrize(
    "query", ["quantum chromodynamics lecture notes", "best sailing knots for beginners"]
)
def test_a_query_about_nothing_the_user_said_finds_nothing(memory, query):
    assert memory.search(USER, query, touch=False) == []


def test_a_turns_recall_still_brings_an_important_memory_the_task_does_not_name(memory):
    query = "recommend a restaurant for the team dinner"
    recalled = [s.memory.content for s in memory.search(USER, query, touch=False, ranking="recall")]
    searched = [s.memory.content for s in memory.search(USER, query, touch=False)]
    assert "Is vegetarian since 2019." in recalled
    assert len(searched) < len(recalled)  # a search box shows only what the words ask for
