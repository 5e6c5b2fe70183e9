"""The embedded default checkpointer: one SQLite file that serves `invoke` and `ainvoke` alike.

LangGraph's `SqliteSaver` is sync-only (its async methods raise) and `AsyncSqliteSaver` must be
created inside a running event loop and bound to it. An app that embeds the graph calls both
`graph.invoke(...)` and `await graph.ainvoke(...)`, so the default is a `SqliteSaver` whose async
methods run the sync ones in a worker thread (SQLite calls are short and `SqliteSaver` already
serialises them with a lock).

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
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver


class ThreadedSqliteSaver(SqliteSaver):
    """A `SqliteSaver` whose async methods run its sync ones in a worker thread."""

    @classmethod
    def from_path(cls, path: str | Path) -> ThreadedSqliteSaver:
        """Open (creating folders as needed) a checkpoint database that lives as long as the app.

        Args:
            path: The SQLite file, or ":memory:".
        """
        if str(path) != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        return cls(sqlite3.connect(str(path), check_same_thread=False))

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
