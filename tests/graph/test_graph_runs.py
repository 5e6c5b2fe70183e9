"""Running the graph the ways apps do: invoke and ainvoke on one checkpointer, token streaming,
session end, the tool loop, defaults."""

from __future__ import annotations

import itertools
import uuid

from fakes import NGramEmbeddings, RecordingChatModel, StructuredFakeChatModel
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from engram.graph import Compaction, Context, compile_graph
from engram.graph.checkpoint import ThreadedSqliteSaver


def _store() -> InMemoryStore:
    return InMemoryStore(index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]})


def _model() -> RecordingChatModel:
    return RecordingChatModel(messages=(f"reply {i} is here" for i in itertools.count()))


def _config() -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


async def test_invoke_and_ainvoke_share_one_sqlite_thread(tmp_path) -> None:
    saver = ThreadedSqliteSaver.from_path(tmp_path / "data" / "checkpoints.sqlite")
    graph = compile_graph(_model(), store=_store(), checkpointer=saver)
    config = _config()
    graph.invoke({"messages": [HumanMessage("first, sync")]}, config)
    out = await graph.ainvoke({"messages": [HumanMessage("second, async")]}, config)
    assert [m.content for m in out["messages"]] == [
        "first, sync",
        "reply 0 is here",
        "second, async",
        "reply 1 is here",
    ]
    assert out["turn"] == 2
    again = ThreadedSqliteSaver.from_path(tmp_path / "data" / "checkpoints.sqlite")
    assert len(again.get_tuple(config).checkpoint["channel_values"]["messages"]) == 4


async def test_tokens_stream_with_stream_mode_messages_sync_and_async() -> None:
    memory_model = StructuredFakeChatModel(
        messages=itertools.repeat("SUMMARY TEXT THAT MUST NOT STREAM"),
        structured_responses=[{"memories": []}] * 5,
    )
    graph = compile_graph(
        _model(), memory_model=memory_model, store=_store(), checkpointer=InMemorySaver()
    )
    config = _config()
    ctx = Context(
        compaction=Compaction(message_threshold=3, keep_recent_messages=1), memory_work="inline"
    )
    sync_chunks = [
        (chunk, meta["langgraph_node"])
        for chunk, meta in graph.stream(
            {"messages": [HumanMessage("hello")]}, config, context=ctx, stream_mode="messages"
        )
    ]
    assert all(isinstance(c, AIMessageChunk) for c, _ in sync_chunks)
    assert {node for _, node in sync_chunks} == {"respond"}
    assert "".join(c.content for c, _ in sync_chunks) == "reply 0 is here"
    assert len(sync_chunks) > 1  # token by token, not one final message

    async_chunks = [
        chunk
        async for chunk, meta in graph.astream(
            {"messages": [HumanMessage("again")]}, config, context=ctx, stream_mode="messages"
        )
    ]
    assert "".join(c.content for c in async_chunks) == "reply 1 is here"
    # this turn compacted with the LLM summarizer, whose tokens are tagged not to stream
    assert graph.get_state(config).values["summary"].startswith("SUMMARY")
    assert not any("SUMMARY" in c.content for c in async_chunks)


def test_end_session_goes_straight_to_consolidate() -> None:
    model = _model()
    graph = compile_graph(model, store=_store(), checkpointer=InMemorySaver())
    config = _config()
    graph.invoke(
        {"messages": [HumanMessage("I prefer tea over coffee.")]},
        config,
        context=Context(user_id="s"),
    )
    steps = [
        list(update)
        for update in graph.stream(
            {"end_session": True}, config, context=Context(user_id="s"), stream_mode="updates"
        )
    ]
    assert steps == [["consolidate"]]
    assert len(model.calls) == 1  # the answering model was not called again
    state = graph.get_state(config).values
    assert state["consolidation"]["trigger"] == "session_end"
    assert "end_session" not in state  # ephemeral: the next run is a normal turn
    graph.invoke({"messages": [HumanMessage("next turn")]}, config, context=Context(user_id="s"))
    assert len(model.calls) == 2


@tool
def order_status(order_id: str) -> str:
    """Look up the delivery status of an order."""
    return f"order {order_id} was delivered on 2024-05-02"


class _ToolCallingModel(GenericFakeChatModel):
    """Calls `order_status` once, then answers with what the tool said."""

    def bind_tools(self, tools, **kwargs):  # type: ignore[override]
        return self


async def test_the_tool_loop_runs_before_the_compaction_edge() -> None:
    model = _ToolCallingModel(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "order_status", "args": {"order_id": "A17"}, "id": "call-1"}
                    ],
                ),
                AIMessage("Your order A17 was delivered on May 2."),
            ]
        )
    )
    graph = compile_graph(model, store=_store(), checkpointer=InMemorySaver(), tools=[order_status])
    config = _config()
    nodes = [
        next(iter(update))
        async for update in graph.astream(
            {"messages": [HumanMessage("Where is order A17?")]}, config, stream_mode="updates"
        )
    ]
    assert nodes == ["start", "respond", "tools", "respond", "consolidate"]
    messages = (await graph.aget_state(config)).values["messages"]
    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage, AIMessage]
    assert messages[1].tool_calls[0]["id"] == messages[2].tool_call_id == "call-1"
    assert "2024-05-02" in messages[2].content
    assert messages[-1].content == "Your order A17 was delivered on May 2."


def test_the_second_model_call_of_a_tool_loop_sees_the_call_and_its_result() -> None:
    class Recording(_ToolCallingModel):
        seen: list = []

        def _generate(self, messages, *args, **kwargs):  # type: ignore[override]
            self.seen.append(list(messages))
            return super()._generate(messages, *args, **kwargs)

    model = Recording(
        messages=iter(
            [
                AIMessage(
                    "",
                    tool_calls=[
                        {"name": "order_status", "args": {"order_id": "B2"}, "id": "call-2"}
                    ],
                ),
                AIMessage("Delivered."),
            ]
        )
    )
    graph = compile_graph(model, store=_store(), checkpointer=InMemorySaver(), tools=[order_status])
    graph.invoke({"messages": [HumanMessage("Where is B2?")]}, _config())  # sync: ToolNode too
    second = model.seen[1]
    assert [m.type for m in second] == ["system", "human", "ai", "tool"]


def test_a_run_without_context_uses_the_defaults() -> None:
    model = _model()
    graph = compile_graph(model, store=_store(), checkpointer=InMemorySaver())
    out = graph.invoke({"messages": [HumanMessage("hi")]}, _config())
    assert model.calls[0][0].content.startswith(Context().system_prompt)
    assert out["built_context"]["budget"]["window"] == 8192  # unknown model


def test_compile_graph_defaults_to_chroma_and_sqlite_in_the_data_folder(
    tmp_path, monkeypatch
) -> None:
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    graph = compile_graph(_model())
    assert type(graph.store).__name__ == "ChromaStore"
    assert isinstance(graph.checkpointer, ThreadedSqliteSaver)
    config = _config()
    graph.invoke(
        {"messages": [HumanMessage("I prefer tea over coffee.")]},
        config,
        context=Context(user_id="d"),
    )
    graph.invoke({"end_session": True}, config, context=Context(user_id="d"))
    assert (tmp_path / "checkpoints.sqlite").is_file() and (tmp_path / "chroma").is_dir()
    found = graph.store.search(("memories", "d"), query="tea or coffee?")
    assert [item.value["category"] for item in found] == ["preference"]
