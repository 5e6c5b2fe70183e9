"""LangGraph Studio's server (`langgraph dev`) loads langgraph.json: the engram graph with a fake
model chosen by ENGRAM_MODEL, and the ChromaStore factory whose memories the /store API serves.

The server runs in the environment a user has (`langgraph_dev`, in the tests' folder, says how).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from langgraph_dev import langgraph_dev
from langgraph_sdk import get_client

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`langgraph dev` on 127.0.0.1 with a data folder of its own; yields its URL."""
    with langgraph_dev(tmp_path_factory.mktemp("engram-data")) as dev:
        yield dev.url


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
    with pytest.raises(Exception, match=r"SettingsError: Context\.recall\.k: input should be greater"):
        await client.runs.wait(
            thread["thread_id"],
            "engram",
            input={"messages": [{"role": "user", "content": "hello"}]},
            context={"user_id": "studio-user", "recall": {"k": -1}},
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
