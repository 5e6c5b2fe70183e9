"""Edges of the store contract that langgraph's own store suites probe, in engram's words.

Same backends and sync/async modes as `test_store_contract.py` (its store factory is reused): special
numbers in filters, filter strings that look like code, labels with pattern characters, ranking
among many equal vectors, paging a query search, expired items inside a page, and the TTL methods
awaited as on langgraph's async stores.
"""

from __future__ import annotations

import asyncio
import time

import pytest
from test_store_contract import (  # noqa: F401  the contract suite's fixtures, reused
    Api,
    make_chroma,
    make_store,
    mode,
)

# -- filters -----------------------------------------------------------------------------------


@pytest.fixture
def priced(make_store, mode):
    api = Api(make_store(), mode)
    for key, price in [("cheap", 10), ("mid", 20), ("dear", 30), ("debt", -10)]:
        api.put(("shop",), key, {"price": price})
    return api


@pytest.mark.parametrize(
    "flt, expected",
    [
        ({"price": {"$lt": float("inf")}}, "cheap dear debt mid"),
        ({"price": {"$gt": float("-inf")}}, "cheap dear debt mid"),
        ({"price": {"$gte": float("inf")}}, ""),
        ({"price": {"$eq": float("nan")}}, ""),
        ({"price": float("nan")}, ""),
        ({"price": {"$ne": float("nan")}}, "cheap dear debt mid"),
        ({"price": {"$lt": 10**100}}, "cheap dear debt mid"),
        ({"price": {"$gt": -(10**100)}}, "cheap dear debt mid"),
        ({"price": {"$lt": 0}}, "debt"),
        ({"price": {"$gt": 15, "$lt": float("inf")}}, "dear mid"),
    ],
)
def test_numeric_filters_with_infinities_nan_and_huge_numbers(priced, flt, expected):
    found = sorted(item.key for item in priced.search(("shop",), filter=flt))
    assert " ".join(found) == expected


def test_stored_infinities_and_nan_compare_like_python_numbers(make_chroma, mode):
    api = Api(make_chroma(), mode)
    api.put(("m",), "up", {"x": float("inf")})
    api.put(("m",), "down", {"x": float("-inf")})
    api.put(("m",), "nan", {"x": float("nan")})
    api.put(("m",), "one", {"x": 1})
    assert sorted(i.key for i in api.search(("m",), filter={"x": {"$lt": 5}})) == ["down", "one"]
    assert sorted(i.key for i in api.search(("m",), filter={"x": {"$gt": 5}})) == ["up"]
    assert [i.key for i in api.search(("m",), filter={"x": float("inf")})] == ["up"]
    assert api.get(("m",), "down").value == {"x": float("-inf")}


@pytest.mark.parametrize(
    "probe",
    [
        "public' OR '1'='1",
        "public'; --",
        "public\x00' OR 1=1",
        '"}] OR {"$ne": null',
        "''''",
        "public' OR 'א'='א",
    ],
)
def test_filter_strings_that_look_like_code_match_only_themselves(make_store, mode, probe):
    api = Api(make_store(), mode)
    api.put(("docs",), "open", {"access": "public"})
    api.put(("docs",), "closed", {"access": "private"})
    api.put(("docs",), "quoted", {"access": "O'Brien's"})
    assert api.search(("docs",), filter={"access": probe}) == []
    assert [i.key for i in api.search(("docs",), filter={"access": "O'Brien's"})] == ["quoted"]


def test_filter_keys_are_literal_top_level_fields(make_chroma, mode):
    """A dotted key names a top-level field with a dot; nested fields take a nested dict."""
    api = Api(make_chroma(), mode)
    api.put(("docs",), "dotted", {"user.level": "top"})
    api.put(("docs",), "nested", {"user": {"level": "inner"}, "access-level": "x", "123abc": "y"})
    assert [i.key for i in api.search(("docs",), filter={"user.level": "top"})] == ["dotted"]
    assert api.search(("docs",), filter={"user.level": "inner"}) == []
    assert [i.key for i in api.search(("docs",), filter={"user": {"level": "inner"}})] == ["nested"]
    assert [i.key for i in api.search(("docs",), filter={"access-level": "x"})] == ["nested"]
    assert [i.key for i in api.search(("docs",), filter={"123abc": "y"})] == ["nested"]


# -- namespaces --------------------------------------------------------------------------------


@pytest.mark.parametrize("label", ["a%b", "a_b", "a*b", "a?b", "a[b]", "a\\b", "a'b"])
def test_pattern_characters_in_labels_are_literal(make_store, mode, label):
    api = Api(make_store(), mode)
    api.put(("root", label), "k", {"v": 1})
    api.put(("root", "aXb"), "k", {"v": 2})
    api.put(("root", "a"), "k", {"v": 3})
    assert [i.value["v"] for i in api.search(("root", label))] == [1]
    assert api.list_namespaces(prefix=("root", label)) == [("root", label)]
    assert api.list_namespaces(suffix=(label,)) == [("root", label)]


def test_labels_differing_by_case_or_a_trailing_newline_are_different(make_store, mode):
    api = Api(make_store(), mode)
    api.put(("users", "alice"), "k", {"v": 1})
    api.put(("users", "alice\n"), "k", {"v": 2})
    api.put(("users", "Alice"), "k", {"v": 3})
    assert [i.value["v"] for i in api.search(("users", "alice"))] == [1]
    assert api.list_namespaces(suffix=("alice",)) == [("users", "alice")]
    assert api.list_namespaces(prefix=("users", "alice\n")) == [("users", "alice\n")]


def test_an_empty_prefix_searches_every_namespace(make_store, mode):
    api = Api(make_store(), mode)
    for ns in [("a",), ("b", "c"), ("d", "e", "f")]:
        api.put(ns, "k", {"v": 1})
    assert {i.namespace for i in api.search((), limit=100)} == {("a",), ("b", "c"), ("d", "e", "f")}


# -- ranking and paging of query searches ------------------------------------------------------


def test_the_one_close_item_ranks_first_among_many_equal_vectors(make_store, mode):
    """200 items share one vector; the single item that resembles the query must come first,
    even though an HNSW index answers short and arbitrarily among equal vectors."""
    store = make_store(index=True)
    api = Api(store, mode)
    api.put(("test", "M"), "M", {"text": "mmm"})
    for group in ("A", "Z"):
        for i in range(100):
            store.put(("test", group), f"{group}{i}", {"text": "nothing alike"})
    results = api.search(("test",), query="mmm", limit=10)
    assert len(results) == 10
    assert len({r.key for r in results}) == 10
    assert results[0].key == "M"
    assert results[0].score > results[1].score


@pytest.mark.parametrize("page", [3, 7, 10])
def test_pages_of_a_query_search_cover_every_item_once(make_store, mode, page):
    api = Api(make_store(index=True), mode)
    for n in range(37):
        api.put(("log",), f"e{n}", {"text": f"entry number {n}"})  # "12" and "21" embed alike
    keys = [
        r.key
        for offset in range(0, 37, page)
        for r in api.search(("log",), query="entry number", limit=page, offset=offset)
    ]
    assert sorted(keys) == sorted(f"e{n}" for n in range(37))
    whole = api.search(("log",), query="entry number", limit=37)
    assert keys == [r.key for r in whole]


def test_expired_items_take_no_place_in_a_page(make_chroma):
    store = make_chroma(ttl={"default_ttl": 0.01})  # 0.6 s
    for key in ("a", "b", "c"):
        store.put(("page",), key, {"k": key}, ttl=None)
        time.sleep(0.02)
    store.put(("page",), "expiring", {"k": "x"})  # the newest, so first in a plain search
    time.sleep(1.0)
    assert [i.key for i in store.search(("page",), limit=2)] == ["c", "b"]
    assert [i.key for i in store.search(("page",), limit=2, offset=2)] == ["a"]


# -- TTL methods awaited as on langgraph's async stores ----------------------------------------


def test_ttl_methods_can_be_awaited_or_called(make_chroma):
    store = make_chroma(ttl={"default_ttl": 0.005})  # 0.3 s

    async def flow() -> tuple[int, bool, bool]:
        await store.aput(("t",), "gone", {"v": 1})
        await store.aput(("t",), "kept", {"v": 2}, ttl=None)
        await asyncio.sleep(0.6)
        swept = await store.sweep_ttl()
        started = await store.start_ttl_sweeper(sweep_interval_minutes=60)
        stopped = await store.stop_ttl_sweeper(timeout=5)
        return swept, started, stopped

    swept, started, stopped = asyncio.run(flow())
    assert (swept, started, stopped) == (1, True, True)
    assert type(started) is bool and type(stopped) is bool
    assert [i.key for i in store.search(("t",))] == ["kept"]
    assert store.sweep_ttl() == 0  # a plain call still returns the count
    assert store.stop_ttl_sweeper() is not None and bool(store.stop_ttl_sweeper())
