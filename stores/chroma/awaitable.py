"""Results that sync callers use as they are and async callers may `await`.

langgraph's async stores make their TTL methods coroutines (`await store.sweep_ttl()`), its
sync stores plain methods. `ChromaStore` is both kinds of store in one class, so its TTL methods
do their (short) work at once and return a value that also works under `await`.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, Self


class AwaitableInt(int):
    """An `int` that awaiting gives back unchanged.

    Example:
        >>> import asyncio
        >>> async def main():
        ...     return await AwaitableInt(3)
        >>> asyncio.run(main()), AwaitableInt(3) + 1
        (3, 4)
    """

    def __await__(self) -> Generator[Any, None, int]:
        return int(self)
        yield  # a generator: `await` runs it and receives the value at once


class AwaitableBool(int):
    """A truth value (0 or 1, shown as `True`/`False`) that awaiting turns into a `bool`.

    `bool` cannot be subclassed; `==`, `not` and `if` behave as with a `bool`.

    Example:
        >>> import asyncio
        >>> async def main():
        ...     return await AwaitableBool(True)
        >>> asyncio.run(main()), bool(AwaitableBool(False))
        (True, False)
    """

    def __new__(cls, value: object) -> Self:
        return super().__new__(cls, bool(value))

    def __repr__(self) -> str:
        return repr(bool(self))

    def __await__(self) -> Generator[Any, None, bool]:
        return bool(self)
        yield  # a generator: `await` runs it and receives the value at once
