"""Offloaded tool results in the graph and in agents: the tool-call wrappers that offload
(`engram.nodes.offload`) and the two tools the agent reads results back with.

- `offload_wrappers(offloader)` gives the `wrap_tool_call` / `awrap_tool_call` pair that the
  graph's `ToolNode` and `EngramMiddleware` both use: the tool runs as before (sync or async),
  then its result goes through `Offloader.aprocess` (the sync one through `run_sync`).
- `offload_tools()` gives `read_tool_result` (a part of a result, by character offset) and
  `search_tool_result` (its best passages for a query, by words and meaning:
  `engram.stores.working.search`). `compile_graph(..., tools=...)` and `EngramMiddleware` add
  them on their own.

A result is looked up in the run's own thread only: in its state (results kept in the thread)
or under `("tool_results", user, thread)` for the run's user and thread. An id from another
thread or another user is not found there, and the tools say so.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any

from langchain.tools import ToolRuntime
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command
from pydantic import Field

from engram.graph.loop import run_sync
from engram.graph.run_context import context_for_run
from engram.graph.tools import engram_tool
from engram.nodes.context import Context
from engram.nodes.offload import Offloader
from engram.nodes.prompts import READ_TOOL_RESULT_DESCRIPTION, SEARCH_TOOL_RESULT_DESCRIPTION
from engram.nodes.tool_calls import READ_TOOL_RESULT, SEARCH_TOOL_RESULT
from engram.stores.namespaces import tool_result_namespace
from engram.stores.working import aread_range, aread_text, asearch_chunks
from engram.stores.working.chunks import split

READ_DEFAULT_CHARS = 3000
"""Characters `read_tool_result` returns when the model does not say."""
READ_MAX_CHARS = 8000
"""The most it returns in one call."""
SEARCH_MAX_HITS = 5
"""The most passages `search_tool_result` returns."""

NOT_FOUND_ANSWER = (
    "No tool result with the id {memory_id!r} was kept in this conversation: use the memoryId "
    "of an _OFFLOADED_ result shown above."
)
PAST_END_ANSWER = "Offset {offset:,} is past the end: the result has {stored:,} characters."

ToolHandler = Callable[[ToolCallRequest], ToolMessage | Command]
AsyncToolHandler = Callable[[ToolCallRequest], Awaitable[ToolMessage | Command]]
ToolCallWrapper = Callable[[ToolCallRequest, ToolHandler], ToolMessage | Command]
AsyncToolCallWrapper = Callable[
    [ToolCallRequest, AsyncToolHandler], Awaitable[ToolMessage | Command]
]


def offload_wrappers(
    offloader: Offloader, defaults: Context | None = None
) -> tuple[ToolCallWrapper, AsyncToolCallWrapper]:
    """The (sync, async) tool-call wrappers that offload long results (module docstring).

    Args:
        offloader: Decides and does the offloading.
        defaults: Settings for runs whose context is not an engram `Context`.
    """

    async def offloaded(result: Any, request: ToolCallRequest) -> Any:
        runtime = request.runtime
        ctx = context_for_run(runtime.context, defaults, runtime.config)
        return await offloader.aprocess(
            result, ctx, store=runtime.store, thread_id=_thread_id(runtime)
        )

    def wrap(request: ToolCallRequest, handler: ToolHandler) -> ToolMessage | Command:
        return run_sync(offloaded(handler(request), request))

    async def awrap(request: ToolCallRequest, handler: AsyncToolHandler) -> ToolMessage | Command:
        return await offloaded(await handler(request), request)

    return wrap, awrap


def offload_tools(*, defaults: Context | None = None) -> list[BaseTool]:
    """`read_tool_result` and `search_tool_result`.

    Args:
        defaults: Settings for runs whose context is not an engram `Context`.

    Example:
        >>> [t.name for t in offload_tools()]
        ['read_tool_result', 'search_tool_result']
    """
    return [
        create_read_tool_result_tool(defaults=defaults),
        create_search_tool_result_tool(defaults=defaults),
    ]


def with_offload_tools(tools: Sequence[BaseTool], defaults: Context | None = None) -> list[BaseTool]:
    """`tools` and, unless they are there already, the two that read offloaded results back."""
    names = {t.name for t in tools}
    return [*tools, *(t for t in offload_tools(defaults=defaults) if t.name not in names)]


def create_read_tool_result_tool(
    *, instructions: str = READ_TOOL_RESULT_DESCRIPTION, defaults: Context | None = None
) -> BaseTool:
    """A tool that returns characters `offset` to `offset + length` of an offloaded result of
    the run's thread, with where to continue; its artifact is `{"memory_id", "offset", "end",
    "stored_length", "total_length"}`, or None when nothing was read.

    Args:
        instructions: The description the model reads.
        defaults: Settings for runs whose context is not an engram `Context`.
    """

    async def read_tool_result(
        memory_id: Annotated[str, Field(min_length=1, description="The memoryId of the result.")],
        offset: Annotated[int, Field(ge=0, description="Character to start at; 0: the beginning.")] = 0,
        length: Annotated[
            int, Field(ge=1, le=READ_MAX_CHARS, description="How many characters to read.")
        ] = READ_DEFAULT_CHARS,
        *,
        runtime: ToolRuntime[Any, Any],
    ) -> tuple[str, dict[str, Any] | None]:
        memory_id = memory_id.strip()
        found = await _read(runtime, defaults, memory_id, offset, length)
        if found is None:
            return NOT_FOUND_ANSWER.format(memory_id=memory_id), None
        total, stored, text = found
        if offset >= stored:
            return PAST_END_ANSWER.format(offset=offset, stored=stored), None
        end = offset + len(text)
        kept = f"; the tool returned {total:,}, the rest was not kept" if total > stored else ""
        head = f"[{memory_id}: characters {offset:,} to {end:,} of {stored:,}{kept}]"
        tail = f"[continue with offset={end}]" if end < stored else "[end of the result]"
        artifact = {"memory_id": memory_id, "offset": offset, "end": end,
                    "stored_length": stored, "total_length": total}
        return f"{head}\n{text}\n{tail}", artifact

    return engram_tool(read_tool_result, READ_TOOL_RESULT, instructions)


def create_search_tool_result_tool(
    *, instructions: str = SEARCH_TOOL_RESULT_DESCRIPTION, defaults: Context | None = None
) -> BaseTool:
    """A tool that finds the passages (chunks) of an offloaded result of the run's thread that
    best match a query, by BM25 and by the store's embeddings, fused
    (`engram.stores.working.search`). Its content is a JSON list of `{"offset", "text",
    "relevance"}`, best first; its artifact the same list.

    Args:
        instructions: The description the model reads.
        defaults: Settings for runs whose context is not an engram `Context`.
    """

    async def search_tool_result(
        memory_id: Annotated[str, Field(min_length=1, description="The memoryId of the result.")],
        query: Annotated[str, Field(min_length=1, description="What to look for, in a few words.")],
        limit: Annotated[
            int, Field(ge=1, le=SEARCH_MAX_HITS, description="How many passages at most.")
        ] = 3,
        *,
        runtime: ToolRuntime[Any, Any],
    ) -> tuple[str, list[dict[str, Any]]]:
        memory_id = memory_id.strip()
        chunks = await _chunks(runtime, defaults, memory_id)
        if chunks is None:
            return NOT_FOUND_ANSWER.format(memory_id=memory_id), []
        embeddings = getattr(runtime.store, "embeddings", None)
        hits = await asearch_chunks(chunks, query, key=memory_id, embeddings=embeddings, limit=limit)
        rows = [
            {"offset": hit.offset, "text": hit.text, "relevance": round(hit.relevance, 3)}
            for hit in hits
        ]
        return json.dumps(rows, ensure_ascii=False), rows

    return engram_tool(search_tool_result, SEARCH_TOOL_RESULT, instructions)


async def _read(
    runtime: ToolRuntime[Any, Any], defaults: Context | None, memory_id: str, offset: int,
    length: int,
) -> tuple[int, int, str] | None:
    """(characters the tool returned, characters kept, the part asked for), or None."""
    record = _records(runtime).get(memory_id)
    if record is not None and "content" in record:
        text = record["content"]
        return record["total_length"], len(text), text[offset : offset + length]
    namespace = _namespace(runtime, defaults)
    if namespace is None:
        return None
    found = await aread_range(runtime.store, namespace, memory_id, offset, length)
    if found is None:
        return None
    head, text = found
    return head.total_length, head.stored_length, text


async def _chunks(
    runtime: ToolRuntime[Any, Any], defaults: Context | None, memory_id: str
) -> list[str] | None:
    record = _records(runtime).get(memory_id)
    if record is not None and "content" in record:
        return split(record["content"])
    namespace = _namespace(runtime, defaults)
    if namespace is None:
        return None
    found = await aread_text(runtime.store, namespace, memory_id)
    return None if found is None else found[1]


def _records(runtime: ToolRuntime[Any, Any]) -> dict[str, Any]:
    """The results this thread's state records (`EngramState.offloaded`)."""
    state = runtime.state
    records = state.get("offloaded") if isinstance(state, dict) else None
    return records if isinstance(records, dict) else {}


def _namespace(runtime: ToolRuntime[Any, Any], defaults: Context | None) -> tuple[str, ...] | None:
    """The run's user's results of the run's thread, in the store; None without either."""
    thread_id = _thread_id(runtime)
    if runtime.store is None or not thread_id:
        return None
    ctx = context_for_run(runtime.context, defaults, runtime.config)
    return tool_result_namespace(ctx.user_id, thread_id)


def _thread_id(runtime: ToolRuntime[Any, Any]) -> str | None:
    thread_id = ((runtime.config or {}).get("configurable") or {}).get("thread_id")
    return str(thread_id) if thread_id else None
