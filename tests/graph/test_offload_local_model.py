"""Working memory with the real local model (Qwen2.5-Coder-0.5B) as the memory model, in a real
`create_agent` agent: the model writes the pointer's summary of a long tool result and the task
state at compaction (bounded calls); neither falls back to the offline rules."""

from __future__ import annotations

import itertools
import uuid

import chromadb
import pytest
from fakes import NGramEmbeddings, ToolCallingChatModel
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import tool

from engram.graph import Compaction, Context, EngramMiddleware, Extraction, Recall, WorkingMemory
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.graph.local_model import local_chat_model
from engram.nodes.offload import pointer_of
from engram.stores.chroma.store import ChromaStore

pytestmark = pytest.mark.model

LOG = "".join(
    f"2026-11-26T10:{i % 60:02d}:00Z INFO GET /api/orders/{i} 200 {i % 90}ms\n" for i in range(90)
) + "2026-11-26T10:31:07Z ERROR checkout: connection pool of orders-db exhausted\n"


@tool
def fetch_logs(service: str) -> str:
    """Fetch the recent logs of a service."""
    return LOG


@pytest.fixture(scope="module")
def local_05b():
    return local_chat_model("local:0.5b", threads=1, timeout=900)


def _replies():
    yield AIMessage("Plan:\n1. Fetch the checkout logs\n2. Find the error\n3. Suggest a fix")
    yield AIMessage("", tool_calls=[{"name": "fetch_logs", "args": {"service": "checkout"},
                                     "id": "call-logs"}])
    yield AIMessage("The orders-db connection pool is exhausted.")
    yield from (AIMessage(f"Noted {n}.") for n in itertools.count())


async def test_the_local_model_summarizes_the_result_and_writes_the_task_state(
    local_05b, tmp_path
) -> None:
    model = ToolCallingChatModel(messages=_replies())
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    store = ChromaStore(chromadb.PersistentClient(path=str(tmp_path / "chroma")),
                        collection="local", index=index)
    saver = ThreadedSqliteSaver.from_path(tmp_path / "checkpoints.sqlite")
    agent = create_agent(model, tools=[fetch_logs],
                         middleware=[EngramMiddleware(memory_model=local_05b, offload=True)],
                         store=store, checkpointer=saver, context_schema=Context)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(
        user_id="alice",
        working_memory=WorkingMemory(offload_threshold_tokens=500),
        compaction=Compaction(message_threshold=4, keep_recent_messages=2, token_threshold=None),
        extraction=Extraction(mode="rules"),
        recall=Recall(timeout_ms=30_000),
    )
    failures = []
    for text in ("Checkout fails since Monday: find out why.", "Go ahead.", "What next?"):
        out = await agent.ainvoke({"messages": [HumanMessage(text)]}, config, context=ctx)
        failures += out.get("failures", [])

    assert not [f for f in failures if f["stage"] in ("summarize", "task_state")], failures
    [pointer] = [p for m in model.calls[2] if (p := pointer_of(m.content))]
    assert pointer["summary"] and not pointer["summary"].startswith("Text from")
    task = out["task_state"]
    assert task["mode"] == "llm" and task["current_goal"]
    assert all(len(task[k]) <= 8 for k in ("completed_steps", "pending_steps", "key_findings"))
    store.close()
    saver.close()
