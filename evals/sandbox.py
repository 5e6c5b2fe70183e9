"""A fresh embedded engram installation in a temporary folder, for one eval dialog or conversation.

The same pieces `compile_graph` uses by default: a `ChromaStore` on a `PersistentClient` (memories
and episodes, with `default_index`) and a SQLite checkpointer, both in their own folder, which
is deleted afterwards. The embedder is shared between sandboxes (the model loads once).
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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
) -> AsyncIterator[Sandbox]:
    """Compile the engram graph on a new embedded store and checkpointer; delete them on exit.

    Args:
        model: The answering model (in evals, a `ScriptedChatModel`).
        embeddings: The store's embedder (indexed as `default_index` says).
        memory_model: Summaries and extraction; None: the offline built-ins.
    """
    index = default_index(embeddings)
    with tempfile.TemporaryDirectory(prefix="engram-eval-", ignore_cleanup_errors=True) as tmp:
        folder = Path(tmp)
        store = ChromaStore(path=folder / "chroma", index=index)
        saver = ThreadedSqliteSaver.from_path(folder / "checkpoints.sqlite")
        try:
            graph = compile_graph(model, memory_model=memory_model, store=store, checkpointer=saver)
            yield Sandbox(graph, store, folder)
        finally:
            store.close()
            store.client.close()
            saver.conn.close()
