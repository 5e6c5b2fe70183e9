"""One conformance suite for the LangGraph store contract, over backends and over sync/async.

Backends: langgraph's `InMemoryStore` (the reference, where it is right) and `ChromaStore` on an
ephemeral client, a persistent client and a real Chroma server started for the session. Tests
where `InMemoryStore` is not the reference (it resets `created_at`, keeps insertion order, raises
on non-numeric comparisons, has no TTL) run on the Chroma backends only.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import chromadb
import pytest
from fakes import NGramEmbeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from engram.stores.chroma.store import ChromaStore

CHROMA_BACKENDS = ["chroma-ephemeral", "chroma-persistent", "chroma-server"]
ALL_BACKENDS = ["memory", *CHROMA_BACKENDS]
INDEX = {"dims": 256, "fields": ["text"]}


class Api:
    """Calls a store's sync methods, or its async ones run to completion."""

    def __init__(self, store: BaseStore, mode: str) -> None:
        self.store = store
        self.mode = mode

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if self.mode == "sync":
            return getattr(self.store, name)
        method = getattr(self.store, "a" + name)
        return lambda *args, **kwargs: asyncio.run(method(*args, **kwargs))


def _factory(backend: str, request: pytest.FixtureRequest, tmp_path) -> Iterator[Callable[..., BaseStore]]:
    counter = itertools.count()
    made: list[BaseStore] = []

    def make(*, index: bool = False, dims: int = 256, ttl: dict | None = None) -> BaseStore:
        config = {**INDEX, "dims": dims, "embed": NGramEmbeddings()} if index else None
        name = f"{request.node.name[:20].strip('_-[')}-{next(counter)}".replace("[", "-")
        name = "c" + "".join(ch if ch.isalnum() or ch in "._-" else "-" for ch in name) + "x"
        if backend == "memory":
            store: BaseStore = InMemoryStore(index=config)
        elif backend == "chroma-ephemeral":
            store = ChromaStore(chromadb.EphemeralClient(), collection=name, index=config, ttl=ttl)
        elif backend == "chroma-persistent":
            store = ChromaStore(path=tmp_path / "chroma", collection=name, index=config, ttl=ttl)
        else:
            url = request.getfixturevalue("chroma_server")
            store = ChromaStore.from_url(url, collection=name, index=config, ttl=ttl)
        made.append(store)
        return store

    yield make
    for store in made:
        if isinstance(store, ChromaStore):
            store.close()


@pytest.fixture(params=ALL_BACKENDS)
def make_store(request, tmp_path):
    yield from _factory(request.param, request, tmp_path)


@pytest.fixture(params=CHROMA_BACKENDS)
def make_chroma(request, tmp_path):
    yield from _factory(request.param, request, tmp_path)


@pytest.fixture(params=["sync", "async"])
def mode(request) -> str:
    return request.param


# -- basic reads and writes --------------------------------------------------------------------


def test_put_get_delete_roundtrip_with_cjk_and_emoji(make_store, mode):
    api = Api(make_store(), mode)
    ns = ("用户", "alice🙂", "设置")
    value = {"主题": "深色 🌙", "nested": {"list": [1, 2.5, "三"], "flag": True}, "none": None}
    api.put(ns, "键🔑", value)
    item = api.get(ns, "键🔑")
    assert item.value == value
    assert item.namespace == ns and item.key == "键🔑"
    assert item.created_at.tzinfo is not None and item.updated_at.tzinfo is not None
    assert api.get(ns, "missing") is None
    api.delete(ns, "键🔑")
    assert api.get(ns, "键🔑") is None


def test_one_megabyte_value(make_store, mode):
    api = Api(make_store(), mode)
    big = {"blob": "x" * 1_000_000, "tail": "末尾"}
    api.put(("big",), "one", big)
    assert api.get(("big",), "one").value == big


def test_namespaces_match_segment_by_segment(make_store, mode):
    api = Api(make_store(), mode)
    api.put(("foo",), "a", {"n": 1})
    api.put(("foobar",), "b", {"n": 2})
    api.put(("foo", "bar"), "c", {"n": 3})
    assert sorted(i.key for i in api.search(("foo",))) == ["a", "c"]
    assert [i.key for i in api.search(("foobar",))] == ["b"]
    assert sorted(api.list_namespaces(prefix=("foo",))) == [("foo",), ("foo", "bar")]


@pytest.mark.parametrize(
    "namespace", [(), ("a.b",), ("",), ("langgraph", "x"), ("ok", 3)], ids=["empty", "dot", "blank", "root", "int"]
)
def test_put_rejects_invalid_namespaces(make_store, mode, namespace):
    api = Api(make_store(), mode)
    with pytest.raises((InvalidNamespaceError, ValueError)):
        api.put(namespace, "k", {"v": 1})


def test_raw_batch_allows_langgraph_root_but_validates_labels(make_chroma):
    store = make_chroma()
    store.batch([PutOp(("langgraph", "internal"), "k", {"v": 1})])
    assert store.batch([GetOp(("langgraph", "internal"), "k")])[0].value == {"v": 1}
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("foo.bar",), "k", {"v": 1})])
    with pytest.raises(InvalidNamespaceError):
        store.batch([SearchOp(("foo.bar",))])


def test_batch_results_in_input_order_and_last_put_wins(make_store):
    store = make_store()
    store.batch([PutOp(("ns",), "k", {"v": 1}), PutOp(("ns",), "k", {"v": 2}), PutOp(("ns",), "j", {"v": 3})])
    results = store.batch(
        [
            GetOp(("ns",), "j"),
            ListNamespacesOp(match_conditions=None, max_depth=None, limit=10, offset=0),
            GetOp(("ns",), "k"),
            GetOp(("ns",), "absent"),
            SearchOp(("ns",), filter={"v": 2}),
        ]
    )
    assert results[0].value == {"v": 3}
    assert results[1] == [("ns",)]
    assert results[2].value == {"v": 2}
    assert results[3] is None
    assert [i.key for i in results[4]] == ["k"]


async def test_abatch_does_not_block_the_event_loop(make_chroma):
    store = make_chroma(index=True)
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    await store.abatch([PutOp(("load",), str(i), {"text": f"item number {i}"}) for i in range(3000)])
    await store.asearch(("load",), query="item number 7")
    elapsed = time.perf_counter() - started
    task.cancel()
    assert elapsed > 0.3, "the batch must take long enough for a stall to show"
    # Blocked, the loop would stall once for about the whole batch; free, it stalls at most for
    # one Chroma write call at a time.
    assert max(gaps) < elapsed / 4, f"the loop stalled {max(gaps):.3f}s of {elapsed:.3f}s"


# -- search without a query --------------------------------------------------------------------


def test_plain_search_is_newest_first_and_update_moves_to_front(make_chroma, mode):
    api = Api(make_chroma(), mode)
    for key in ["a", "b", "c"]:
        api.put(("s",), key, {"k": key})
    api.put(("s",), "a", {"k": "a2"})
    assert [i.key for i in api.search(("s",))] == ["a", "c", "b"]


def test_created_at_survives_update(make_chroma, mode):
    api = Api(make_chroma(), mode)
    api.put(("s",), "a", {"v": 1})
    first = api.get(("s",), "a")
    api.put(("s",), "a", {"v": 2})
    second = api.get(("s",), "a")
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at


def test_offset_and_limit(make_store, mode):
    api = Api(make_store(), mode)
    for i in range(7):
        api.put(("p",), f"k{i}", {"i": i})
    everything = [i.key for i in api.search(("p",), limit=100)]
    assert len(everything) == 7
    assert [i.key for i in api.search(("p",), limit=3, offset=2)] == everything[2:5]
    assert api.search(("p",), limit=5, offset=7) == []


def test_pagination_over_ten_thousand_items(make_store):
    store = make_store()
    store.batch([PutOp(("many",), f"{i:05d}", {"i": i}) for i in range(10_000)])
    seen: list[str] = []
    for offset in range(0, 10_000, 1000):
        page = store.search(("many",), limit=1000, offset=offset)
        assert len(page) == 1000
        seen += [item.key for item in page]
    assert len(set(seen)) == 10_000
    assert store.search(("many",), limit=10, offset=10_000) == []


# -- filters -----------------------------------------------------------------------------------


@pytest.fixture
def filtered(make_store, mode):
    api = Api(make_store(), mode)
    rows = {
        "a": {"n": 1, "color": "red", "ok": True},
        "b": {"n": 5, "color": "blue", "ok": False},
        "c": {"n": 9.5, "color": "red", "ok": True},
        "d": {"color": "green", "n": 3, "meta": {"tier": "gold"}},
    }
    for key, value in rows.items():
        api.put(("f",), key, value)
    return api


@pytest.mark.parametrize(
    "flt, expected",
    [
        ({"color": "red"}, "ac"),
        ({"color": {"$eq": "blue"}}, "b"),
        ({"color": {"$ne": "red"}}, "bd"),
        ({"n": {"$gt": 3}}, "bc"),
        ({"n": {"$gte": 3}}, "bcd"),
        ({"n": {"$lt": 5}}, "ad"),
        ({"n": {"$lte": 5, "$gt": 1}}, "bd"),
        ({"color": "red", "n": {"$gt": 2}}, "c"),
        ({"ok": True}, "ac"),
        ({"meta": {"tier": "gold"}}, "d"),
        ({"n": 1.0}, "a"),
    ],
)
def test_filters(filtered, flt, expected):
    assert "".join(sorted(i.key for i in filtered.search(("f",), filter=flt))) == expected


def test_filters_never_raise_on_missing_or_non_numeric_values(make_chroma, mode):
    api = Api(make_chroma(), mode)
    api.put(("f",), "num", {"n": 4})
    api.put(("f",), "text", {"n": "four"})
    api.put(("f",), "none", {"n": None})
    api.put(("f",), "missing", {"other": 1})
    api.put(("f",), "bool", {"n": True})
    assert [i.key for i in api.search(("f",), filter={"n": {"$gt": 1}})] == ["num"]
    assert sorted(i.key for i in api.search(("f",), filter={"n": {"$ne": 4}})) == ["bool", "missing", "none", "text"]
    assert [i.key for i in api.search(("f",), filter={"n": {"$gte": "a"}})] == ["text"]
    assert api.search(("f",), filter={"absent": {"$lt": 3}}) == []


def test_unknown_filter_operator_is_a_clear_error(make_chroma):
    store = make_chroma()
    with pytest.raises(ValueError, match=r"\$regex"):
        store.search(("f",), filter={"n": {"$regex": "x"}})


def test_long_string_values_still_filter_exactly(make_chroma, mode):
    api = Api(make_chroma(), mode)
    long_text = "long " * 500
    api.put(("f",), "long", {"body": long_text})
    api.put(("f",), "other", {"body": long_text + "!"})
    assert [i.key for i in api.search(("f",), filter={"body": long_text})] == ["long"]


# -- semantic search ---------------------------------------------------------------------------


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def test_query_score_is_one_minus_cosine_distance(make_store, mode):
    api = Api(make_store(index=True), mode)
    api.put(("docs",), "editor", {"text": "I like dark mode in my editor"})
    api.put(("docs",), "tax", {"text": "filing the annual tax return"})
    results = api.search(("docs",), query="dark mode editor")
    assert [r.key for r in results] == ["editor", "tax"]
    emb = NGramEmbeddings()
    expected = _cosine(emb.embed_query("dark mode editor"), emb.embed_query("I like dark mode in my editor"))
    assert results[0].score == pytest.approx(expected, abs=1e-5)


def test_best_vector_per_item_scores_and_items_are_not_repeated(make_store, mode):
    api = Api(make_store(index=True), mode)
    api.put(("docs",), "multi", {"text": ["tax return forms", "dark mode editor theme"]}, index=["text[*]"])
    api.put(("docs",), "single", {"text": "dark mode editor theme"})
    results = api.search(("docs",), query="dark mode editor theme")
    assert sorted(r.key for r in results) == ["multi", "single"]
    assert results[0].score == pytest.approx(results[1].score, abs=1e-5)


def test_a_reput_with_the_same_texts_is_filtered_by_its_new_fields_on_every_vector(make_store, mode):
    api = Api(make_store(index=True), mode)
    value = {"text": ["tax return forms", "dark mode editor theme"], "status": "active"}
    api.put(("docs",), "multi", value, index=["text[*]"])
    api.put(("docs",), "multi", {**value, "status": "done"}, index=["text[*]"])  # same texts
    [hit] = api.search(("docs",), query="dark mode editor theme", filter={"status": "done"})
    assert hit.score == pytest.approx(1.0, abs=1e-5)  # its second vector, filtered as the item
    assert api.search(("docs",), query="dark mode editor theme", filter={"status": "active"}) == []


def test_a_rare_filter_finds_the_best_matching_items_beyond_the_nearest_ones(make_store, mode):
    api = Api(make_store(index=True), mode)
    texts = {f"k{i}": f"note {i} on topic {i % 7} and colour {i % 5}" for i in range(120)}
    rare = {k for k in texts if int(k[1:]) % 40 == 0}  # 3 of 120: not among the nearest few
    for key, text in texts.items():
        api.put(("docs",), key, {"text": text, "rare": key in rare})
    emb = NGramEmbeddings()
    query = "note on topic 3 and colour 2"
    expected = sorted(rare, key=lambda k: -_cosine(emb.embed_query(query), emb.embed_query(texts[k])))
    found = api.search(("docs",), query=query, filter={"rare": True}, limit=2, offset=1)
    assert [r.key for r in found] == expected[1:3]


def test_reput_replaces_old_vectors(make_store, mode):
    api = Api(make_store(index=True), mode)
    api.put(("docs",), "k", {"text": "alpha beta gamma"})
    api.put(("docs",), "k", {"text": "completely different words"})
    [hit] = api.search(("docs",), query="alpha beta gamma")
    emb = NGramEmbeddings()
    assert hit.score == pytest.approx(
        _cosine(emb.embed_query("alpha beta gamma"), emb.embed_query("completely different words")), abs=1e-5
    )


def test_index_false_items_are_stored_but_not_embedded(make_store, mode):
    store = make_store(index=True)
    api = Api(store, mode)
    api.put(("docs",), "plain", {"text": "dark mode"}, index=False)
    api.put(("docs",), "vec", {"text": "dark mode"})
    assert api.get(("docs",), "plain").value == {"text": "dark mode"}
    assert sorted(i.key for i in api.search(("docs",))) == ["plain", "vec"]
    scored = [r for r in api.search(("docs",), query="dark mode") if r.score is not None]
    assert [r.key for r in scored] == ["vec"]


def test_per_put_index_fields_override_the_config(make_store, mode):
    api = Api(make_store(index=True), mode)
    api.put(("docs",), "k", {"text": "unrelated", "title": "dark mode editor"}, index=["title"])
    [hit] = api.search(("docs",), query="dark mode editor")
    assert hit.score == pytest.approx(1.0, abs=1e-5)


def test_query_search_with_filter_and_offset(make_store, mode):
    api = Api(make_store(index=True), mode)
    for i in range(30):
        padding = " and more" * i  # strictly falling similarity: no ties to order arbitrarily
        api.put(("docs",), f"k{i}", {"text": f"dark mode{padding}", "even": i % 2 == 0})
    everything = api.search(("docs",), query="dark mode", filter={"even": True}, limit=100)
    assert len(everything) == 15 and all(r.value["even"] for r in everything)
    assert [r.key for r in everything] == [f"k{i}" for i in range(0, 30, 2)]
    page = api.search(("docs",), query="dark mode", filter={"even": True}, limit=5, offset=5)
    assert [r.key for r in page] == ["k10", "k12", "k14", "k16", "k18"]


def test_dims_mismatch_is_a_clear_error(make_chroma):
    store = make_chroma(index=True, dims=384)
    with pytest.raises(ValueError, match="dims=384"):
        store.put(("docs",), "k", {"text": "hello"})
    assert store.get(("docs",), "k") is None, "a failed put must not leave the item behind"


# -- list_namespaces ---------------------------------------------------------------------------


def test_list_namespaces(make_store, mode):
    api = Api(make_store(), mode)
    for ns in [("a", "b", "c"), ("a", "b", "d"), ("a", "x", "c"), ("z",), ("a",)]:
        api.put(ns, "k", {"v": 1})
    assert api.list_namespaces() == [("a",), ("a", "b", "c"), ("a", "b", "d"), ("a", "x", "c"), ("z",)]
    assert api.list_namespaces(prefix=("a", "b")) == [("a", "b", "c"), ("a", "b", "d")]
    assert api.list_namespaces(suffix=("c",)) == [("a", "b", "c"), ("a", "x", "c")]
    assert api.list_namespaces(prefix=("a", "*", "c")) == [("a", "b", "c"), ("a", "x", "c")]
    assert api.list_namespaces(prefix=("a",), max_depth=2) == [("a",), ("a", "b"), ("a", "x")]
    assert api.list_namespaces(limit=2, offset=1) == [("a", "b", "c"), ("a", "b", "d")]


# -- TTL ---------------------------------------------------------------------------------------


def test_ttl_expiry_refresh_and_sweep(make_chroma):
    store = make_chroma(ttl={"default_ttl": 0.02, "refresh_on_read": True})
    assert store.supports_ttl
    store.put(("t",), "fading", {"v": 1})
    store.put(("t",), "kept", {"v": 2}, ttl=None)
    store.put(("t",), "read", {"v": 3})
    time.sleep(0.8)
    assert store.get(("t",), "read") is not None  # refreshes its TTL by another 1.2 s
    time.sleep(0.8)
    assert store.get(("t",), "fading") is None
    assert store.get(("t",), "read", refresh_ttl=False) is not None
    assert sorted(i.key for i in store.search(("t",))) == ["kept", "read"]
    time.sleep(1.3)
    assert store.sweep_ttl() == 2
    assert [i.key for i in store.search(("t",))] == ["kept"]
    assert store.list_namespaces() == [("t",)]


def test_ttl_sweeper_thread_starts_and_stops(make_chroma):
    store = make_chroma(ttl={"default_ttl": 1, "sweep_interval_minutes": 60})
    assert store._sweeper is not None and store._sweeper.is_alive()
    assert store.stop_ttl_sweeper(timeout=5)


# -- audit additions: contract points that had no test that could fail -------------------------


def test_empty_nested_and_none_values_roundtrip(make_store, mode):
    api = Api(make_store(index=True), mode)
    values = {"empty": {}, "odd": {"nested": {}, "none": None, "list": [], "deep": {"a": {"b": []}}}}
    for key, value in values.items():
        api.put(("v",), key, value)
    for key, value in values.items():
        assert api.get(("v",), key).value == value
    assert sorted(i.key for i in api.search(("v",))) == ["empty", "odd"]


def test_timestamps_are_utc(make_store, mode):
    api = Api(make_store(), mode)
    before = datetime.now(UTC)
    api.put(("t",), "k", {"v": 1})
    item = api.get(("t",), "k")
    for stamp in (item.created_at, item.updated_at):
        assert stamp.utcoffset() == timedelta(0)
        assert before - timedelta(seconds=5) <= stamp <= datetime.now(UTC) + timedelta(seconds=5)


def test_an_empty_query_means_no_query(make_store, mode):
    api = Api(make_store(index=True), mode)
    for key in ["a", "b", "c"]:
        api.put(("q",), key, {"text": f"note {key}"})
    results = api.search(("q",), query="")
    assert sorted(r.key for r in results) == ["a", "b", "c"]
    assert all(r.score is None for r in results)


def test_an_empty_query_orders_newest_first(make_chroma, mode):
    api = Api(make_chroma(index=True), mode)
    for key in ["a", "b", "c"]:
        api.put(("q",), key, {"text": f"note {key}"})
    assert [r.key for r in api.search(("q",), query="")] == ["c", "b", "a"]


def test_list_namespaces_suffix_wildcards_and_prefix_with_suffix(make_store, mode):
    api = Api(make_store(), mode)
    for ns in [("a", "b", "c"), ("a", "x", "c"), ("a", "b", "d"), ("z", "b", "c")]:
        api.put(ns, "k", {"v": 1})
    assert api.list_namespaces(suffix=("*", "c")) == [("a", "b", "c"), ("a", "x", "c"), ("z", "b", "c")]
    assert api.list_namespaces(suffix=("b", "*")) == [("a", "b", "c"), ("a", "b", "d"), ("z", "b", "c")]
    assert api.list_namespaces(prefix=("a",), suffix=("c",)) == [("a", "b", "c"), ("a", "x", "c")]
    assert api.list_namespaces(prefix=("a", "b"), max_depth=1) == [("a",)]


def test_reput_with_fewer_vectors_drops_the_extra_ones(make_chroma, mode):
    store = make_chroma(index=True)
    api = Api(store, mode)
    texts = ["alpha beta gamma", "delta epsilon zeta", "eta theta iota"]
    api.put(("docs",), "k", {"text": texts}, index=["text[*]"])
    assert store._items.count() == 3  # the item's record plus two extra vectors
    api.put(("docs",), "k", {"text": ["kappa lambda mu"]}, index=["text[*]"])
    assert store._items.count() == 1
    [hit] = api.search(("docs",), query="eta theta iota")
    emb = NGramEmbeddings()
    assert hit.score == pytest.approx(
        _cosine(emb.embed_query("eta theta iota"), emb.embed_query("kappa lambda mu")), abs=1e-5
    )


def test_delete_removes_every_vector_of_the_item(make_chroma, mode):
    store = make_chroma(index=True)
    api = Api(store, mode)
    api.put(("docs",), "k", {"text": ["one two", "three four", "five six"]}, index=["text[*]"])
    api.put(("docs",), "other", {"text": "seven eight"})
    api.delete(("docs",), "k")
    assert store._items.count() == 1
    assert [r.key for r in api.search(("docs",), query="three four")] == ["other"]


def test_a_batch_with_an_invalid_op_writes_nothing(make_chroma):
    store = make_chroma()
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("ok",), "k", {"v": 1}), PutOp(("bad.label",), "k", {"v": 2})])
    assert store.get(("ok",), "k") is None


def test_non_dict_values_are_a_clear_error(make_chroma, mode):
    api = Api(make_chroma(), mode)
    with pytest.raises(ValueError, match="dict"):
        api.put(("a",), "k", "just a string")  # type: ignore[arg-type]
    assert api.get(("a",), "k") is None


def test_search_refreshes_ttl_unless_told_not_to(make_chroma):
    store = make_chroma(ttl={"default_ttl": 0.02, "refresh_on_read": True})  # 1.2 s
    store.put(("t",), "refreshed", {"v": 1})
    store.put(("t",), "not-refreshed", {"v": 2})
    time.sleep(0.8)
    assert len(store.search(("t",), filter={"v": 1})) == 1  # refreshes "refreshed" only
    assert len(store.search(("t",), filter={"v": 2}, refresh_ttl=False)) == 1
    time.sleep(0.8)
    assert store.get(("t",), "refreshed", refresh_ttl=False) is not None
    assert store.get(("t",), "not-refreshed", refresh_ttl=False) is None


def test_the_ttl_sweeper_deletes_expired_items_by_itself(make_chroma):
    store = make_chroma(ttl={"default_ttl": 0.005, "sweep_interval_minutes": 0.01})  # 0.3 s, 0.6 s
    store.put(("t",), "fading", {"v": 1})
    store.put(("t",), "kept", {"v": 2}, ttl=None)
    deadline = time.monotonic() + 10

    def records() -> int:  # read as the store reads: its sweep may be purging the files
        with store._folder.hold():
            return store._items.count()

    while records() > 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert records() == 1, "the sweeper never removed the expired record"
    assert [i.key for i in store.search(("t",))] == ["kept"]
    assert store.stop_ttl_sweeper(timeout=5)


def test_a_query_search_with_limit_zero_returns_nothing(make_chroma, mode):
    api = Api(make_chroma(index=True), mode)
    api.put(("docs",), "k", {"text": "dark mode"})
    assert api.search(("docs",), query="dark mode", limit=0) == []


def test_an_empty_index_field_list_embeds_nothing(make_chroma, mode):
    api = Api(make_chroma(index=True), mode)
    api.put(("docs",), "k", {"text": "hello world"}, index=[])
    assert [r.score for r in api.search(("docs",), query="hello world") if r.key == "k"] in ([], [None])


def test_abatch_results_in_input_order_and_last_put_wins(make_store):
    store = make_store(index=True)
    puts = [PutOp(("ns",), f"k{i % 70}", {"text": f"value {i}"}) for i in range(140)]  # > one chunk
    asyncio.run(store.abatch(puts))
    ops = [GetOp(("ns",), f"k{i}") for i in reversed(range(70))] + [SearchOp(("ns",), limit=200)]
    results = asyncio.run(store.abatch(ops))
    assert [r.value["text"] for r in results[:70]] == [f"value {i + 70}" for i in reversed(range(70))]
    assert len(results[70]) == 70
