"""One background event loop that runs engram's async logic for sync callers.

The graph's nodes and the middleware's hooks are `async def`; their sync entry points
(`graph.invoke`, a `create_agent` agent's `invoke`) run the same coroutine here, so there is one
copy of the logic. Context variables (the run's config, so callbacks and streaming) travel with
the call.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from functools import cache
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` on the background loop and wait for its result.

    Example:
        >>> async def double(x: int) -> int:
        ...     return 2 * x
        >>> run_sync(double(21))
        42
    """
    return asyncio.run_coroutine_threadsafe(coro, _background_loop()).result()


@cache
def _background_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="engram-graph-loop", daemon=True).start()
    return loop
