"""`EngramMiddleware`: engram's memory for any LangChain `create_agent` agent.

The hooks run the graph's own node logic (`engram.nodes`), so an agent and the graph remember
alike:

- `before_agent`: a run with `{"end_session": True}` skips the model and goes straight to
  `after_agent` (the graph routes such a run to `consolidate`); so does a run for another user
  than the thread's owner, or one naming another user than the signed-in one, with its input
  removed from the thread, and `after_agent` refuses it (`ThreadOwnerError`,
  `UserMismatchError`) before anything is read or written (`engram.nodes.owner`);
- `before_model`: the compaction check and `compact` (incremental summary, an AI message with
  tool calls kept with its results, evicted messages archived as episodes, `context.compacted`);
- `wrap_model_call` / `awrap_model_call`: on a turn's first model call, `start`'s recall and
  budgeted context (memory block, running summary, the history that fits); the model gets
  what `respond` would send, and the record (`built_context`) goes into the agent's state.
  The tool loop's later calls reuse that record, as `respond` does, unless a compaction
  removed messages in between (then the context is built again, without counting a turn);
- `wrap_tool_call` / `awrap_tool_call` (unless `offload=False`): a tool result longer than
  `Context.working_memory.offload_threshold_tokens` is kept aside and the model sees a pointer
  (`engram.nodes.offload`); the model is then also given the tools that read it back
  (`read_tool_result`, `search_tool_result`: `engram.graph.offload`) when the agent has tools
  of its own, as the graph does (or always, with `offload=True`);
- `after_agent`: `consolidate` (extraction every few turns, on eviction and at session end;
  recall statistics; the thread registry), with its `memory.*` events. With a memory model
  (or `Context.memory_work="background"`) the extraction is a journaled background job
  (`engram.nodes.work.background`) and the agent's run returns without waiting; the next turn's
  first model call applies its result (record, events) before building the context.

Settings are engram's `Context`: the run's context when the agent's `context_schema` is
`Context`, else the middleware's defaults with the fields the app's context shares with it
(`user_id`, `incognito`, ...; `engram.graph.run_context`). The store and the checkpointer are the
agent's (`create_agent(store=..., checkpointer=...)`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ExtendedModelResponse,
    ModelRequest,
    ModelResponse,
    hook_config,
)
from langchain.agents.middleware.types import OmitFromInput, PrivateStateAttr
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    RemoveMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig
from langgraph.config import get_config
from langgraph.graph.message import add_messages
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command, Overwrite

from engram.graph.loop import run_sync
from engram.graph.models import context_window_for, model_name_of
from engram.graph.offload import AsyncToolHandler, ToolHandler, offload_tools, offload_wrappers
from engram.graph.run_context import UserMismatchError, context_for_run
from engram.nodes.compact import Compactor
from engram.nodes.consolidate import make_consolidate
from engram.nodes.context import Context
from engram.nodes.model.summarize import Summarizer
from engram.nodes.offload import Offloader
from engram.nodes.owner import ThreadOwnerError, check_thread_owner
from engram.nodes.start import begin_turn, current_input_start, model_input, prepare_context
from engram.nodes.state import EngramState, PendingProcedure
from engram.nodes.text.transcript import stamp_reply
from engram.nodes.work.background import MemoryWork, applied_state, merge_updates

ModelHandler = Callable[[ModelRequest], ModelResponse]
AsyncModelHandler = Callable[[ModelRequest], Awaitable[ModelResponse]]


class EngramAgentState(AgentState[Any], EngramState):  # type: ignore[misc]
    """A `create_agent` agent's state with engram's fields (`EngramState`)."""

    built_for_evictions: NotRequired[Annotated[int, PrivateStateAttr]]
    """`evicted_message_count` when `built_context` was made: a compaction since makes the next
    model call of the turn build the context again."""
    owner: NotRequired[Annotated[str, OmitFromInput]]
    """`EngramState.owner`, which no input sets."""
    registered_user: NotRequired[Annotated[str, OmitFromInput]]
    """`EngramState.registered_user`, which no input sets."""
    memory_jobs: NotRequired[Annotated[list[dict[str, Any]], OmitFromInput]]
    """`EngramState.memory_jobs`, which no input sets."""
    pending_procedures: NotRequired[Annotated[list[PendingProcedure], OmitFromInput]]
    """`EngramState.pending_procedures`, which no input sets."""
    owner_seen: NotRequired[Annotated[str, PrivateStateAttr]]
    """The id of the thread's newest message when a run of its owner last began or ended: what
    follows it when a refused run begins is that run's input."""


@dataclass(frozen=True)
class _Prepared:
    request: ModelRequest
    update: dict[str, Any]
    memory_ids: list[str]


class EngramMiddleware(AgentMiddleware[EngramAgentState, Any]):
    """Engram's memory for a `create_agent` agent: recall and the budgeted context around each
    model call, compaction before it, consolidation after the run.

    Args:
        memory_model: Writes summaries and extracts memories; None uses the offline built-ins.
        context: Default settings for runs whose context is not an engram `Context`.
        model_name: The answering model's name, for compaction's token counts (the context
            build counts with the request's own model).
        summarizer: Replaces the summarizer `memory_model` would give.
        offload: Keep tool results longer than `Context.working_memory.offload_threshold_tokens`
            out of the model's context, behind a pointer, and give the model `read_tool_result` and
            `search_tool_result` to read them back. None (the default): when the agent has
            tools of its own, as the graph does with `tools=`; a model call without other
            tools gets neither (no result to read, and a model that takes no tools works).
            True: the two tools on every call (the model must accept tools). False: never.

    Example:
        >>> from langchain.agents import create_agent
        >>> from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
        >>> from langgraph.store.memory import InMemoryStore
        >>> model = GenericFakeChatModel(messages=iter(["Hello Alice."]))
        >>> agent = create_agent(model, middleware=[EngramMiddleware()], store=InMemoryStore())
        >>> out = agent.invoke({"messages": [("user", "hi")]}, context=Context(user_id="alice"))
        >>> (out["messages"][-1].content, out["turn"])
        ('Hello Alice.', 1)
    """

    state_schema = EngramAgentState

    def __init__(
        self,
        *,
        memory_model: BaseChatModel | None = None,
        context: Context | None = None,
        model_name: str | None = None,
        summarizer: Summarizer | None = None,
        offload: bool | None = None,
    ) -> None:
        super().__init__()
        self.defaults = context if context is not None else Context()
        self.tools = offload_tools(defaults=self.defaults) if offload is not False else []
        self.model_name = model_name
        self._offload = (
            offload_wrappers(Offloader(memory_model, model_name=model_name), self.defaults)
            if offload is not False
            else None
        )
        """The (sync, async) tool-call wrappers that offload, unless `offload=False`."""
        self._reading_tools_alone = offload is True
        """Whether a model call with no other tools still gets the two reading tools."""
        # compaction decides what the model sees: always before the model call (inline)
        self._work = MemoryWork(memory_model=memory_model is not None, kinds=("consolidate",))
        self._compactor = Compactor(
            memory_model, model_name=model_name, summarizer=summarizer, work=self._work
        )
        self._consolidate = make_consolidate(memory_model, work=self._work)

    # -- before_agent: a session end skips the model ------------------------------------------

    @hook_config(can_jump_to=["end"])
    def before_agent(self, state: EngramAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Send a `{"end_session": True}` run straight to `after_agent` (the flag is written
        again: it lasts one step). A run for another user than the thread's owner, or naming
        another user than the signed-in one, goes there too, its input removed from the
        thread: `after_agent` refuses it before anything is read or written."""
        if self._refusal(state, runtime) is not None:
            return {"jump_to": "end", "messages": _input_since(state, state.get("owner_seen"))}
        update: dict[str, Any] = _seen(state)
        if state.get("end_session"):
            update.update(jump_to="end", end_session=True)
        return update or None

    @hook_config(can_jump_to=["end"])
    async def abefore_agent(
        self, state: EngramAgentState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async `before_agent`."""
        return self.before_agent(state, runtime)

    # -- before_model: compaction -------------------------------------------------------------

    async def abefore_model(
        self, state: EngramAgentState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Compact when the thresholds say so (`engram.nodes.compact`)."""
        return await self._compact_if_due(state, self._runtime(runtime, state))

    def before_model(self, state: EngramAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Sync `abefore_model`."""
        return run_sync(self._compact_if_due(state, self._runtime(runtime, state)))

    # -- wrap_model_call: recall and the budgeted context -------------------------------------

    async def awrap_model_call(
        self, request: ModelRequest, handler: AsyncModelHandler
    ) -> ModelResponse | ExtendedModelResponse:
        """Call the model on the context engram builds; record the build in the state."""
        prepared = await self._prepare(request, self._runtime(request.runtime, request.state))
        return _with_update(await handler(prepared.request), prepared)

    def wrap_model_call(
        self, request: ModelRequest, handler: ModelHandler
    ) -> ModelResponse | ExtendedModelResponse:
        """Sync `awrap_model_call` (the model itself is called in the caller's thread)."""
        prepared = run_sync(self._prepare(request, self._runtime(request.runtime, request.state)))
        return _with_update(handler(prepared.request), prepared)

    # -- wrap_tool_call: offload ---------------------------------------------------------------

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: AsyncToolHandler
    ) -> ToolMessage | Command:
        """Run the tool; offload its result when it is too long (with `offload=True`)."""
        if self._offload is None:
            return await handler(request)
        _, awrap = self._offload
        return await awrap(request, handler)

    def wrap_tool_call(self, request: ToolCallRequest, handler: ToolHandler) -> ToolMessage | Command:
        """Sync `awrap_tool_call`."""
        if self._offload is None:
            return handler(request)
        wrap, _ = self._offload
        return wrap(request, handler)

    # -- after_agent: consolidation -----------------------------------------------------------

    async def aafter_agent(
        self, state: EngramAgentState, runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Extract long-term memories when due (`engram.nodes.consolidate`).

        Raises:
            ThreadOwnerError: The thread belongs to another user.
            UserMismatchError: The run names another user than the signed-in one.
        """
        update = await self._consolidate(state, self._runtime(runtime, state))
        return {**(update or {}), **_seen(state)}

    def after_agent(self, state: EngramAgentState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        """Sync `aafter_agent`."""
        return run_sync(self.aafter_agent(state, runtime))

    # -- helpers ------------------------------------------------------------------------------

    def _refusal(self, state: EngramAgentState, runtime: Runtime[Any]) -> ValueError | None:
        """Why this run may not go on (`engram.nodes.owner`, `engram.graph.run_context`), or
        None."""
        config = _run_config()
        try:
            ctx = context_for_run(runtime.context, self.defaults, config)
            thread_id = ((config or {}).get("configurable") or {}).get("thread_id")
            check_thread_owner(state, ctx.user_id, thread_id)
        except (ThreadOwnerError, UserMismatchError) as refusal:
            return refusal
        return None

    def _runtime(self, runtime: Runtime[Any], state: EngramAgentState) -> Runtime[Context]:
        """The runtime with engram's settings for this run as its context (from the run's
        config, a context variable of the caller's thread), once the run is known to be the
        thread owner's (`engram.nodes.owner`).

        Raises:
            ThreadOwnerError: The thread belongs to another user.
            UserMismatchError: The run names another user than the signed-in one.
        """
        if (refusal := self._refusal(state, runtime)) is not None:
            raise refusal
        return runtime.override(
            context=context_for_run(runtime.context, self.defaults, _run_config())
        )

    async def _compact_if_due(
        self, state: EngramAgentState, runtime: Runtime[Context]
    ) -> dict[str, Any] | None:
        if not self._compactor.due(state, runtime.context):
            return None
        return await self._compactor.compact(state, runtime)

    def _tools_for(self, request: ModelRequest) -> list[Any]:
        """The request's tools, without the two that read offloaded results when it has no
        other (unless `offload=True`): only another tool's result is ever offloaded."""
        if self._reading_tools_alone or not self.tools:
            return list(request.tools)
        reading = {tool.name for tool in self.tools}
        others = [t for t in request.tools if isinstance(t, dict) or t.name not in reading]
        return list(request.tools) if others else []

    async def _prepare(self, request: ModelRequest, runtime: Runtime[Context]) -> _Prepared:
        instructions = (
            request.system_message.text
            if request.system_message is not None
            else runtime.context.system_prompt
        )
        ctx = runtime.context.replace(system_prompt=instructions)
        state: dict[str, Any] = {**request.state, "messages": list(request.messages)}
        messages = state["messages"]
        fresh = not isinstance(messages[current_input_start(messages)], AIMessage)
        evictions = state.get("evicted_message_count", 0)
        update: dict[str, Any] = {}
        jobs = list(state.get("memory_jobs", ()))
        if fresh and not ctx.incognito:  # a background consolidation's result, if finished
            update = await self._work.collect(state, runtime)  # type: ignore[arg-type]
            state = applied_state(state, update)  # type: ignore[arg-type,assignment]
            messages = state["messages"]
        if fresh or "built_context" not in state or state.get("built_for_evictions") != evictions:
            built, failures = await prepare_context(
                state,
                ctx,
                runtime.store,
                model_name=model_name_of(request.model),
                window=ctx.context_window or context_window_for(request.model),
            )
            built_update = {"built_context": built, "built_for_evictions": evictions}
            if fresh:
                turn = begin_turn(state, ctx.user_id)
                built_update.update(turn, failures=Overwrite(failures))
            elif failures:
                built_update["failures"] = failures
            update = merge_updates(update, built_update)
            if "messages" in update:
                state["messages"] = add_messages(messages, update["messages"])
            state["built_context"] = built
        if journal_failures := await self._work.release(jobs, update, runtime):
            update = merge_updates(update, {"failures": journal_failures})
        system, *chosen = model_input(state, instructions)  # type: ignore[arg-type]
        return _Prepared(
            request.override(
                system_message=_as_system(system), messages=chosen, tools=self._tools_for(request)
            ),
            update,
            state["built_context"]["memory_ids"],
        )


def _seen(state: EngramAgentState) -> dict[str, Any]:
    """`owner_seen` for the thread's newest message."""
    messages = state.get("messages") or []
    newest = messages[-1].id if messages else None
    return {"owner_seen": newest} if newest and newest != state.get("owner_seen") else {}


def _input_since(state: EngramAgentState, seen: str | None) -> list[RemoveMessage]:
    """The removal of a refused run's input: the messages after `seen` (for a thread from
    before engram kept it, those after its last reply)."""
    messages = list(state.get("messages") or [])
    ids = [m.id for m in messages]
    start = ids.index(seen) + 1 if seen in ids else current_input_start(messages)
    return [RemoveMessage(id=m.id) for m in messages[start:] if m.id]


def _run_config() -> RunnableConfig | None:
    """The run's config (a context variable of the caller's thread); None outside a run."""
    try:
        return get_config()
    except RuntimeError:  # outside a runnable context
        return None


def _as_system(message: BaseMessage) -> SystemMessage:
    return message if isinstance(message, SystemMessage) else SystemMessage(message.content)


def _with_update(
    response: ModelResponse, prepared: _Prepared
) -> ModelResponse | ExtendedModelResponse:
    """The reply stamped with the time and its citations (as `respond` does), and the build's
    record as a state update next to it."""
    result = [
        stamp_reply(m, prepared.memory_ids) if isinstance(m, AIMessage) else m
        for m in response.result
    ]
    response = ModelResponse(result=result, structured_response=response.structured_response)
    if not prepared.update:
        return response
    return ExtendedModelResponse(model_response=response, command=Command(update=prepared.update))
