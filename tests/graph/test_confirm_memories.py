"""Confirmation mode (`Context.confirm_memories`): what extraction finds waits for the user's
approval, is never recalled while it waits, is saved through the write policy when approved (by
the agent's tool, the CLI or Python) and leaves no trace in the data folder when rejected."""

from __future__ import annotations

import itertools
import json
import uuid
from pathlib import Path

import pytest
from conftest import files_holding
from fakes import NGramEmbeddings, RecordingChatModel, ToolCallingChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from typer.testing import CliRunner

from engram.graph import Context, Recall, compile_graph
from engram.graph.cli import app as cli_app
from engram.graph.tools import memory_tools
from engram.stores.chroma.store import ChromaStore
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.pending import MAX_PENDING, PendingMemories
from engram.stores.memory.types import MemoryCandidate

INDEX = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
STRICT = "I prefer TypeScript's strict mode for every project"
IGUANA = "I have an iguana named Wobbleton"


def _config() -> dict:
    return {"configurable": {"thread_id": str(uuid.uuid4())}}


def _prompt(model: RecordingChatModel) -> str:
    """The system prompt of the model's last call (what `start` recalled)."""
    return str(model.calls[-1][0].content)


def _end_session(graph, config, ctx, *said: str) -> list[dict]:
    for text in said:
        graph.invoke({"messages": [HumanMessage(text)]}, config, context=ctx)
    return [
        e for e in graph.stream({"end_session": True}, config, context=ctx, stream_mode="custom")
        if isinstance(e, dict) and e.get("event")
    ]


def test_extracted_memories_wait_are_not_recalled_and_are_saved_when_approved() -> None:
    store = InMemoryStore(index=INDEX)
    model = RecordingChatModel(messages=itertools.cycle([AIMessage("noted.")]))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    # archived messages are the chat history, recalled unless turned off: off here, to see
    # that nothing of what waits comes back as a memory
    ctx = Context(user_id="alice", confirm_memories=True, recall=Recall(episodes=0))
    config = _config()
    events = _end_session(graph, config, ctx, STRICT, IGUANA)

    pending = PendingMemories(store).list("alice")
    assert len(pending) == 2 and LongTermMemory(store).list("alice") == []
    announced = [e for e in events if e["event"] == "memory.pending"]
    assert {e["memory_id"] for e in announced} == {p.id for p in pending}
    assert all(e["question"].startswith("Should I remember this?") for e in announced)
    assert all(e["thread_id"] == config["configurable"]["thread_id"] for e in announced)
    assert not [e for e in events if e["event"] == "memory.created"]
    state = graph.get_state(config).values
    assert sorted(state["consolidation"]["pending_ids"]) == sorted(p.id for p in pending)

    # a new thread recalls nothing of what waits
    graph.invoke({"messages": [HumanMessage("what's my iguana called?")]}, _config(), context=ctx)
    assert "Wobbleton" not in _prompt(model)

    # approved: written through the write policy, then recalled
    iguana = next(p for p in pending if "iguana" in p.content)
    result = PendingMemories(store).approve("alice", iguana.id)
    assert result.action == "created" and "Wobbleton" in result.memory.content
    assert [p.content for p in PendingMemories(store).list("alice")] != []
    assert iguana.id not in {p.id for p in PendingMemories(store).list("alice")}
    graph.invoke({"messages": [HumanMessage("what's my iguana called?")]}, _config(), context=ctx)
    assert "Wobbleton" in _prompt(model)

    # the same words again in a later session: already a memory, not asked again
    again = _end_session(graph, _config(), ctx, IGUANA)
    assert not [e for e in again if e["event"] == "memory.pending"]


def test_without_confirmation_nothing_waits() -> None:
    store = InMemoryStore(index=INDEX)
    graph = compile_graph(RecordingChatModel(messages=itertools.cycle([AIMessage("noted.")])), store=store, checkpointer=InMemorySaver())
    events = _end_session(graph, _config(), Context(user_id="alice"), IGUANA)
    assert [e["event"] for e in events if e["event"].startswith("memory.")] == ["memory.created"]
    assert PendingMemories(store).list("alice") == []


def test_proposing_redacts_secrets_skips_repeats_and_updates_and_keeps_users_apart() -> None:
    store = InMemoryStore(index=INDEX)
    queue = PendingMemories(store)
    key = "sk-proj-Y4qw2oF5WJKBQx4BOuPhFAKEw0MZOqSCJNViCRUCIlsmlHwq"
    first = queue.propose("alice", [
        MemoryCandidate(content=f"My OpenAI key is {key}", category="project"),  # only a secret
        MemoryCandidate(content=f"Alice deploys the bot to Fly.io, with the OpenAI key {key}",
                        category="project", replaces=f"the bot on Heroku with key {key}"),
        MemoryCandidate(content=IGUANA, category="fact"),
        MemoryCandidate(content=IGUANA, category="fact"),
        MemoryCandidate(content="Likes naps", category="preference", importance=0.1),
        # a statement only the memory model may write, as the update of a memory
        MemoryCandidate(content="the iguana moved to the big tank", category="fact",
                        update_only=True),
    ])
    assert [p.content for p in first] == [
        "Alice deploys the bot to Fly.io, with the OpenAI key [REDACTED]", IGUANA,
    ]
    assert key not in json.dumps([p.model_dump() for p in queue.list("alice")])
    assert queue.propose("alice", [MemoryCandidate(content=IGUANA, category="fact")]) == []
    assert queue.list("bob") == [] and queue.approve("bob", first[0].id) is None
    assert queue.reject("bob", first[0].id) is False and len(queue.list("alice")) == 2
    assert queue.approve("alice", "no-such-id") is None
    ids = [p.id for p in first]
    assert queue.reject_many("alice", [*ids, "no-such-id", ids[0]]) == ids
    assert queue.list("alice") == []


def test_a_user_who_never_answers_keeps_the_newest_pending_memories() -> None:
    queue = PendingMemories(InMemoryStore())
    for start in range(0, MAX_PENDING + 20, 100):
        queue.propose("alice", [
            MemoryCandidate(content=f"Alice's fact number {i}", category="fact")
            for i in range(start, min(start + 100, MAX_PENDING + 20))
        ])
    kept = queue.list("alice")
    assert len(kept) == MAX_PENDING
    dropped = {f"Alice's fact number {i}" for i in range(MAX_PENDING + 20)} - {
        p.content for p in kept
    }
    assert len(dropped) == 20 and all(int(text.split()[-1]) < 100 for text in dropped)


@pytest.mark.parametrize("answer", ["save", "discard"])
async def test_the_agent_saves_or_discards_as_the_user_answers(answer: str, tmp_path: Path) -> None:
    store = ChromaStore(path=tmp_path / "chroma", index=INDEX)
    try:
        [waiting] = PendingMemories(store).propose(
            "alice", [MemoryCandidate(content=IGUANA, category="fact")]
        )
        assert files_holding(tmp_path, "Wobbleton")
        model = ToolCallingChatModel(messages=iter([
            AIMessage("", tool_calls=[{"name": "confirm_memory", "args": {}, "id": "c1"}]),
            AIMessage("", tool_calls=[{"name": "confirm_memory", "id": "c2", "args": {
                "memory_id": waiting.id, "save": answer == "save"}}]),
            AIMessage("Done."),
        ]))
        graph = compile_graph(model, store=store, checkpointer=InMemorySaver(),
                              tools=memory_tools(confirm=True))
        config = _config()
        events = [
            e async for e in graph.astream(
                {"messages": [HumanMessage("yes, keep that" if answer == "save" else "no")]},
                config, context=Context(user_id="alice"), stream_mode="custom",
            )
        ]
        messages = (await graph.aget_state(config)).values["messages"]
        listed = json.loads(messages[2].content)
        assert listed == [{"id": waiting.id, "content": IGUANA, "category": "fact"}]
        assert PendingMemories(store).list("alice") == []
        if answer == "save":
            assert [e["event"] for e in events] == ["memory.created"]
            assert [m.content for m in LongTermMemory(store).list("alice")] == [IGUANA]
        else:
            assert events == [
                {"event": "memory.deleted", "user_id": "alice", "memory_id": waiting.id}
            ]
            assert LongTermMemory(store).list("alice") == []
            assert files_holding(tmp_path, "Wobbleton") == []
    finally:
        store.close()


def test_the_cli_lists_approves_and_rejects(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ENGRAM_CHROMA_URL", raising=False)
    from engram.stores.chroma.store import default_index

    with ChromaStore(path=tmp_path / "chroma", index=default_index()) as store:
        PendingMemories(store).propose("alice", [
            MemoryCandidate(content=STRICT, category="preference"),
            MemoryCandidate(content=IGUANA, category="fact"),
        ])
    runner = CliRunner()

    def cli(*args: str, code: int = 0):
        result = runner.invoke(cli_app, ["memory", *args])
        assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
        return result

    waiting = json.loads(cli("pending", "--user", "alice", "--json").stdout)
    assert sorted(p["content"] for p in waiting) == sorted([STRICT, IGUANA])
    assert "[fact] I have an iguana" in cli("pending", "--user", "alice").stdout
    strict = next(p["id"] for p in waiting if p["content"] == STRICT)
    iguana = next(p["id"] for p in waiting if p["content"] == IGUANA)
    saved = json.loads(cli("approve", strict[:8], "--user", "alice", "--json").stdout)
    assert saved[0]["action"] == "created" and saved[0]["pending_id"] == strict
    cli("approve", "--user", "alice", code=2)  # neither ids nor --all
    cli("approve", "", "--user", "alice", code=2)
    cli("reject", iguana, "--user", "bob", code=1)  # not bob's
    assert json.loads(cli("reject", "--all", "--user", "alice", "--json").stdout) == {
        "rejected": [iguana]
    }
    assert json.loads(cli("pending", "--user", "alice", "--json").stdout) == []
    listed = json.loads(cli("list", "--user", "alice", "--json").stdout)
    assert [m["content"] for m in listed] == [STRICT]
    assert files_holding(tmp_path, "Wobbleton") == []
