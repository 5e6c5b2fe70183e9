"""LangGraph Studio's server (`langgraph dev`) loads langgraph.json: the engram graph with a fake
model chosen by ENGRAM_MODEL, and the ChromaStore factory whose memories the /store API serves.

The server runs in the environment a user has, as the README's command shows it: none of the
variables the test session sets for offline assets (`TIKTOKEN_CACHE_DIR`,
`ENGRAM_EMBEDDING_MODEL_DIR`, ...). What a user's machine has instead is simulated with files:

- tiktoken's encodings in its default cache, `$TMPDIR/data-gym-cache` (where tiktoken puts them
  on the first run with network): the test gives the server its own `TMPDIR` holding copies of
  `../shared/tiktoken`, so the default path (`tempfile.gettempdir()`) is the one exercised;
- the all-MiniLM-L6-v2 ONNX files in chromadb's cache, `~/.cache/chroma/onnx_models/...` (where
  chromadb downloads them on the first run with network): the test gives the server its own
  `HOME` whose cache folder links to `../shared/models/all-MiniLM-L6-v2`. This machine has no
  network, so without these files the embedder could not load at all; the link is the one
  concession, and it goes through the same lookup a user's machine does.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from langgraph_sdk import get_client

pytestmark = pytest.mark.server

REPO = Path(__file__).resolve().parents[2]
RUNTIME_FOLDER = REPO / ".langgraph_api"
STARTUP_SECONDS = 120
SHARED = REPO.parent / "shared"
SESSION_ONLY_VARIABLES = frozenset(
    {
        "TIKTOKEN_CACHE_DIR",
        "DATA_GYM_CACHE_DIR",
        "ENGRAM_EMBEDDING_MODEL_DIR",
        "ENGRAM_CHROMA_URL",
        "ENGRAM_MEMORY_MODEL",
        "PYTEST_CURRENT_TEST",
        "PYTEST_VERSION",
    }
)
"""Variables of the test session that a user running `langgraph dev` would not have."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`langgraph dev` on 127.0.0.1, no browser, reload or analytics; stopped with its group."""
    data = tmp_path_factory.mktemp("engram-data")
    log_path = data / "langgraph-dev.log"
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in SESSION_ONLY_VARIABLES},
        "HOME": str(_home_with_chroma_cache(data / "home")),
        "TMPDIR": str(_tmpdir_with_tiktoken_cache(data / "tmp")),
        "ENGRAM_MODEL": "tests/fakes.py:studio_chat_model",
        "ENGRAM_DATA_DIR": str(data),
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
    }
    command = [
        sys.executable,
        "-m",
        "langgraph_cli",
        "dev",
        "--no-browser",
        "--no-reload",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    had_runtime_folder = RUNTIME_FOLDER.exists()
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process, log_path)
        yield url
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if not had_runtime_folder:  # the in-memory server's persistence, written to the cwd
            shutil.rmtree(RUNTIME_FOLDER, ignore_errors=True)


def _home_with_chroma_cache(home: Path) -> Path:
    """A home folder whose chromadb cache holds the ONNX model, as after chromadb's download."""
    cache = home / ".cache" / "chroma" / "onnx_models" / "all-MiniLM-L6-v2"
    cache.mkdir(parents=True)
    (cache / "onnx").symlink_to(SHARED / "models" / "all-MiniLM-L6-v2" / "onnx")
    return home


def _tmpdir_with_tiktoken_cache(tmp: Path) -> Path:
    """A temporary folder whose `data-gym-cache` holds tiktoken's encodings, as after its
    download."""
    shutil.copytree(SHARED / "tiktoken", tmp / "data-gym-cache")
    return tmp


def _wait_until_up(url: str, process: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"langgraph dev exited with {process.returncode}:\n{log_path.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    pytest.fail(
        f"langgraph dev did not answer within {STARTUP_SECONDS}s:\n{log_path.read_text()[-3000:]}"
    )


async def test_a_thread_through_the_http_api_writes_memories_readable_from_the_store(
    server: str,
) -> None:
    client = get_client(url=server)
    assistants = await client.assistants.search(graph_id="engram")
    assert assistants, "langgraph.json's graph 'engram' is not served"
    thread = await client.threads.create()
    context = {"user_id": "studio-user"}

    state = await client.runs.wait(
        thread["thread_id"],
        "engram",
        input={
            "messages": [{"role": "user", "content": "I prefer dark mode in every editor I use."}]
        },
        context=context,
    )
    assert state["messages"][-1]["content"] == "Noted, thanks for telling me."
    assert state["built_context"]["budget"]["window"] == 8192  # what Studio shows per step
    assert state["built_context"]["encoding"] == "cl100k_base"  # loaded from $TMPDIR's cache
    assert state["turn"] == 1

    state = await client.runs.wait(
        thread["thread_id"], "engram", input={"end_session": True}, context=context
    )
    assert state["consolidation"]["trigger"] == "session_end"

    found = await client.store.search_items(("memories", "studio-user"))
    memories = [item["value"] for item in found["items"]]
    assert [(m["category"], m["content"]) for m in memories] == [
        ("preference", "I prefer dark mode in every editor I use.")
    ]
    assert memories[0]["source_thread_id"] == thread["thread_id"]
    assert (await client.store.search_items(("memories", "someone-else")))["items"] == []


async def test_a_failed_run_reaches_the_client_with_its_message(server: str) -> None:
    client = get_client(url=server)
    thread = await client.threads.create()
    with pytest.raises(Exception, match=r"ValueError: Context\.recall_k must be an integer >= 0"):
        await client.runs.wait(
            thread["thread_id"],
            "engram",
            input={"messages": [{"role": "user", "content": "hello"}]},
            context={"user_id": "studio-user", "recall_k": -1},
        )
    with pytest.raises(Exception, match=r"ContextOverflowError: the current input is \d+ tokens"):
        await client.runs.wait(
            thread["thread_id"],
            "engram",
            input={"messages": [{"role": "user", "content": "word " * 20_000}]},
            context={"user_id": "studio-user"},
        )
    state = await client.runs.wait(
        thread["thread_id"],
        "engram",
        input={"messages": [{"role": "user", "content": "Sorry, that was too long."}]},
        context={"user_id": "studio-user"},
    )
    assert state["messages"][-1]["content"] == "Noted, thanks for telling me."
    assert len(state["built_context"]["elided_message_ids"]) == 1


def test_the_studio_graph_loads_without_an_api_key_and_a_run_says_what_to_set(monkeypatch):
    """`ENGRAM_MODEL=openai:gpt-4o-mini langgraph dev` on a machine without OPENAI_API_KEY: the
    graph loads (the server starts), and a run fails with what to set."""
    import importlib

    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.store.memory import InMemoryStore

    from engram.graph import studio
    from engram.nodes.respond import NoModelError

    monkeypatch.setenv("ENGRAM_MODEL", "openai:gpt-4o-mini")
    monkeypatch.delenv("ENGRAM_MEMORY_MODEL", raising=False)
    for name in ("OPENAI_API_KEY", "OPENAI_ADMIN_KEY"):
        monkeypatch.delenv(name, raising=False)
    graph = importlib.reload(studio).graph
    assert {"start", "respond", "compact", "consolidate"} <= set(graph.nodes)

    runnable = graph.copy(update={"checkpointer": InMemorySaver(), "store": InMemoryStore()})
    with pytest.raises(NoModelError, match="OPENAI_API_KEY.*ENGRAM_MODEL=local:0.5b"):
        runnable.invoke({"messages": [("user", "hi")]}, {"configurable": {"thread_id": "t"}})
