"""`together`: several store steps run as one, one batch per round."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.store.base import GetOp, PutOp
from langgraph.store.memory import InMemoryStore

from engram.stores.steps import run_steps, together

NS = ("n",)


class CountingStore(InMemoryStore):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[int] = []

    def batch(self, ops: Any) -> Any:
        ops = list(ops)
        self.batches.append(len(ops))
        return super().batch(ops)


def _read_twice(key: str):
    first = yield [GetOp(NS, key)]
    second = yield [GetOp(NS, key), GetOp(NS, key)]
    return [first[0] and first[0].value, len(second)]


def _write(key: str):
    yield [PutOp(NS, key, {"v": key})]
    return key


def _nothing():
    return "none"
    yield  # a step that needs no store call


def test_steps_that_end_at_different_rounds_share_batches_and_keep_their_values() -> None:
    store = CountingStore()
    store.put(NS, "a", {"v": 1})
    store.batches.clear()
    values = run_steps(store, together(_read_twice("a"), _write("b"), _nothing()))
    assert values == ([{"v": 1}, 2], "b", "none")
    assert store.batches == [2, 2]  # round 1: a read and a write; round 2: the two reads
    assert store.get(NS, "b").value == {"v": "b"}


def test_a_step_that_asks_a_question_is_refused_and_every_step_is_closed() -> None:
    closed = []

    def asking():
        try:
            yield "which one?"
        finally:
            closed.append("asking")

    def waiting():
        try:
            yield [GetOp(NS, "a")]
        finally:
            closed.append("waiting")

    with pytest.raises(TypeError, match="store steps only"):
        run_steps(InMemoryStore(), together(waiting(), asking()))
    assert sorted(closed) == ["asking", "waiting"]


def test_a_store_answering_with_the_wrong_count_is_an_error() -> None:
    class ShortStore(InMemoryStore):
        def batch(self, ops: Any) -> Any:
            return super().batch(list(ops))[:-1]

    with pytest.raises(ValueError, match="wrong number of results"):
        run_steps(ShortStore(), together(_write("a"), _write("b")))
