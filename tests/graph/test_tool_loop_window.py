"""A tool loop inside one turn never outgrows the window `start` budgeted: results under the
offload threshold pile up call after call, so the oldest go to the model as short notes (the
newest whole), where the whole loop used to be sent and a small window refused it."""

from __future__ import annotations

import uuid

from fakes import ToolCallingChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from engram.graph import Context, compile_graph
from engram.nodes.prompts import ELIDED_MESSAGE_NOTE
from engram.nodes.text.tokens import counter_for_model

PAGES = 8
WINDOW = 4096


@tool
def read_page(n: int) -> str:
    """Read one page of the manual."""
    return f"page {n}: " + " ".join(f"step{n}-{i} tighten bolt {i}" for i in range(180))


def _calls() -> list[AIMessage]:
    calls = [
        AIMessage("", tool_calls=[{"name": "read_page", "args": {"n": n}, "id": f"c{n}"}])
        for n in range(PAGES)
    ]
    return [*calls, AIMessage("Done: tighten the bolts in order.")]


async def test_a_long_tool_loop_stays_in_the_window_with_the_newest_result_whole() -> None:
    model = ToolCallingChatModel(messages=iter(_calls()))
    graph = compile_graph(model, store=InMemoryStore(), checkpointer=InMemorySaver(),
                          tools=[read_page])
    counter = counter_for_model(None)
    one_page = counter.count_text(read_page.invoke({"n": 0}))
    assert one_page < 2000 and one_page * PAGES > WINDOW  # never offloaded, too long together

    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(user_id="ada", context_window=WINDOW)
    out = await graph.ainvoke({"messages": [HumanMessage("Walk me through the manual")]},
                              config, context=ctx)

    assert out["messages"][-1].content.startswith("Done")
    budget = out["built_context"]["budget"]
    for sent in model.calls:
        assert counter.count_messages(sent) <= budget["available"]
        results = [m for m in sent if isinstance(m, ToolMessage)]
        if results:
            assert results[-1].content.startswith("page ")  # the newest result, whole
    last = [m for m in model.calls[-1] if isinstance(m, ToolMessage)]
    noted = ELIDED_MESSAGE_NOTE.split("{")[0]
    assert len(last) == PAGES and last[0].content.startswith(noted)
    # the thread keeps every result whole: only what the model is sent is shortened
    kept = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert all(m.content.startswith("page ") for m in kept)
