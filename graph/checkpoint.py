"""The embedded default checkpointer: one SQLite file that serves `invoke` and `ainvoke` alike.

LangGraph's `SqliteSaver` is sync-only (its async methods raise) and `AsyncSqliteSaver` must be
created inside a running event loop and bound to it. An app that embeds the graph calls both
`graph.invoke(...)` and `await graph.ainvoke(...)`, so the default is a `SqliteSaver` whose async
methods run the sync ones in a worker thread (SQLite calls are short and `SqliteSaver` already
serialises them with a lock).

Several processes may share the file (app workers, `langgraph dev`, `engram memory`): it is in
WAL mode from the first connection on (readers never wait for a writer), and a writer waits up to
`BUSY_TIMEOUT_SECONDS` for another process's write instead of failing with "database is locked".

Example:
    >>> saver = ThreadedSqliteSaver.from_path(":memory:")
    >>> import asyncio
    >>> asyncio.run(saver.aget_tuple({"configurable": {"thread_id": "t"}})) is None
    True
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Self

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver

BUSY_TIMEOUT_SECONDS = 60.0
"""How long a checkpoint write waits for another process's write to the same file."""


class ThreadedSqliteSaver(SqliteSaver):
    """A `SqliteSaver` whose async methods run its sync ones in a worker thread."""

    @classmethod
    def from_path(cls, path: str | Path) -> ThreadedSqliteSaver:
        """Open (creating folders as needed) a checkpoint database that lives as long as the app.

        Args:
            path: The SQLite file, or ":memory:".
        """
        if str(path) == ":memory:":
            return cls(sqlite3.connect(":memory:", check_same_thread=False))
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), check_same_thread=False, timeout=BUSY_TIMEOUT_SECONDS)
        conn.execute("PRAGMA journal_mode=WAL")
        return cls(conn)

    def close(self) -> None:
        """Close the SQLite connection; the saver is unusable afterwards (closing again does
        nothing)."""
        with self.lock:
            self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        items = await asyncio.to_thread(
            lambda: list(self.list(config, filter=filter, before=before, limit=limit))
        )
        for item in items:
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def aget_delta_channel_history(
        self, *, config: RunnableConfig, channels: Sequence[str]
    ) -> Mapping[str, Any]:
        return await asyncio.to_thread(
            lambda: self.get_delta_channel_history(config=config, channels=channels)
        )
