"""Wiring of the memory graph.

```
            ┌──────────────── end_session ────────────────┐
START ──▶ start ──▶ respond ──▶ (compaction edge) ──▶ compact ──▶ consolidate ──▶ END
                      ▲   │                └──────────────────────▶ consolidate
                      └─tools (only when tools are given)
```

Nodes are `async def`. `ainvoke` / `astream` run them on the caller's loop; LangGraph refuses
async-only nodes under sync `invoke`, so each is registered with a thin sync twin that runs the
same coroutine in the thread LangGraph gives it (`engram.graph.loop`), and `respond` with a sync
form that calls the answering model's sync API: one copy of the logic, and a model's async
client only ever on the caller's own loop.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from functools import cache
from typing import Any, Self

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langchain_core.tools import BaseTool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.config import get_config
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from langgraph.runtime import Runtime, get_runtime
from langgraph.store.base import BaseStore

from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.graph.loop import run_sync
from engram.graph.models import context_window_for, model_name_of
from engram.graph.offload import offload_wrappers, with_offload_tools
from engram.graph.run_context import context_for_run
from engram.nodes.compact import make_compact, make_route_after_respond
from engram.nodes.consolidate import make_consolidate
from engram.nodes.context import Context
from engram.nodes.offload import Offloader
from engram.nodes.owner import check_thread_owner
from engram.nodes.respond import make_respond
from engram.nodes.start import make_start
from engram.nodes.state import EngramInput, EngramState
from engram.nodes.work.background import MemoryWork, wait_for_memory_work
from engram.stores.paths import default_checkpoint_path, postgres_url_from_env

logger = logging.getLogger(__name__)

Node = Callable[[EngramState, Runtime[Context]], Awaitable[dict[str, Any]]]
SyncNode = Callable[[EngramState, Runtime[Context]], dict[str, Any]]


def build_graph(
    model: BaseChatModel | None = None,
    *,
    memory_model: BaseChatModel | None = None,
    tools: Sequence[BaseTool] | None = None,
    offload: bool = True,
) -> StateGraph[EngramState, Context]:
    """The uncompiled memory graph; compile it with your own store and checkpointer.

    Args:
        model: The chat model that answers the user (None builds the topology only: `respond`
            then raises when it runs).
        memory_model: Writes summaries and extracts memories; None uses the built-in offline
            summarizer and extractor. With one, compaction and consolidation run after the
            reply by default (`Context.memory_work`, `engram.nodes.work.background`).
        tools: Tools the answering model may call (adds the `tools` node and its loop). A
            result longer than `Context.working_memory.offload_threshold_tokens` is kept aside
            and the model sees a pointer (`engram.nodes.offload`); the tools that read it back
            (`read_tool_result`, `search_tool_result`) are added to `tools`, so every call of
            the model carries their schemas, whatever the run's threshold.
        offload: False: no tool result is offloaded and the two reading tools are not added
            (`Context.working_memory.offload_threshold_tokens=None` turns offloading off for a
            run, but the tools are bound when the graph is built).

    Example:
        >>> graph = build_graph().compile()
        >>> sorted(graph.nodes)
        ['__start__', 'compact', 'consolidate', 'respond', 'start']
    """
    if memory_model is None:
        _log_offline_mode()
    name = model_name_of(model)
    work = MemoryWork(memory_model=memory_model is not None)
    builder = StateGraph(EngramState, input_schema=EngramInput, context_schema=Context)
    start = make_start(model_name=name, default_window=context_window_for(model), work=work)
    builder.add_node("start", _bridge("start", start))
    if tools and offload:
        tools = with_offload_tools(tools)
    respond, respond_sync = make_respond(model, tools)
    builder.add_node("respond", _bridge("respond", respond, respond_sync))
    compact = make_compact(memory_model, model_name=name, work=work)
    builder.add_node("compact", _bridge("compact", compact))
    builder.add_node("consolidate", _bridge("consolidate", make_consolidate(memory_model, work=work)))
    builder.add_conditional_edges(START, _route_start, ["start", "consolidate"])
    builder.add_edge("start", "respond")
    after_respond = ["compact", "consolidate"]
    if tools:
        wrap, awrap = (
            offload_wrappers(Offloader(memory_model, model_name=name)) if offload else (None, None)
        )
        builder.add_node("tools", ToolNode(list(tools), wrap_tool_call=wrap, awrap_tool_call=awrap))
        builder.add_edge("tools", "respond")
        after_respond.insert(0, "tools")
    route = make_route_after_respond(model_name=name, has_tools=bool(tools))

    def route_after_respond(state: EngramState, runtime: Runtime[Context]) -> str:
        return route(state, _with_context(runtime))

    builder.add_conditional_edges("respond", route_after_respond, after_respond)
    builder.add_edge("compact", "consolidate")
    builder.add_edge("consolidate", END)
    return builder


def compile_graph(
    model: BaseChatModel | None,
    *,
    memory_model: BaseChatModel | None = None,
    store: BaseStore | None = None,
    checkpointer: BaseCheckpointSaver | None = None,
    tools: Sequence[BaseTool] | None = None,
    offload: bool = True,
    postgres_url: str | None = None,
) -> EngramGraph:
    """The memory graph, compiled with a store and a checkpointer.

    The graph closes the store and checkpointer it opened itself (the defaults, not those
    passed in) with `graph.close()`, or at the end of `with compile_graph(...) as graph:`.

    Args:
        model: The chat model that answers the user.
        memory_model: Writes summaries and extracts memories; None: offline built-ins.
        store: Long-term memories and episodes; None: a `ChromaStore` in the embedded data folder
            (`$ENGRAM_DATA_DIR/chroma`, default `./.engram/chroma`) with the local
            all-MiniLM-L6-v2 embeddings.
        checkpointer: Short-term memory; None: PostgreSQL at `postgres_url` (or
            `$ENGRAM_POSTGRES_URL`) when given, else a SQLite file in the same folder
            (`checkpoints.sqlite`); either is usable from both `invoke` and `ainvoke`.
        tools: Tools the answering model may call.
        offload: False: never offload tool results, and give the model no tools to read them
            (see `build_graph`).
        postgres_url: A PostgreSQL database for the default checkpointer
            (`postgresql://user:password@host:port/database`), shared by several app machines.
    """
    opened: list[Any] = []
    if checkpointer is None:
        checkpointer = default_checkpointer(postgres_url)
        opened.append(checkpointer)
    try:
        if store is None:
            store = default_store()
            opened.append(store)
        built = build_graph(model, memory_model=memory_model, tools=tools, offload=offload)
        compiled = built.compile(store=store, checkpointer=checkpointer)
    except BaseException:
        _close_all(opened)
        raise
    attrs = {k: v for k, v in compiled.__dict__.items() if k != "__orig_class__"}
    return EngramGraph(**attrs, opened=tuple(opened))  # as `compiled.copy()` builds a copy


CLOSE_WAIT_SECONDS = 60.0
"""How long `EngramGraph.close` waits for this process's background memory work."""


class EngramGraph(CompiledStateGraph[EngramState, Context, EngramState, EngramState]):
    """The compiled memory graph `compile_graph` returns: a LangGraph `CompiledStateGraph` that
    also closes the store and checkpointer `compile_graph` opened for it.

    Example:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> from langgraph.store.memory import InMemoryStore
        >>> with compile_graph(None, store=InMemoryStore(), checkpointer=InMemorySaver()) as g:
        ...     sorted(g.nodes)
        ['__start__', 'compact', 'consolidate', 'respond', 'start']
    """

    def __init__(self, *, opened: tuple[Any, ...] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.opened = opened
        """What `compile_graph` opened for this graph (its default store and checkpointer);
        copies of the graph (`with_config`) share them."""

    def close(self) -> None:
        """Close what `compile_graph` opened for this graph (the embedded store's Chroma client
        and BM25 index, the checkpointer's SQLite connection or PostgreSQL pool), once this
        process's background memory work is done (at most `CLOSE_WAIT_SECONDS`; what is left
        stays journaled for the thread's next turn); a store or checkpointer passed in is its
        owner's to close. The graph cannot run afterwards; closing again does nothing."""
        if self.opened:
            if not wait_for_memory_work(timeout=CLOSE_WAIT_SECONDS):
                logger.warning(
                    "closing the graph with background memory work still running after %.0f s: "
                    "the thread's next turn in any process resumes it",
                    CLOSE_WAIT_SECONDS,
                )
            _close_all(self.opened)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _close_all(resources: Sequence[Any]) -> None:
    """Close each of `resources` (each one's `close()` is idempotent); the first error is raised
    once all were tried."""
    errors: list[BaseException] = []
    for resource in resources:
        try:
            resource.close()
        except Exception as exc:  # noqa: BLE001 (raised below, once the others closed)
            errors.append(exc)
    if errors:
        raise errors[0]


def default_store() -> BaseStore:
    """The embedded `ChromaStore` with local embeddings on `content` (see `make_store`)."""
    from engram.stores.chroma.store import make_store

    return make_store()


def default_checkpointer(postgres_url: str | None = None) -> BaseCheckpointSaver:
    """PostgreSQL at `postgres_url` or `$ENGRAM_POSTGRES_URL` when either is set, else the
    embedded SQLite checkpointer; both serve sync and async calls."""
    if url := postgres_url or postgres_url_from_env():
        from engram.graph.postgres import ThreadedPostgresSaver  # the postgres extra

        return ThreadedPostgresSaver.from_url(url)
    return ThreadedSqliteSaver.from_path(default_checkpoint_path())


def _route_start(state: EngramState, runtime: Runtime[Context]) -> str:
    """`consolidate` for a session end, else `start`; a run for another user than the thread's
    owner is refused here, before LangGraph adds its input to the thread's messages."""
    _owners_run(state, runtime)
    return "consolidate" if state.get("end_session") else "start"


def _owners_run(state: EngramState, runtime: Runtime[Context]) -> Runtime[Context]:
    """The runtime with the run's settings (`_with_context`), once the run is known to be the
    thread owner's: every node checks, so a run that enters the graph past START (a
    `Command(goto=...)`) is refused as well (`engram.nodes.owner`)."""
    runtime = _with_context(runtime)
    thread_id = (get_config().get("configurable") or {}).get("thread_id")
    check_thread_owner(state, runtime.context.user_id, thread_id)
    return runtime


def _bridge(name: str, node: Node, sync: SyncNode | None = None) -> RunnableLambda:
    """The node as a runnable with an async body and a sync twin: `sync` when the node has a
    sync form, else the same coroutine run in the calling thread."""

    async def arun(state: EngramState, config: RunnableConfig) -> dict[str, Any]:
        return await node(state, _owners_run(state, get_runtime()))

    def run(state: EngramState, config: RunnableConfig) -> dict[str, Any]:
        runtime = _owners_run(state, get_runtime())
        return sync(state, runtime) if sync is not None else run_sync(node(state, runtime))

    return RunnableLambda(run, afunc=arun, name=name)


def _with_context(runtime: Runtime[Context]) -> Runtime[Context]:
    """The runtime with the run's settings: the default `Context()` for a run invoked without
    `context=`, and the authenticated user's id when the run has one
    (`engram.graph.run_context.context_for_run`: a context naming someone else is refused)."""
    ctx = context_for_run(runtime.context, config=get_config())
    return runtime if ctx is runtime.context else runtime.override(context=ctx)


@cache
def _log_offline_mode() -> None:
    logger.info(
        "no memory model configured: summaries and memory extraction use the offline built-ins "
        "(extractive summarizer, rule-based extractor)"
    )
