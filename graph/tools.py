"""Memory tools an agent can call: search the user's memories, remember a statement now, forget
a memory (soft, restorable); on request also restore a forgotten one, or delete one for good.

As LangMem's `create_search_memory_tool` / `create_manage_memory_tool`, each tool is made by a
factory whose `instructions` replace the description the model reads, and works on the store of
the graph or agent it runs in. The user is the run's (`runtime.context`, read as
`engram.graph.run_context.context_for_run` reads it), never an argument the model fills in, so a
model cannot reach another user's memories. Unlike LangMem's, writes go through engram's write
policy (secrets redacted, duplicates confirmed, a changed attribute superseded), forgetting is
restorable, deleting purges the memory's text from every file of the store (as
`engram memory delete` does), and each change is announced on the custom stream
(`memory.created`, `memory.updated`, `memory.superseded`, `memory.forgotten`,
`memory.restored`, `memory.deleted`; `engram.nodes.events`). An incognito run neither searches
nor remembers.

Use them with `create_agent(model, tools=memory_tools(), middleware=[EngramMiddleware()], ...)`
or `compile_graph(model, tools=memory_tools())`.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Annotated, Any

from langchain.tools import ToolRuntime
from langchain_core.messages import HumanMessage
from langchain_core.tools import BaseTool, StructuredTool
from pydantic import Field

from engram.graph.loop import run_sync
from engram.graph.run_context import context_for_run
from engram.nodes.context import Context
from engram.nodes.events import (
    MEMORY_FORGOTTEN,
    MEMORY_RESTORED,
    announce_writes,
    deleted_event,
    memory_event,
)
from engram.nodes.extract.statement import statement_candidate
from engram.nodes.prompts import (
    CONFIRM_MEMORY_TOOL_DESCRIPTION,
    DELETE_MEMORY_TOOL_DESCRIPTION,
    FORGET_MEMORY_TOOL_DESCRIPTION,
    REMEMBER_TOOL_DESCRIPTION,
    RESTORE_MEMORY_TOOL_DESCRIPTION,
    SEARCH_MEMORY_TOOL_DESCRIPTION,
)
from engram.nodes.tool_calls import (
    CONFIRM_MEMORY,
    DELETE_MEMORY,
    FORGET_MEMORY,
    REMEMBER,
    RESTORE_MEMORY,
    SEARCH_MEMORY,
)
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.pending import PendingMemories
from engram.stores.memory.types import Category

INCOGNITO_ANSWER = "Memory is off in this incognito chat: nothing was searched or saved."
NO_STORE_ANSWER = "No memory store is configured for this agent: nothing was searched or saved."


def memory_tools(
    *,
    defaults: Context | None = None,
    restore: bool = False,
    delete: bool = False,
    confirm: bool = False,
) -> list[BaseTool]:
    """The memory tools: `search_memory`, `remember` and `forget_memory` (and `restore_memory`,
    `delete_memory`, `confirm_memory`).

    Args:
        defaults: Settings for runs whose context is not an engram `Context`.
        restore: Also the tool that restores a forgotten memory.
        delete: Also the tool that deletes a memory for good (not restorable).
        confirm: Also the tool that saves or discards memories waiting for the user's approval
            (`Context.confirm_memories`).

    Example:
        >>> [t.name for t in memory_tools()]
        ['search_memory', 'remember', 'forget_memory']
    """
    tools = [
        create_search_memory_tool(defaults=defaults),
        create_remember_tool(defaults=defaults),
        create_forget_memory_tool(defaults=defaults),
    ]
    if restore:
        tools.append(create_restore_memory_tool(defaults=defaults))
    if delete:
        tools.append(create_delete_memory_tool(defaults=defaults))
    if confirm:
        tools.append(create_confirm_memory_tool(defaults=defaults))
    return tools


def create_search_memory_tool(
    *, instructions: str = SEARCH_MEMORY_TOOL_DESCRIPTION, defaults: Context | None = None
) -> BaseTool:
    """A tool that searches the run's user's current memories, ranked by relevance, nothing
    below the floor.

    Its content is a JSON list of `{"id", "content", "category", "importance", "score"}`; its
    artifact the same list. A search does not count as a recall (`access_count`).

    Args:
        instructions: The description the model reads.
        defaults: Settings for runs whose context is not an engram `Context`.
    """

    async def search_memory(
        query: Annotated[str, Field(description="What to look for, in a few words.")],
        limit: Annotated[int, Field(ge=1, le=20, description="How many at most.")] = 5,
        *,
        runtime: ToolRuntime[Any, Any],
    ) -> tuple[str, list[dict[str, Any]]]:
        ctx, ltm = _scope(runtime, defaults)
        if ltm is None or ctx.incognito:
            return (NO_STORE_ANSWER if ltm is None else INCOGNITO_ANSWER), []
        found = await ltm.asearch(ctx.user_id, query, k=limit, touch=False)
        rows = [
            {
                "id": s.memory.id,
                "content": s.memory.content,
                "category": s.memory.category,
                "importance": round(s.memory.importance, 2),
                "score": round(s.score, 3),
            }
            for s in found
        ]
        return json.dumps(rows, ensure_ascii=False), rows

    return engram_tool(search_memory, SEARCH_MEMORY, instructions)


def create_remember_tool(
    *, instructions: str = REMEMBER_TOOL_DESCRIPTION, defaults: Context | None = None
) -> BaseTool:
    """A tool that saves a statement to the run's user's memories now, through the write policy
    ("remember this"); its artifact is `{"action", "memory_id", "superseded"}`.

    Args:
        instructions: The description the model reads.
        defaults: Settings for runs whose context is not an engram `Context`.
    """

    async def remember(
        content: Annotated[str, Field(min_length=1, description="The statement to remember.")],
        category: Annotated[
            Category | None,
            Field(description="preference, fact, project, lesson, skill or goal; omit to guess."),
        ] = None,
        *,
        runtime: ToolRuntime[Any, Any],
    ) -> tuple[str, dict[str, Any]]:
        ctx, ltm = _scope(runtime, defaults)
        if ltm is None or ctx.incognito:
            return (NO_STORE_ANSWER if ltm is None else INCOGNITO_ANSWER), {}
        candidate = statement_candidate(content, category=category)
        [result] = await ltm.aupsert(
            ctx.user_id,
            [candidate],
            thread_id=(runtime.config.get("configurable") or {}).get("thread_id"),
            message_ids=_last_user_message_id(runtime),
        )
        announce_writes(runtime.stream_writer, ctx.user_id, [result])
        if result.memory is None:
            return f"Not saved: {result.reason}", {"action": result.action, "memory_id": None}
        memory = result.memory
        done = {"created": "Saved", "superseded": "Saved (replaces an older value)"}.get(
            result.action, "Already remembered"
        )
        artifact = {
            "action": result.action,
            "memory_id": memory.id,
            "superseded": [m.id for m in result.superseded],
            "kept": [m.id for m in result.kept],
        }
        kept = "".join(f"; still current: {m.content} (id {m.id})" for m in result.kept)
        return f"{done} as {memory.category} (id {memory.id}): {memory.content}{kept}", artifact

    return engram_tool(remember, REMEMBER, instructions)


def create_forget_memory_tool(
    *, instructions: str = FORGET_MEMORY_TOOL_DESCRIPTION, defaults: Context | None = None
) -> BaseTool:
    """A tool that forgets one of the run's user's memories (soft: restorable with
    `engram memory restore ID`); its artifact is the forgotten memory's id, or None.

    Args:
        instructions: The description the model reads.
        defaults: Settings for runs whose context is not an engram `Context`.
    """

    async def forget_memory(
        memory_id: Annotated[str, Field(min_length=1, description="The memory's id.")],
        *,
        runtime: ToolRuntime[Any, Any],
    ) -> tuple[str, str | None]:
        ctx, ltm = _scope(runtime, defaults)
        if ltm is None:
            return NO_STORE_ANSWER, None
        memory = await ltm.aforget(ctx.user_id, memory_id.strip())
        if memory is None:
            return f"No memory has the id {memory_id!r}: search_memory gives the ids.", None
        runtime.stream_writer(memory_event(MEMORY_FORGOTTEN, ctx.user_id, memory))
        return f"Forgot (restorable): {memory.content}", memory.id

    return engram_tool(forget_memory, FORGET_MEMORY, instructions)


def create_restore_memory_tool(
    *, instructions: str = RESTORE_MEMORY_TOOL_DESCRIPTION, defaults: Context | None = None
) -> BaseTool:
    """A tool that restores a forgotten memory of the run's user (`memory.restored`); not in
    `memory_tools()` unless asked for. Its artifact is the restored memory's id, or None.

    Args:
        instructions: The description the model reads.
        defaults: Settings for runs whose context is not an engram `Context`.
    """

    async def restore_memory(
        memory_id: Annotated[str, Field(min_length=1, description="The memory's id.")],
        *,
        runtime: ToolRuntime[Any, Any],
    ) -> tuple[str, str | None]:
        ctx, ltm = _scope(runtime, defaults)
        if ltm is None:
            return NO_STORE_ANSWER, None
        result = await ltm.arestore(ctx.user_id, memory_id.strip())
        if result is None:
            return f"No memory has the id {memory_id!r}.", None
        if not result.changed:
            return f"Nothing to restore: {result.reason}", None
        runtime.stream_writer(memory_event(MEMORY_RESTORED, ctx.user_id, result.memory))
        return f"Restored: {result.memory.content}", result.memory.id

    return engram_tool(restore_memory, RESTORE_MEMORY, instructions)


def create_delete_memory_tool(
    *, instructions: str = DELETE_MEMORY_TOOL_DESCRIPTION, defaults: Context | None = None
) -> BaseTool:
    """A tool that deletes one of the run's user's memories for good, through the deletion
    `engram memory delete` uses: the memory, its duplicate records and its maintenance journal
    entry go, and its text is purged from the store's files (`LongTermMemory.adelete`). Emits
    `memory.deleted`; not in `memory_tools()` unless asked for. Its artifact is the deleted
    memory's id, or None.

    Args:
        instructions: The description the model reads.
        defaults: Settings for runs whose context is not an engram `Context`.
    """

    async def delete_memory(
        memory_id: Annotated[str, Field(min_length=1, description="The memory's id.")],
        *,
        runtime: ToolRuntime[Any, Any],
    ) -> tuple[str, str | None]:
        ctx, ltm = _scope(runtime, defaults)
        if ltm is None:
            return NO_STORE_ANSWER, None
        memory_id = memory_id.strip()
        if not await ltm.adelete(ctx.user_id, memory_id):
            return f"No memory has the id {memory_id!r}: search_memory gives the ids.", None
        runtime.stream_writer(deleted_event(ctx.user_id, memory_id))
        return f"Deleted for good: memory {memory_id}.", memory_id

    return engram_tool(delete_memory, DELETE_MEMORY, instructions)


def create_confirm_memory_tool(
    *, instructions: str = CONFIRM_MEMORY_TOOL_DESCRIPTION, defaults: Context | None = None
) -> BaseTool:
    """A tool that lists the memories waiting for the run's user's approval
    (`Context.confirm_memories`), or saves or discards one of them as the user answered
    (`engram.stores.memory.pending`): a saved one goes through the write policy and is announced
    like any write, a discarded one is deleted and purged (`memory.deleted`). Its artifact is the
    list of waiting memories, or what was done to one (`{"action", "memory_id"}`); not in
    `memory_tools()` unless asked for.

    Args:
        instructions: The description the model reads.
        defaults: Settings for runs whose context is not an engram `Context`.
    """

    async def confirm_memory(
        memory_id: Annotated[
            str | None, Field(description="The waiting memory's id; omit to list them.")
        ] = None,
        save: Annotated[
            bool | None,
            Field(description="With memory_id: true saves it (the user agreed), false discards it."),
        ] = None,
        *,
        runtime: ToolRuntime[Any, Any],
    ) -> tuple[str, Any]:
        ctx, ltm = _scope(runtime, defaults)
        if ltm is None:
            return NO_STORE_ANSWER, None
        pending = PendingMemories(ltm.store, ltm)
        if not memory_id or not memory_id.strip():
            rows = [
                {"id": p.id, "content": p.content, "category": p.category}
                for p in await pending.alist(ctx.user_id)
            ]
            if not rows:
                return "No memory is waiting for the user's approval.", []
            return json.dumps(rows, ensure_ascii=False), rows
        memory_id = memory_id.strip()
        if save is None:
            return "Say what the user answered: save=true to save it, save=false to discard it.", None
        if not save:
            if not await pending.areject(ctx.user_id, memory_id):
                return f"No memory waits with the id {memory_id!r}: call me without one.", None
            runtime.stream_writer(deleted_event(ctx.user_id, memory_id))
            return f"Discarded: memory {memory_id} was not saved.", {
                "action": "rejected", "memory_id": memory_id,
            }
        result = await pending.aapprove(ctx.user_id, memory_id)
        if result is None:
            return f"No memory waits with the id {memory_id!r}: call me without one.", None
        announce_writes(runtime.stream_writer, ctx.user_id, [result])
        if result.memory is None:
            return f"Not saved: {result.reason}", {"action": result.action, "memory_id": None}
        return f"Saved as {result.memory.category} (id {result.memory.id}): " + (
            result.memory.content
        ), {"action": result.action, "memory_id": result.memory.id}

    return engram_tool(confirm_memory, CONFIRM_MEMORY, instructions)


def engram_tool(coroutine: Callable[..., Awaitable[Any]], name: str, description: str) -> BaseTool:
    """A tool with the async body and a sync twin that runs the same coroutine in the calling
    thread (`engram.graph.loop.run_sync`)."""

    @wraps(coroutine)
    def run(*args: Any, **kwargs: Any) -> Any:
        return run_sync(coroutine(*args, **kwargs))

    return StructuredTool.from_function(
        func=run,
        coroutine=coroutine,
        name=name,
        description=description,
        response_format="content_and_artifact",
        infer_schema=True,
    )


def _scope(
    runtime: ToolRuntime[Any, Any], defaults: Context | None
) -> tuple[Context, LongTermMemory | None]:
    ctx = context_for_run(runtime.context, defaults, runtime.config)
    store = runtime.store
    return ctx, (LongTermMemory(store, min_importance=0.0) if store is not None else None)


def _last_user_message_id(runtime: ToolRuntime[Any, Any]) -> list[str]:
    messages = (runtime.state or {}).get("messages", []) if isinstance(runtime.state, dict) else []
    ids = [m.id for m in messages if isinstance(m, HumanMessage) and m.id]
    return ids[-1:]
