"""Fusing lexical and dense candidates: normalisations, methods, and hybrid recall end to end."""

from __future__ import annotations

import math

import chromadb
import pytest
from fakes import TopicEmbeddings

from engram.stores.chroma import metadata as md
from engram.stores.chroma.store import ChromaStore
from engram.stores.embeddings import LocalEmbeddings
from engram.stores.lexical.fusion import (
    fuse,
    min_max,
    reciprocal_rank_fusion,
    reciprocal_ranks,
    relative_score_fusion,
    weighted_sum,
    z_scores,
    zscore_fusion,
)
from engram.stores.lexical.hybrid import HybridSearchOp
from engram.stores.memory.long_term import LongTermMemory, Memory, MemoryCandidate
from engram.stores.memory.types import memory_put

LEXICAL = [("a", 8.0), ("b", 4.0), ("c", 2.0)]
DENSE = [("c", 0.70), ("d", 0.60), ("a", 0.20)]


def test_min_max_rescales_to_unit_interval():
    assert min_max(LEXICAL) == {"a": 1.0, "b": pytest.approx(1 / 3), "c": 0.0}
    assert min_max([("x", 0.3), ("y", 0.3)]) == {"x": 1.0, "y": 1.0}
    assert min_max([]) == {}


def test_z_scores_standardise():
    z = z_scores([("x", 1.0), ("y", 2.0), ("z", 3.0)])
    assert z == pytest.approx({"x": -math.sqrt(1.5), "y": 0.0, "z": math.sqrt(1.5)})
    assert z_scores([("x", 5.0)]) == {"x": 0.0}


def test_reciprocal_ranks_ignore_scores():
    assert reciprocal_ranks([("x", 0.1), ("y", 9.0)], k=60) == {"x": 1 / 61, "y": 1 / 62}


def test_relative_score_fusion_on_a_hand_computed_case():
    # lexical min-max: a 1, b 1/3, c 0; dense min-max: c 1, d 0.8, a 0
    fused = dict(relative_score_fusion(LEXICAL, DENSE, lexical_weight=0.5))
    assert fused == pytest.approx({"a": 0.5, "b": 1 / 6, "c": 0.5, "d": 0.4})
    assert [doc for doc, _ in relative_score_fusion(LEXICAL, DENSE, lexical_weight=0.8)] == [
        "a", "b", "c", "d",
    ]
    assert [doc for doc, _ in relative_score_fusion(LEXICAL, DENSE, lexical_weight=0.0)][:2] == [
        "c", "d",
    ]


def test_ties_keep_dense_order_first():
    assert [doc for doc, _ in relative_score_fusion(LEXICAL, DENSE)][:2] == ["c", "a"]


def test_zscore_fusion_gives_a_missing_candidate_its_channels_lowest_z():
    fused = dict(zscore_fusion([("a", 3.0), ("b", 1.0)], [("b", 0.9), ("c", 0.5)]))
    # lexical z: a 1, b -1 (missing -> -1); dense z: b 1, c -1 (missing -> -1)
    assert fused == pytest.approx({"a": 0.0, "b": 0.0, "c": -1.0})


def test_equal_weight_rrf_is_the_classic_sum():
    fused = dict(reciprocal_rank_fusion(LEXICAL, DENSE))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)


def test_fuse_dispatches_and_rejects_unknown_methods():
    assert fuse(LEXICAL, DENSE) == relative_score_fusion(LEXICAL, DENSE)
    assert fuse(LEXICAL, DENSE, method="rrf") == reciprocal_rank_fusion(LEXICAL, DENSE)
    with pytest.raises(ValueError, match="relative, zscore, rrf"):
        fuse(LEXICAL, DENSE, method="borda")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lexical_weight"):
        weighted_sum({}, {}, lexical_weight=1.5)


def test_one_empty_channel_leaves_the_others_order():
    assert [doc for doc, _ in fuse([], DENSE)] == ["c", "d", "a"]
    assert [doc for doc, _ in fuse(LEXICAL, [])] == ["a", "b", "c"]


def test_a_lexical_only_and_a_meaning_only_candidate_both_reach_the_top_2():
    # "code" is found only by BM25 (an identifier), "paraphrase" only by the embedder; x1..x3 are
    # mediocre in both channels. Reciprocal ranks reward that mediocre consensus, scores do not.
    lexical = [("code", 9.1), ("x1", 2.0), ("x2", 1.5), ("x3", 1.4)]
    dense = [("paraphrase", 0.74), ("x1", 0.41), ("x3", 0.40), ("x2", 0.33)]
    assert sorted(doc for doc, _ in relative_score_fusion(lexical, dense)[:2]) == ["code", "paraphrase"]
    assert sorted(doc for doc, _ in zscore_fusion(lexical, dense)[:2]) == ["code", "paraphrase"]
    assert reciprocal_rank_fusion(lexical, dense)[0][0] == "x1"


MEMORIES = {
    "ticket": "Ticket PAY-4471 is blocked on legal review",
    "pet": "Her feline companion is named Mochi",
    "m1": "Prefers dark mode in every editor",
    "m2": "Works as a backend engineer in Berlin",
    "m3": "The deploy pipeline runs on GitHub Actions",
    "m4": "Deployments to staging happen every Friday",
    "m5": "Uses Postgres rather than MySQL for new projects",
    "m6": "Runs every morning before work",
    "m7": "Is learning Japanese for the JLPT N3 exam",
    "m8": "Drinks black coffee, no sugar",
    "m9": "The cat food brand changed last month",
    "m10": "Reads science fiction, currently The Three-Body Problem",
}


@pytest.fixture(scope="module")
def recall() -> LongTermMemory:
    """The memories above in a real ChromaStore (with its lexical index) and real embeddings."""
    embedder = LocalEmbeddings()
    store = ChromaStore(
        chromadb.EphemeralClient(),
        collection="fusion-end-to-end",
        index={"dims": embedder.dims, "embed": embedder, "fields": ["content"]},
    )
    ltm = LongTermMemory(store)
    ltm.upsert("u", [MemoryCandidate(content=t, category="fact", importance=0.8)
                     for t in MEMORIES.values()])
    yield ltm
    store.client.delete_collection(store.collection_name)
    store.close()


@pytest.mark.parametrize(
    ("query", "expected", "k"),
    [("when will PAY-4471 ship to staging?", "ticket", 1), ("what do I call my cat?", "pet", 3)],
)
async def test_hybrid_recall_finds_an_identifier_and_a_paraphrase(recall, query, expected, k):
    store = recall.store
    namespace = recall.namespace("u")
    text = MEMORIES[expected]
    lexical = [store.get(namespace, key) for key in _lexical_keys(recall, query)]
    dense = store.search(namespace, query=query, limit=3)
    if expected == "ticket":
        assert dense[0].value["content"] != text  # the embedder alone prefers a staging memory
    else:
        assert text not in [i.value["content"] for i in lexical]  # no shared term: dense only
    found = await recall.asearch("u", query, k=k, touch=False)
    assert text in [s.memory.content for s in found]
    assert [s.memory.id for s in found] == [
        s.memory.id for s in recall.search("u", query, k=k, touch=False)
    ]


def _lexical_keys(recall: LongTermMemory, query: str) -> list[str]:
    store = recall.store
    namespace = recall.namespace("u")
    by_item = {
        md.item_id(namespace, item.key): item.key for item in store.search(namespace, limit=100)
    }
    return [by_item[i] for i, _ in store.lexical.search(namespace, query, 10)]


TOPICS = {
    "cat": ["cat", "cats", "kitty", "feline"],
    "food": ["food", "brand", "lunch", "coffee"],
    "work": ["ticket", "tickets", "sprint", "payments", "team", "deploy", "review"],
}
SMALL_WORLD = {
    "ticket": "PAY-4471 is blocked by legal",  # only the identifier ties it to the query
    "pet": "Her feline companion is named Mochi",  # no word in common with the query
    "catfood": "The cat food brand changed last month",
    "sprint": "The payments team finished their sprint",
    "deploy": "The team deploy pipeline runs on Fridays",
    "coffee": "Drinks black coffee at lunch",
}


def test_one_query_ranks_a_lexical_only_and_a_meaning_only_match_both_in_the_top_k():
    store = ChromaStore(
        chromadb.EphemeralClient(),
        collection="fusion-small-world",
        index={"dims": 4, "embed": TopicEmbeddings(TOPICS), "fields": ["content"]},
    )
    ltm = LongTermMemory(store)
    now = "2026-01-01T00:00:00+00:00"
    memories = {name: Memory.new(t, "fact", 0.8, now=now) for name, t in SMALL_WORLD.items()}
    store.batch([memory_put(ltm.namespace("u"), m) for m in memories.values()])  # as stored
    query, k = "is PAY-4471 done, and what do I call my kitty?", 2
    by_id = {m.id: name for name, m in memories.items()}
    dense = [by_id[i.key] for i in store.search(ltm.namespace("u"), query=query, limit=k)]
    (hits,) = store.batch([HybridSearchOp(ltm.namespace("u"), query, limit=len(SMALL_WORLD))])
    lexical = [by_id[h.item.key] for h in hits if h.lexical is not None]
    assert "ticket" not in dense and lexical == ["ticket"]  # found by words only
    assert "pet" in dense and "pet" not in lexical  # found by meaning only
    top = [by_id[s.memory.id] for s in ltm.search("u", query, k=k, touch=False, ranking="recall")]
    assert sorted(top) == ["pet", "ticket"]
    store.client.delete_collection(store.collection_name)
    store.close()
