"""Sync entry points run engram's async logic in the caller's own thread.

The graph's nodes and the middleware's hooks are `async def`; their sync forms (`graph.invoke`,
a `create_agent` agent's `invoke`, the memory tools' sync call) run the same coroutine to its
end on a new event loop in the thread LangGraph gave them, so there is one copy of the logic and
no engram thread between the caller and the work. Nothing that loop runs holds on to it: the
store's async calls and the memory model's calls are loop-agnostic (`ChromaStore.abatch`,
`engram.nodes.model.calls`), and the answering model is called through its sync API on this
path (`engram.nodes.respond`). Context variables (the run's config, so callbacks and streaming)
go with the coroutine.

A thread that already runs an event loop (a sync `invoke` made from async code) cannot start a
second one, so there the coroutine runs on a short-lived thread of its own.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to its end from sync code and return its result.

    Example:
        >>> async def double(x: int) -> int:
        ...     return 2 * x
        >>> run_sync(double(21))
        42
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    context = contextvars.copy_context()
    with ThreadPoolExecutor(1, thread_name_prefix="engram-sync-call") as thread:
        return thread.submit(context.run, asyncio.run, coro).result()
