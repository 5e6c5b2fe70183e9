"""A fresh embedded engram installation in a temporary folder, for one eval dialog or conversation.

The same pieces `compile_graph` uses by default: a `ChromaStore` on a `PersistentClient` (memories
and episodes, with `default_index`) and a SQLite checkpointer, both in their own folder, which
is deleted afterwards (unless the caller names a folder to keep, so that a later run reopens
it). The embedder is shared between sandboxes (the model loads once).
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langgraph.graph.state import CompiledStateGraph

from engram.graph import compile_graph
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.stores.chroma.store import ChromaStore, default_index


@dataclass(frozen=True)
class Sandbox:
    """A compiled graph on its own store and checkpointer."""

    graph: CompiledStateGraph
    store: ChromaStore
    folder: Path


@asynccontextmanager
async def sandbox(
    model: BaseChatModel,
    *,
    embeddings: Embeddings,
    memory_model: BaseChatModel | None = None,
    folder: Path | None = None,
) -> AsyncIterator[Sandbox]:
    """Compile the engram graph on a new embedded store and checkpointer; delete them on exit.

    Args:
        model: The answering model (in evals, a `ScriptedChatModel`).
        embeddings: The store's embedder (indexed as `default_index` says).
        memory_model: Summaries and extraction; None: the offline built-ins.
        folder: Keep the store and checkpointer here (created if needed, reopened if they
            exist, never deleted); None: a temporary folder deleted on exit.
    """
    index = default_index(embeddings)
    with _folder(folder) as path:
        store = ChromaStore(path=path / "chroma", index=index)
        saver = ThreadedSqliteSaver.from_path(path / "checkpoints.sqlite")
        try:
            graph = compile_graph(model, memory_model=memory_model, store=store, checkpointer=saver)
            yield Sandbox(graph, store, path)
        finally:
            store.close()
            store.client.close()
            saver.conn.close()


@contextmanager
def _folder(kept: Path | None) -> Iterator[Path]:
    if kept is not None:
        kept.mkdir(parents=True, exist_ok=True)
        yield kept
        return
    with tempfile.TemporaryDirectory(prefix="engram-eval-", ignore_cleanup_errors=True) as tmp:
        yield Path(tmp)
