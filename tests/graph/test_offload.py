"""Offloaded tool results in a real `create_agent` agent and in the graph (embedded ChromaStore,
SQLite checkpointer; sync and async): the model sees a pointer in place of a long result and
reads it back; secrets never reach the store; another thread's or user's ids are refused;
incognito results live in the thread only; megabytes and binary content stay bounded."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from typing import Annotated, Any

import chromadb
import pytest
from conftest import files_holding
from fakes import (
    FailingChatModel,
    NGramEmbeddings,
    StructuredFakeChatModel,
    ToolCallingChatModel,
)
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.types import Command
from pydantic import Field

from engram.graph import Context, EngramMiddleware, compile_graph
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.graph.offload import NOT_FOUND_ANSWER
from engram.nodes.offload import pointer_of
from engram.nodes.owner import ThreadOwnerError
from engram.nodes.state import MAX_RESULTS_IN_THREAD
from engram.nodes.text.tokens import counter_for_model
from engram.stores.chroma.store import ChromaStore
from engram.stores.memory.users import delete_thread
from engram.stores.working import MAX_KEPT_CHARS

NEEDLE = "ERROR checkout: the connection pool was exhausted after 30 s (pool=orders-db)"
LOG = (
    "".join(f"2026-11-26T10:{i % 60:02d}:00Z INFO GET /api/items/{i} 200 12ms\n" for i in range(900))
    + NEEDLE + "\nDEBUG config password: hunter22-Quokka\n"
    + "".join(f"2026-11-26T11:{i % 60:02d}:00Z INFO GET /api/cart/{i} 200 9ms\n" for i in range(900))
)
RESULTS: dict[str, str] = {"logs": LOG}


@tool
def fetch_logs(service: str) -> str:
    """Fetch the recent logs of a service."""
    return RESULTS["logs"]


Step = AIMessage | Callable[[list[BaseMessage]], AIMessage]


class ScriptedAgentModel(ToolCallingChatModel):
    """Replies in order; a callable step is given the messages of the call it answers (so it can
    read the pointer's id)."""

    def __init__(self, steps: list[Step]) -> None:
        super().__init__(messages=self._replies(steps))

    def _replies(self, steps: list[Step]) -> Iterator[AIMessage]:
        for step in steps:
            yield step(self.calls[-1]) if callable(step) else step


def _call(name: str, args: dict[str, Any], call_id: str | None = None) -> AIMessage:
    call_id = call_id or f"call-{uuid.uuid4().hex[:8]}"
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": call_id}])


def _pointer_id(messages: list[BaseMessage]) -> str:
    pointers = [pointer_of(m.content) for m in messages if isinstance(m, ToolMessage)]
    return [p for p in pointers if p][-1]["memoryId"]


def _reading(name: str, **args: Any) -> Callable[[list[BaseMessage]], AIMessage]:
    return lambda messages: _call(name, {"memory_id": _pointer_id(messages), **args})


@pytest.fixture
def store(tmp_path) -> Iterator[ChromaStore]:
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    chroma = ChromaStore(
        chromadb.PersistentClient(path=str(tmp_path / "chroma")), collection="agent", index=index
    )
    yield chroma
    chroma.close()


@pytest.fixture
def saver(tmp_path) -> Iterator[ThreadedSqliteSaver]:
    with ThreadedSqliteSaver.from_path(tmp_path / "checkpoints.sqlite") as sqlite:
        yield sqlite


def _app(kind: str, model: Any, store: Any, saver: Any, memory_model: Any = None) -> Any:
    if kind == "graph":
        return compile_graph(model, memory_model=memory_model, store=store, checkpointer=saver,
                             tools=[fetch_logs])
    return create_agent(
        model,
        tools=[fetch_logs],
        middleware=[EngramMiddleware(memory_model=memory_model, offload=True)],
        store=store,
        checkpointer=saver,
        context_schema=Context,
    )


async def _turn(app: Any, mode: str, text: str, config: dict, ctx: Context) -> dict[str, Any]:
    payload = {"messages": [HumanMessage(text)]}
    if mode == "sync":
        return app.invoke(payload, config, context=ctx)
    return await app.ainvoke(payload, config, context=ctx)


def _config() -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("kind", ["graph", "agent"])
async def test_a_long_result_becomes_a_pointer_the_agent_reads_back(
    kind: str, mode: str, store: ChromaStore, saver: ThreadedSqliteSaver, tmp_path
) -> None:
    model = ScriptedAgentModel([
        _call("fetch_logs", {"service": "checkout"}, "call-logs"),
        _reading("search_tool_result", query="connection pool exhausted", limit=1),
        _reading("read_tool_result", offset=LOG.index(NEEDLE), length=200),
        AIMessage("The orders-db pool was exhausted."),
    ])
    config = _config()
    out = await _turn(_app(kind, model, store, saver), mode, "Why does checkout fail?", config,
                      Context(user_id="alice"))

    # the model saw the pointer, still paired with its tool call
    seen = model.calls[1]
    call, result = seen[-2], seen[-1]
    assert isinstance(call, AIMessage) and call.tool_calls[0]["id"] == "call-logs"
    assert isinstance(result, ToolMessage) and result.tool_call_id == "call-logs"
    assert result.name == "fetch_logs"
    pointer = pointer_of(result.content)
    assert pointer["totalLength"] == len(LOG)
    assert pointer["preview"].startswith("2026-11-26T10:00:00Z INFO GET /api/items/0")
    assert "1 line mentions an error" in pointer["summary"] and "orders-db" in pointer["summary"]
    counter = counter_for_model(None)
    assert counter.count_text(result.content) < counter.count_text(LOG) / 20

    # search, then read, found the line
    [hit] = json.loads(model.calls[2][-1].content)
    assert NEEDLE in hit["text"] or "connection pool" in hit["text"]
    read = model.calls[3][-1].content
    assert NEEDLE in read and "[continue with offset=" in read
    assert out["messages"][-1].content == "The orders-db pool was exhausted."

    # kept in the store, redacted; nothing of the secret in any file, checkpoints included
    [record] = out["offloaded"].values()
    assert record["kept_in"] == "store" and "content" not in record
    assert "hunter22" not in json.dumps([m.content for m in out["messages"]])
    saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    assert files_holding(tmp_path, "hunter22-Quokka") == []
    assert files_holding(tmp_path / "chroma", "orders-db")  # the text itself is kept


async def test_an_id_of_another_thread_or_user_is_refused(
    store: ChromaStore, saver: ThreadedSqliteSaver
) -> None:
    model = ScriptedAgentModel([_call("fetch_logs", {"service": "checkout"}), AIMessage("Got it.")])
    config = _config()
    await _turn(_app("graph", model, store, saver), "async", "Fetch the logs", config,
                Context(user_id="alice"))
    memory_id = _pointer_id(model.calls[-1])

    with pytest.raises(ThreadOwnerError):  # bob on alice's thread: refused before it runs
        await _turn(_app("agent", ScriptedAgentModel([AIMessage("x")]), store, saver), "sync",
                    "Read it", config, Context(user_id="bob"))
    for user, other in (("alice", _config()), ("bob", _config())):
        reader = ScriptedAgentModel([
            _call("read_tool_result", {"memory_id": memory_id}),
            _call("search_tool_result", {"memory_id": memory_id, "query": "pool"}),
            AIMessage("Nothing."),
        ])
        await _turn(_app("agent", reader, store, saver), "sync", "Read it", other,
                    Context(user_id=user))
        refused = NOT_FOUND_ANSWER.format(memory_id=memory_id)
        assert reader.calls[1][-1].content == refused
        assert reader.calls[2][-1].content == refused


async def test_an_incognito_result_lives_in_the_thread_only(
    store: ChromaStore, saver: ThreadedSqliteSaver, tmp_path
) -> None:
    RESULTS["logs"] = LOG.replace("orders-db", "Zanzibarquux-db")
    try:
        model = ScriptedAgentModel([
            _call("fetch_logs", {"service": "checkout"}),
            _reading("search_tool_result", query="Zanzibarquux"),
            AIMessage("Found it."),
        ])
        config = _config()
        ctx = Context(user_id="alice", incognito=True)
        out = await _turn(_app("agent", model, store, saver), "async", "Logs?", config, ctx)
    finally:
        RESULTS["logs"] = LOG
    [record] = out["offloaded"].values()
    assert record["kept_in"] == "thread" and "Zanzibarquux-db" in record["content"]
    assert "Zanzibarquux" in model.calls[2][-1].content  # searched in the thread's copy
    assert not [ns for ns in store.list_namespaces() if ns[0] == "tool_results"]
    assert files_holding(tmp_path / "chroma", "Zanzibarquux") == []

    delete_thread(store, "alice", config["configurable"]["thread_id"], checkpointer=saver)
    assert saver.get_tuple(config) is None
    assert files_holding(tmp_path, "Zanzibarquux") == []


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_megabytes_and_binary_content_stay_bounded(
    mode: str, store: ChromaStore, saver: ThreadedSqliteSaver
) -> None:
    binary = bytes(range(256)).decode("latin-1") * 200
    huge = LOG * 25  # about 2.6 MB
    outputs = []
    for content in (huge, binary):
        RESULTS["logs"] = content
        try:
            model = ScriptedAgentModel([
                _call("fetch_logs", {"service": "all"}),
                _reading("read_tool_result", offset=MAX_KEPT_CHARS - 100, length=500),
                AIMessage("Done."),
            ])
            await _turn(_app("graph", model, store, saver), mode, "Fetch everything", _config(),
                        Context(user_id="alice"))
        finally:
            RESULTS["logs"] = LOG
        pointer = pointer_of(model.calls[1][-1].content)
        assert pointer["totalLength"] == len(content)
        assert len(model.calls[1][-1].content) < 2500
        outputs.append((pointer, model.calls[2][-1].content))

    (_, huge_read), (binary_pointer, binary_read) = outputs
    assert "the rest was not kept" in huge_read and "[end of the result]" in huge_read
    assert binary_pointer["summary"].startswith("Binary-looking content from fetch_logs")
    assert "\x00" not in binary_pointer["preview"] and binary_read.startswith("Offset")


async def test_the_memory_model_summarizes_and_a_failure_falls_back(
    store: ChromaStore, saver: ThreadedSqliteSaver
) -> None:
    memory_model = StructuredFakeChatModel(
        messages=iter(["Checkout logs; the orders-db pool ran out. Its password: hunter22-Quokka"])
    )
    model = ScriptedAgentModel([_call("fetch_logs", {"service": "checkout"}), AIMessage("Ok.")])
    await _turn(_app("agent", model, store, saver, memory_model), "async", "Logs?", _config(),
                Context(user_id="alice", memory_work="inline"))
    summary = pointer_of(model.calls[1][-1].content)["summary"]
    assert summary.startswith("Checkout logs; the orders-db pool ran out.")
    assert "hunter22" not in summary
    [(_, user)] = memory_model.calls
    assert "hunter22" not in user.content and "<tool_output>" in user.content

    failing = FailingChatModel()
    model = ScriptedAgentModel([_call("fetch_logs", {"service": "checkout"}), AIMessage("Ok.")])
    out = await _turn(_app("graph", model, store, saver, failing), "async", "Logs?", _config(),
                      Context(user_id="alice", memory_work="inline"))
    assert pointer_of(model.calls[1][-1].content)["summary"].startswith("Text from fetch_logs")
    assert [f["stage"] for f in out["failures"]] == ["summarize"]


@tool
def fetch_report(name: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command:
    """Fetch a report (the tool answers with a `Command`)."""
    return Command(update={"messages": [ToolMessage(LOG, tool_call_id=tool_call_id)]})


async def test_a_long_result_inside_a_tools_command_is_offloaded_too(
    store: ChromaStore, saver: ThreadedSqliteSaver
) -> None:
    model = ScriptedAgentModel([_call("fetch_report", {"name": "daily"}, "call-r"), AIMessage("Ok.")])
    graph = compile_graph(model, store=store, checkpointer=saver, tools=[fetch_report])
    out = await graph.ainvoke({"messages": [HumanMessage("The report?")]}, _config(),
                              context=Context(user_id="alice"))
    result = model.calls[1][-1]
    assert result.tool_call_id == "call-r" and pointer_of(result.content)["totalLength"] == len(LOG)
    assert list(out["offloaded"]) == [pointer_of(result.content)["memoryId"]]


async def test_the_same_result_again_in_a_thread_is_kept_once(
    store: ChromaStore, saver: ThreadedSqliteSaver
) -> None:
    memory_model = StructuredFakeChatModel(messages=iter(["Checkout logs; the pool ran out."]))
    model = ScriptedAgentModel([
        _call("fetch_logs", {"service": "checkout"}),
        _call("fetch_logs", {"service": "checkout"}),
        AIMessage("Ok."),
    ])
    config = _config()
    out = await _turn(_app("graph", model, store, saver, memory_model), "async", "Logs?", config,
                      Context(user_id="alice", memory_work="inline"))
    first, second = (pointer_of(model.calls[n][-1].content) for n in (1, 2))
    assert first == second and first["summary"] == "Checkout logs; the pool ran out."
    assert len(memory_model.calls) == 1  # summarized once
    assert list(out["offloaded"]) == [first["memoryId"]]
    thread = config["configurable"]["thread_id"]
    heads = [i for i in store.search(("tool_results", "alice", thread), limit=1000)
             if i.value.get("kind") == "head"]
    assert [h.key for h in heads] == [first["memoryId"]]
    # another thread's copy of the same text has its own id
    other = ScriptedAgentModel([_call("fetch_logs", {"service": "checkout"}), AIMessage("Ok.")])
    await _turn(_app("graph", other, store, saver), "async", "Logs?", _config(),
                Context(user_id="alice"))
    assert pointer_of(other.calls[1][-1].content)["memoryId"] != first["memoryId"]


class BindingModel(ScriptedAgentModel):
    """Records the names of the tools bound to it."""

    bound: list[str] = Field(default_factory=list)

    def bind_tools(self, tools: Any, **kwargs: Any) -> BindingModel:  # type: ignore[override]
        self.bound = [t.name for t in tools]
        return self


@pytest.mark.parametrize("offload", [True, False])
async def test_a_graph_built_with_offload_false_has_no_reading_tools_and_keeps_results_whole(
    offload: bool, store: ChromaStore, saver: ThreadedSqliteSaver
) -> None:
    model = BindingModel([_call("fetch_logs", {"service": "checkout"}), AIMessage("Ok.")])
    graph = compile_graph(model, store=store, checkpointer=saver, tools=[fetch_logs],
                          offload=offload)
    await _turn(graph, "async", "Logs?", _config(), Context(user_id="alice"))
    reading = {"read_tool_result", "search_tool_result"}
    result = model.calls[1][-1]
    if offload:
        assert reading <= set(model.bound) and pointer_of(result.content) is not None
    else:
        assert model.bound == ["fetch_logs"] and result.content == LOG


async def test_an_incognito_thread_keeps_the_text_of_its_newest_results_only(
    store: ChromaStore, saver: ThreadedSqliteSaver
) -> None:
    """Results kept in the thread's state are up to 1 MB each: the checkpoint keeps the text of
    the newest `MAX_RESULTS_IN_THREAD` only; an older one is not found, not half-read."""
    served = iter(range(100))

    @tool
    def fetch_page(n: int) -> str:
        """Fetch one page of the logs."""
        return f"page {next(served)}\n" + LOG

    ids: list[str] = []

    def remember_id(messages: list[BaseMessage]) -> AIMessage:
        ids.append(_pointer_id(messages))
        return _call("fetch_page", {"n": len(ids)})

    def read_first(messages: list[BaseMessage]) -> AIMessage:
        ids.append(_pointer_id(messages))
        return _call("read_tool_result", {"memory_id": ids[0]})

    pages = MAX_RESULTS_IN_THREAD + 2
    model = ScriptedAgentModel([
        _call("fetch_page", {"n": 0}),
        *[remember_id] * (pages - 1),
        read_first,
        lambda messages: _call("read_tool_result", {"memory_id": ids[-1]}),
        AIMessage("Done."),
    ])
    graph = compile_graph(model, store=store, checkpointer=saver, tools=[fetch_page])
    out = await _turn(graph, "async", "Read the pages", _config(),
                      Context(user_id="alice", incognito=True))
    assert len(ids) == pages == len(out["offloaded"])
    kept = [i for i, record in out["offloaded"].items() if "content" in record]
    assert kept == ids[-MAX_RESULTS_IN_THREAD:]
    assert model.calls[-2][-1].content == NOT_FOUND_ANSWER.format(memory_id=ids[0])
    assert f"page {pages - 1}" in model.calls[-1][-1].content


@pytest.mark.parametrize("tools", [[fetch_logs], []], ids=["with tools", "without tools"])
async def test_the_middleware_offloads_by_default_when_the_agent_has_tools_as_the_graph_does(
    tools: list[Any], store: ChromaStore, saver: ThreadedSqliteSaver
) -> None:
    steps = [_call("fetch_logs", {"service": "checkout"}), AIMessage("Ok.")] if tools else []
    model = BindingModel([*steps, AIMessage("Hello.")])
    agent = create_agent(model, tools=tools, middleware=[EngramMiddleware()], store=store,
                         checkpointer=saver, context_schema=Context)
    graph_model = BindingModel([*steps, AIMessage("Hello.")])
    graph = compile_graph(graph_model, store=store, checkpointer=saver, tools=tools)
    for app, used in ((agent, model), (graph, graph_model)):
        await _turn(app, "async", "Logs?" if tools else "Hi", _config(), Context(user_id="alice"))
        if tools:
            assert {"fetch_logs", "read_tool_result", "search_tool_result"} == set(used.bound)
            assert pointer_of(used.calls[1][-1].content) is not None
        else:  # no tool of its own: the model gets none, and works without accepting tools
            assert used.bound == [] and len(used.calls) == 1
