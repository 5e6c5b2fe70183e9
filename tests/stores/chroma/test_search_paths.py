"""Every way a vector search asks Chroma (its vectors compared here, an unfiltered query for a
namespace holding most of the collection, a query naming ids, a metadata filter) answers what
comparing the query with every vector of the namespace answers, and nothing of another."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from langgraph.store.base import PutOp

from engram.evals.bench.retrieval import LookupEmbeddings
from engram.stores.chroma import search
from engram.stores.chroma.store import ChromaStore

DIMS = 16
BIG, SMALL = ("memories", "big"), ("memories", "small")
QUERIES = ["tea in lisbon", "rust on trains", "bees in the garden", "coffee and python"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`big` holds 1,200 items (past `EXACT_BELOW`, most of the collection), `small` 100."""
    folder = tmp_path_factory.mktemp("paths") / "chroma"
    with ChromaStore(path=folder, index=_index()) as store:
        store.batch([PutOp(BIG, f"b{n}", {"content": f"big note {n}"}) for n in range(1200)]
                    + [PutOp(SMALL, f"s{n}", {"content": f"small note {n}"}) for n in range(100)])
    return folder


def _index() -> dict:
    return {"dims": DIMS, "embed": LookupEmbeddings(DIMS), "fields": ["content"]}


def _brute_force(query: str, k: int) -> list[str]:
    embed = LookupEmbeddings(DIMS)
    q = np.asarray(embed.embed_query(query))
    scored = [(float(np.dot(embed.embed_query(f"big note {n}"), q)), f"b{n}") for n in range(1200)]
    return [key for _, key in sorted(scored, reverse=True)[:k]]


@pytest.mark.parametrize("path", ["broad", "ids", "filter"])
def test_each_way_of_asking_chroma_finds_the_true_nearest(
    folder: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broad_answers: list[object] = []
    real_broad = search._broad_nearest

    def spy(*args, **kwargs):
        broad_answers.append(answer := real_broad(*args, **kwargs))
        return answer

    monkeypatch.setattr(search, "_broad_nearest", spy)
    if path != "broad":
        monkeypatch.setattr(search, "BROAD_SHARE", 2.0)  # never broad
    if path == "filter":
        monkeypatch.setattr(search, "MAX_ID_FILTER", 0)  # never by ids
    with ChromaStore(path=folder, index=_index()) as store:
        for query in QUERIES:
            found = store.search(BIG, query=query, limit=10)
            assert [item.key for item in found] == _brute_force(query, 10)
    assert (path == "broad") == any(answer is not None for answer in broad_answers)
