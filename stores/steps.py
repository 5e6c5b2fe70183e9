"""Drivers for store steps: generators that yield batches of store operations.

A step function (`engram.stores.memory.write.policy`, `engram.stores.memory.users`,
`engram.stores.maintenance.maintain`, ...) yields a list of `Op`s, receives their results, and finally
returns a value. `run_steps` drives one with `store.batch`, `arun_steps` with `await
store.abatch`: the logic exists once, only the I/O line differs.

A step may also yield a question for something outside the store (the write policy asks a merge
decider, `engram.stores.memory.write.decision`): anything that is not a list of operations goes to the
driver's `answer` function (`run_steps`) or coroutine (`arun_steps`), and its return value is
sent back into the step.

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

import asyncio
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

from langgraph.store.base import BaseStore, Op, Result

T = TypeVar("T")
Steps = Generator[list[Op], list[Result], T]
"""A store step: yields batches of operations, receives their results, returns a value."""
AskingSteps = Generator[Any, Any, T]
"""A store step that may also yield questions (anything but a list of operations)."""


def run_steps(
    store: BaseStore, steps: AskingSteps[T], answer: Callable[[Any], Any] | None = None
) -> T:
    """Run `steps` to completion with `store.batch`; `answer` replies to its questions."""
    try:
        request = next(steps)
        while True:
            if isinstance(request, list):
                request = steps.send(store.batch(request))
            else:
                request = steps.send(_answerer(answer, request)(request))
    except StopIteration as done:
        return done.value


async def arun_steps(
    store: BaseStore,
    steps: AskingSteps[T],
    answer: Callable[[Any], Awaitable[Any]] | None = None,
) -> T:
    """Run `steps` to completion with `await store.abatch`; `await answer(...)` replies to its
    questions."""
    try:
        request = next(steps)
        while True:
            if isinstance(request, list):
                request = steps.send(await store.abatch(request))
            else:
                request = steps.send(await _answerer(answer, request)(request))
    except StopIteration as done:
        return done.value


def together(*steps: Steps[Any]) -> Steps[tuple[Any, ...]]:
    """Several steps as one: each round's operations of all of them go in one batch (one call
    to the store instead of one each); returns their values in order.

    Example:
        >>> from langgraph.store.base import GetOp, PutOp
        >>> from langgraph.store.memory import InMemoryStore
        >>> def read(key):
        ...     (item,) = yield [GetOp(("n",), key)]
        ...     return item and item.value
        >>> store = InMemoryStore()
        >>> store.put(("n",), "a", {"x": 1})
        >>> run_steps(store, together(read("a"), read("b")))
        ({'x': 1}, None)
    """
    done: dict[int, Any] = {}
    requests: dict[int, list[Op]] = {}

    def advance(n: int, results: list[Result] | None) -> None:
        try:
            request = next(steps[n]) if results is None else steps[n].send(results)
        except StopIteration as finished:
            done[n] = finished.value
            requests.pop(n, None)
            return
        if not isinstance(request, list):
            raise TypeError(f"together runs store steps only; a step asked {type(request).__name__}")
        requests[n] = request

    try:
        for n in range(len(steps)):
            advance(n, None)
        while requests:
            asked = sorted(requests)
            results = yield [op for n in asked for op in requests[n]]
            if len(results) != sum(len(requests[n]) for n in asked):
                raise ValueError("the store answered a batch with the wrong number of results")
            start = 0
            for n in asked:
                count = len(requests[n])
                advance(n, results[start : start + count])
                start += count
    finally:
        for step in steps:
            step.close()
    return tuple(done[n] for n in range(len(steps)))


def holds_across_processes(store: BaseStore) -> bool:
    """Whether `store` can hold several calls at once against other processes
    (`ChromaStore.exclusive` on an embedded folder)."""
    return bool(getattr(store, "exclusive_across_processes", False))


def run_held(store: BaseStore, steps: AskingSteps[T]) -> T:
    """`run_steps`, inside `store.exclusive()` where that keeps other processes out: the steps'
    reads and the writes they decide are then one compare-and-set across processes. Steps that
    ask questions (a model call) must not hold the store: use `run_steps`."""
    if not holds_across_processes(store):
        return run_steps(store, steps)
    with store.exclusive():  # type: ignore[attr-defined]
        return run_steps(store, steps)


async def arun_held(store: BaseStore, steps: AskingSteps[T]) -> T:
    """`run_held` from async code (a hold runs on a worker thread, as its calls must run on the
    thread that holds it)."""
    if not holds_across_processes(store):
        return await arun_steps(store, steps)
    return await asyncio.to_thread(run_held, store, steps)


def _answerer(answer: Callable[[Any], Any] | None, question: Any) -> Callable[[Any], Any]:
    if answer is None:
        raise TypeError(
            f"a store step asked {type(question).__name__} and the driver has nothing to answer "
            "it with: pass answer=..."
        )
    return answer
