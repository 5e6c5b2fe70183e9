"""Drivers for store steps: generators that yield batches of store operations.

A step function (`engram.stores.memory.policy`, `engram.stores.memory.users`,
`engram.stores.maintenance.maintain`, ...) yields a list of `Op`s, receives their results, and finally
returns a value. `run_steps` drives one with `store.batch`, `arun_steps` with `await
store.abatch`: the logic exists once, only the I/O line differs (STYLE.md).

Example:
    >>> from langgraph.store.base import GetOp, PutOp
    >>> from langgraph.store.memory import InMemoryStore
    >>> def steps():
    ...     yield [PutOp(("users", "alice"), "theme", {"value": "dark"})]
    ...     (item,) = yield [GetOp(("users", "alice"), "theme")]
    ...     return item.value["value"]
    >>> run_steps(InMemoryStore(), steps())
    'dark'
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TypeVar

from langgraph.store.base import BaseStore, Op, Result

T = TypeVar("T")
Steps = Generator[list[Op], list[Result], T]
"""A store step: yields batches of operations, receives their results, returns a value."""


def run_steps(store: BaseStore, steps: Steps[T]) -> T:
    """Run `steps` to completion with `store.batch`."""
    try:
        ops = next(steps)
        while True:
            ops = steps.send(store.batch(ops))
    except StopIteration as done:
        return done.value


async def arun_steps(store: BaseStore, steps: Steps[T]) -> T:
    """Run `steps` to completion with `await store.abatch`."""
    try:
        ops = next(steps)
        while True:
            ops = steps.send(await store.abatch(ops))
    except StopIteration as done:
        return done.value
