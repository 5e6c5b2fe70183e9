"""The memory API in-process, on a Chroma store in a temporary data folder (the n-gram fake
embeds, so nothing loads a model), through Starlette's `TestClient`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fakes import NGramEmbeddings
from starlette.testclient import TestClient

from engram.graph.http import USER_HEADER, create_app
from engram.stores.chroma.store import ChromaStore


@dataclass
class Api:
    """A client of the app, acting as alice unless told otherwise, and the store under it."""

    client: TestClient
    store: ChromaStore
    folder: Path

    def add(self, text: str, user: str = "alice", **fields: Any) -> dict[str, Any]:
        """Add a memory; the memory stored."""
        response = self.client.post(
            "/api/memories", json={"text": text, **fields}, headers={USER_HEADER: user}
        )
        assert response.status_code in (200, 201), response.text
        return response.json()["memory"]


@contextmanager
def memory_api(folder: Path, **app_options: Any) -> Iterator[Api]:
    """The app (`create_app(store, user_header=True, **app_options)`) on a store in `folder`."""
    store = ChromaStore(
        path=folder / "chroma",
        index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]},
    )
    app = create_app(store, **{"user_header": True, **app_options})
    try:
        with TestClient(app, headers={USER_HEADER: "alice"}) as client:
            yield Api(client, store, folder)
    finally:
        store.close()
