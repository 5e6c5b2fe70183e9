"""A store holding more items than SQLite's variable limit (32,766: Chroma looks records up with
one variable each) opens again, lists its namespaces, recalls, lists, deletes a user and purges.
Written through the store's own batch, with a cheap embedding (a random unit vector per text)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from conftest import files_holding
from langgraph.store.base import PutOp

from engram.evals.bench.retrieval import LookupEmbeddings
from engram.stores.chroma.store import ChromaStore
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.types import Memory, memory_put
from engram.stores.memory.users import delete_user, stats_steps, users_steps
from engram.stores.namespaces import episode_namespace, memory_namespace
from engram.stores.steps import run_steps

ITEMS = 33_000
"""Above SQLite's 32,766 variables: every call that once read them all at once failed."""
DIMS = 16


def _index() -> dict:
    return {"dims": DIMS, "embed": LookupEmbeddings(DIMS), "fields": ["content"]}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`big` owns all but a hundred items, half memories and half archived messages; `small`
    the rest."""
    folder = tmp_path_factory.mktemp("large") / "chroma"
    rng = random.Random(0)
    words = ["tea", "coffee", "lisbon", "porto", "rust", "python", "garden", "bees", "train", "bike"]
    stamp = "2026-06-01T12:00:00+00:00"
    with ChromaStore(path=folder, index=_index()) as store:
        ops: list[PutOp] = []
        for n in range(ITEMS):
            user = "small" if n < 100 else "big"
            text = f"{' '.join(rng.choices(words, k=6))} note {n}"
            if n % 2:
                memory = Memory.new(text, "fact", 0.7, now=stamp, id=f"m{n}")
                ops.append(memory_put(memory_namespace(user), memory))
            else:
                ops.append(PutOp(episode_namespace(user), f"e{n}", {"content": text}))
            if len(ops) == 3000:
                store.batch(ops)
                ops = []
        store.batch(ops)
        store.put(episode_namespace("big"), "marker", {"content": "quokkaberry was said once"})
    return folder


def test_a_store_past_the_variable_limit_opens_lists_recalls_and_deletes(folder: Path) -> None:
    with ChromaStore(path=folder, index=_index()) as store:
        assert store.list_namespaces() == [
            ("episodes", "big"), ("episodes", "small"), ("memories", "big"), ("memories", "small")
        ]
        assert store.list_namespaces(prefix=("*", "big")) == [("episodes", "big"), ("memories", "big")]
        assert run_steps(store, users_steps()) == ["big", "small"]

        ltm = LongTermMemory(store)
        found = ltm.search("big", "tea lisbon bees", k=5, touch=False)
        assert len(found) == 5
        newest = store.search(memory_namespace("big"), limit=3)
        assert len(newest) == 3 and newest[0].updated_at >= newest[-1].updated_at
        stats = run_steps(store, stats_steps("big"))
        assert (stats.memories, stats.namespaces["episodes"]) == (16_450, 16_451)

        report = delete_user(store, "big")
        assert report.deleted["memories"] == stats.memories
        assert store.list_namespaces() == [("episodes", "small"), ("memories", "small")]
        assert files_holding(folder, "quokkaberry") == []
        assert len(LongTermMemory(store).list("small", limit=1000)) == 50
