"""The store the memory API works on: one given to `create_app`, or engram's default store,
opened on the first request that needs it (once per app) and closed when the server stops.

The default store is the one langgraph.json names (`engram.stores.chroma.store.make_store`):
the Chroma server in `$ENGRAM_CHROMA_URL`, else the embedded folder `$ENGRAM_DATA_DIR/chroma`
(default `./.engram/chroma`). Other processes on that folder (the graph's server, `engram
memory ...`) see the API's writes by their next store call, and it sees theirs
(`engram.stores.chroma.process_lock`). Opening and closing it block (the embedding model loads,
Chroma opens its files), so both run in a worker thread, off the server's event loop.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from langgraph.store.base import BaseStore


class StoreSource:
    """Gives the API its store.

    Args:
        store: The store to use (its owner closes it); None: `factory()`'s, opened on first
            use and closed by `aclose`.
        factory: Opens the default store; default `make_store`, as langgraph.json's store.
    """

    def __init__(
        self, store: BaseStore | None = None, factory: Callable[[], BaseStore] | None = None
    ) -> None:
        self._store = store
        self._owned = store is None
        self._factory = factory
        self._opening = threading.Lock()

    async def get(self) -> BaseStore:
        """The store, opened now if this is the first call."""
        if self._store is not None:
            return self._store
        return await asyncio.to_thread(self._open)

    async def aclose(self) -> None:
        """Close the store if this source opened it (a later `get` opens it again)."""
        if self._owned:
            await asyncio.to_thread(self._close)

    def _open(self) -> BaseStore:
        with self._opening:
            if self._store is None:
                self._store = (self._factory or _default_factory())()
            return self._store

    def _close(self) -> None:
        with self._opening:
            store, self._store = self._store, None
        if (close := getattr(store, "close", None)) is not None:
            close()


def _default_factory() -> Callable[[], BaseStore]:
    # imported on first use: an app given its own store never loads chromadb for it
    from engram.stores.chroma.store import make_store

    return make_store
