"""One `ChatOpenAI` object answers and writes memory, over real HTTP, in a second.

A fast companion of `test_real_model.py` (which runs the local llama.cpp model): a tiny
OpenAI-compatible server on 127.0.0.1 answers every chat completion with a canned reply. A
model's async HTTP client belongs to the event loop it first ran on, and langchain-openai shares
one between every `ChatOpenAI` on a base URL: engram must never put it on a loop of its own. The
canned reply is no valid memory-model answer, so summaries and extraction fall back to the
offline built-ins (counted), but none may fail because of a loop, and no turn may crash.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_core.messages import HumanMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from engram.graph import Compaction, Context, Extraction, compile_graph


class _Completions(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: clients reuse pooled connections, as with real servers

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = json.dumps({
            "id": "1", "object": "chat.completion", "created": 0, "model": "fake",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "Noted, thanks."}}],
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def base_url() -> Iterator[str]:
    """A server per test: langchain-openai's shared async client is per base URL, and each test
    is an app with a loop of its own."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Completions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def _graph(base_url: str) -> object:
    model = ChatOpenAI(base_url=base_url, api_key="-", model="fake", max_retries=0, timeout=10)
    index = {"dims": 8, "embed": lambda texts: [[1.0] * 8 for _ in texts], "fields": ["content"]}
    return compile_graph(
        model, memory_model=model, store=InMemoryStore(index=index), checkpointer=InMemorySaver()
    )


def _loop_failures(out: dict) -> list[dict]:
    return [f for f in out.get("failures", []) if "loop" in f["error"].lower()]


@pytest.mark.parametrize("memory_work", ["inline", "background"])
def test_invoke_and_ainvoke_share_one_model_object(base_url, memory_work) -> None:
    graph = _graph(base_url)
    ctx = Context(
        user_id="one",
        compaction=Compaction(message_threshold=4, keep_recent_messages=2),
        extraction=Extraction(every_turns=2),
        memory_work=memory_work,
    )
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}

    async def app() -> list[dict]:
        # a web app: several turns and users on its one loop, and a sync call in between
        outs = [await graph.ainvoke({"messages": [HumanMessage(f"note {n}")]}, config,
                                    context=ctx) for n in range(3)]
        outs.append(await asyncio.to_thread(
            graph.invoke, {"messages": [HumanMessage("and a sync one")]}, config, context=ctx
        ))
        others = [{"configurable": {"thread_id": str(uuid.uuid4())}} for _ in range(3)]
        outs += await asyncio.gather(*(
            graph.ainvoke({"messages": [HumanMessage("hi")]}, c, context=ctx) for c in others
        ))
        outs.append(await graph.ainvoke({"messages": [], "end_session": True}, config, context=ctx))
        return outs

    outs = asyncio.run(app())
    outs.append(graph.invoke({"messages": [HumanMessage("later")]}, config, context=ctx))
    assert all(out["messages"][-1].text for out in outs)
    assert not [f for out in outs for f in _loop_failures(out)]
    assert any(out.get("summary_info") for out in outs)  # compaction ran (on the fallback)
