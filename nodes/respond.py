"""`respond`: the answering model on the context `start` built; its reply is the short-term write.

The model input is rebuilt from the state and `BuiltContext` (system message with instructions,
memories and summary; the included history; the current input; this turn's tool calls and
results), so the checkpoint never stores a second copy of the messages. The reply — tool calls
included, stamped with the time and the ids of the memories the model was given (its
citations, `engram.nodes.text.transcript.CITATIONS_KEY`) — is appended to `messages`. Under
`stream_mode="messages"` its tokens stream.

The node has two forms, one per entry point: `ainvoke`/`astream` await the model's async API on
the caller's own loop, `invoke`/`stream` call its sync API. A model's async HTTP client is bound
to the loop it first ran on, so the sync path never touches it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime

from engram.nodes.start import model_input
from engram.nodes.text.transcript import stamp_reply

if TYPE_CHECKING:
    from engram.nodes.context import Context
    from engram.nodes.state import EngramState

RespondNode = Callable[["EngramState", Runtime["Context"]], Awaitable[dict[str, Any]]]
SyncRespondNode = Callable[["EngramState", Runtime["Context"]], dict[str, Any]]


class NoModelError(RuntimeError):
    """The graph was built without an answering model."""


def make_respond(
    model: BaseChatModel | None, tools: Sequence[BaseTool] | None = None
) -> tuple[RespondNode, SyncRespondNode]:
    """The `respond` node: its async form and its sync form (module docstring).

    Args:
        model: The answering chat model (None: the node raises `NoModelError` when it runs).
        tools: Tools the model may call (bound with `bind_tools`; the graph adds a tool loop).
    """
    bound = model.bind_tools(list(tools)) if model is not None and tools else model

    async def respond(state: EngramState, runtime: Runtime[Context]) -> dict[str, Any]:
        reply = await _answering(bound).ainvoke(model_input(state, runtime.context.system_prompt))
        return {"messages": [stamp_reply(reply, state["built_context"]["memory_ids"])]}

    def respond_sync(state: EngramState, runtime: Runtime[Context]) -> dict[str, Any]:
        reply = _answering(bound).invoke(model_input(state, runtime.context.system_prompt))
        return {"messages": [stamp_reply(reply, state["built_context"]["memory_ids"])]}

    return respond, respond_sync


def _answering(bound: Runnable | None) -> Runnable:
    if bound is None:
        raise NoModelError(
            "no chat model configured: pass model= to engram.graph.compile_graph/build_graph "
            "(e.g. init_chat_model('openai:gpt-4o-mini')); for Studio set ENGRAM_MODEL "
            "(openai:gpt-4o-mini with OPENAI_API_KEY, or local:0.5b to run offline)"
        )
    return bound
