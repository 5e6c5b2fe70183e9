"""The memory API and page as one ASGI app: `create_app(...)`, and `app`, the one langgraph.json
serves beside the graph (`"http": {"app": "./graph/http/app.py:app"}`).

`app` opens engram's default store on its first request (as langgraph.json's store does:
`$ENGRAM_CHROMA_URL`, else `$ENGRAM_DATA_DIR`) and closes it when the server stops. Mount
`create_app(store=...)` in your own Starlette or FastAPI app to serve a store you already have:

    from starlette.applications import Starlette
    from starlette.routing import Mount

    from engram.graph.http import create_app

    outer = Starlette(routes=[Mount("/engram", app=create_app(user_header=True))])
    # the page at /engram/memories, the API at /engram/api/memories
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Collection
from contextlib import asynccontextmanager

from langgraph.store.base import BaseStore
from starlette.applications import Starlette

from engram.graph.http.memories import MemoryApi
from engram.graph.http.page import page_route
from engram.graph.http.pending import PendingApi
from engram.graph.http.store import StoreSource


def create_app(
    store: BaseStore | None = None,
    *,
    user_header: bool | None = None,
    store_factory: Callable[[], BaseStore] | None = None,
    trusted_origins: Collection[str] | None = None,
) -> Starlette:
    """The memory API (`/api/memories...`, the pending memories at `/api/memories/pending...`)
    and the memories page (`/memories`).

    Args:
        store: The store holding the memories (you close it); None: `store_factory()`'s,
            opened on the first request and closed when the app shuts down.
        user_header: Whether the `X-Engram-User` header may name the user when no
            authentication middleware authenticated one: True for local development, False
            never; None: only under `langgraph dev` with no auth configured
            (`engram.graph.http.users`).
        store_factory: Opens the store when `store` is None; default engram's own
            (`engram.stores.chroma.store.make_store`, as langgraph.json's store).
        trusted_origins: Origins of other sites (your app's front end, say
            `https://app.example.com`) whose pages may change memories with the signed-in
            person's cookie; None: under a LangGraph server, the origins its CORS config
            allows. A page of the server's own origin always may.

    Example:
        >>> from langgraph.store.memory import InMemoryStore
        >>> from starlette.testclient import TestClient
        >>> client = TestClient(create_app(InMemoryStore(), user_header=True))
        >>> client.get("/api/memories", headers={"X-Engram-User": "alice"}).json()["total"]
        0
    """
    source = StoreSource(store, store_factory)
    memories = MemoryApi(source, user_header=user_header, trusted_origins=trusted_origins)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            await source.aclose()

    pending = PendingApi(memories)
    routes = [*pending.routes(), *memories.routes(), page_route("/memories")]
    return Starlette(routes=routes, lifespan=lifespan)


app = create_app()
"""The app langgraph.json serves with the graph: engram's default store, users from the
deployment's auth (or `X-Engram-User` under `langgraph dev`)."""
