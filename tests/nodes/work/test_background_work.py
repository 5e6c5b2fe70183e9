"""Memory-model work after the reply (`Context.memory_work`), with the embedded ChromaStore and
the SQLite checkpointer: a turn that consolidates or compacts returns while a deliberately slow
memory model still works; the next turn applies the result; a process killed mid-job is
resumed by the next one; the inline option waits as before; the middleware does the same."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

import chromadb
import pytest
from conftest import TESTS
from fakes import GatedMemoryModel, NGramEmbeddings, RecordingChatModel
from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langgraph.store.base import BaseStore

from engram.graph import (
    Compaction,
    Context,
    EngramMiddleware,
    Extraction,
    compile_graph,
    resume_memory_work,
)
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.nodes.start import ContextOverflowError
from engram.nodes.work.background import wait_for_memory_work
from engram.stores.chroma.store import ChromaStore
from engram.stores.memory.jobs import job_namespace
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.users import delete_user

SCRIPT = Path(__file__).with_name("background_process.py")
NO_COMPACTION = Compaction(message_threshold=1000, token_threshold=None)
TEA = {"content": "I always drink green tea in the morning.", "category": "preference",
       "importance": 0.9}
REVIEWED_TEA = {"reviews": [{"n": 1, "keep": True, "category": "preference"}]}
"""The memory model's review of the one candidate the rules propose for the tea message (kept
in the user's words, `TEA["content"]`)."""


@pytest.fixture
def store(tmp_path) -> ChromaStore:
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    chroma = ChromaStore(
        chromadb.PersistentClient(path=str(tmp_path / "chroma")), collection="background", index=index
    )
    yield chroma
    chroma.close()


@pytest.fixture
def saver(tmp_path) -> ThreadedSqliteSaver:
    return ThreadedSqliteSaver.from_path(tmp_path / "checkpoints.sqlite")


@pytest.fixture
def memory_model() -> GatedMemoryModel:
    model = GatedMemoryModel(structured_responses=[REVIEWED_TEA])
    yield model
    model.gate.set()  # never leave a job blocked for the next test
    wait_for_memory_work(timeout=30)


def _graph(memory_model: Any, store: BaseStore, saver: ThreadedSqliteSaver):
    model = RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
    return compile_graph(model, memory_model=memory_model, store=store, checkpointer=saver)


def _agent(memory_model: Any, store: BaseStore, saver: ThreadedSqliteSaver, model: Any = None):
    model = model or RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
    return create_agent(
        model,
        middleware=[EngramMiddleware(memory_model=memory_model)],
        store=store,
        checkpointer=saver,
        context_schema=Context,
    )


def _turn(graph: Any, text: str, config: dict, ctx: Context) -> dict:
    return graph.invoke({"messages": [HumanMessage(text)]}, config, context=ctx)


def _jobs(store: BaseStore, user: str) -> list[Any]:
    return store.search(job_namespace(user), limit=100)


def test_a_consolidating_turn_returns_before_the_slow_model_and_the_next_turn_applies_it(
    store, saver, memory_model
) -> None:
    graph = _graph(memory_model, store, saver)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(
        user_id="bg", extraction=Extraction(every_turns=2), compaction=NO_COMPACTION
    )  # "auto"
    _turn(graph, "Hello there.", config, ctx)

    out = _turn(graph, "I always drink green tea in the morning.", config, ctx)

    assert out["messages"][-1].content == "reply 1"  # the reply came back
    assert memory_model.entered.wait(10)  # the job is inside the model call...
    assert not memory_model.gate.is_set()  # ...which cannot have answered yet
    [job] = out["memory_jobs"]
    assert job["kind"] == "consolidate" and "consolidation" not in out
    [entry] = _jobs(store, "bg")
    assert entry.value["status"] == "pending" and entry.key == job["id"]
    assert "tea" not in json.dumps(entry.value)  # the journal holds no message text
    assert LongTermMemory(store).search("bg", "tea") == []

    memory_model.gate.set()
    assert wait_for_memory_work(timeout=30)
    assert [m.memory.content for m in LongTermMemory(store).search("bg", "green tea")] == [
        TEA["content"]
    ]
    events = list(
        graph.stream(
            {"messages": [HumanMessage("What do I drink?")]}, config, context=ctx,
            stream_mode="custom",
        )
    )
    state = graph.get_state(config).values
    assert state["consolidation"]["trigger"] == "turns"
    assert state["consolidation"]["mode"] == "llm"
    assert state["memory_jobs"] == []
    assert TEA["content"] in state["built_context"]["memory_block"]
    assert [e["event"] for e in events] == ["memory.created"]
    assert _jobs(store, "bg") == []  # applied, then removed from the journal


async def test_async_runs_hand_the_work_to_the_worker_too(store, saver, memory_model) -> None:
    graph = _graph(memory_model, store, saver)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(user_id="async", extraction=Extraction(every_turns=1), compaction=NO_COMPACTION)

    out = await graph.ainvoke(
        {"messages": [HumanMessage("I always drink green tea in the morning.")]}, config, context=ctx
    )

    assert [j["kind"] for j in out["memory_jobs"]] == ["consolidate"]
    assert memory_model.entered.wait(10) and not memory_model.gate.is_set()
    memory_model.gate.set()
    assert wait_for_memory_work(timeout=30)
    out = await graph.ainvoke({"messages": [HumanMessage("Tea?")]}, config, context=ctx)
    assert out["consolidation"]["memory_ids"]
    assert TEA["content"] in out["built_context"]["memory_block"]


def test_a_turn_that_fails_after_collecting_leaves_the_job_for_the_next_turn(
    store, saver, memory_model
) -> None:
    graph = _graph(memory_model, store, saver)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(
        user_id="bg",
        extraction=Extraction(every_turns=1),
        context_window=2048,
        compaction=NO_COMPACTION,
    )
    _turn(graph, "I always drink green tea in the morning.", config, ctx)
    memory_model.gate.set()
    assert wait_for_memory_work(timeout=30)
    [done] = _jobs(store, "bg")
    assert done.value["status"] == "done"

    with pytest.raises(ContextOverflowError):  # `start` collects the job, then fails
        _turn(graph, "tea " * 5000, config, ctx)

    assert [j.key for j in _jobs(store, "bg")] == [done.key]  # still journaled...
    assert len(memory_model.structured_calls) == 1  # ...and not run again
    events = list(
        graph.stream(
            {"messages": [HumanMessage("What do I drink?")]}, config, context=ctx,
            stream_mode="custom",
        )
    )
    assert [e["event"] for e in events] == ["memory.created"]  # applied now, from the journal
    assert done.key not in [j["id"] for j in graph.get_state(config).values["memory_jobs"]]
    assert done.key not in [j.key for j in _jobs(store, "bg")]


def test_a_background_compaction_folds_at_the_next_turn_with_nothing_lost(
    store, saver, memory_model
) -> None:
    graph = _graph(memory_model, store, saver)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(
        user_id="fold",
        compaction=Compaction(message_threshold=6, keep_recent_messages=2),
        extraction=Extraction(every_turns=100),
    )
    for i in range(3):
        out = _turn(graph, f"note {i}", config, ctx)
    assert [j["kind"] for j in out["memory_jobs"]] == ["compact"]
    assert len(out["messages"]) == 6 and "summary" not in out  # nothing folded yet
    memory_model.gate.set()
    assert wait_for_memory_work(timeout=30)

    events = list(
        graph.stream(
            {"messages": [HumanMessage("note 3")]}, config, context=ctx, stream_mode="custom"
        )
    )

    state = graph.get_state(config).values
    assert state["summary"] == "SUMMARY 1"
    assert [m.content for m in state["messages"]] == ["note 2", "reply 2", "note 3", "reply 3"]
    assert state["evicted_message_count"] == 4
    assert [e["event"] for e in events] == ["context.compacted"]
    assert state["built_context"]["used_summary"]
    # the folded messages are archived and queued for extraction (which this turn did, inline
    # rules would have; here the memory model extracts in the background again)
    assert len(store.search(("episodes", "fold"), limit=10)) == 4
    assert [j["kind"] for j in state["memory_jobs"]] == ["consolidate"]


def test_the_inline_option_waits_for_the_work_as_before(store, saver, memory_model) -> None:
    graph = _graph(memory_model, store, saver)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(
        user_id="in",
        extraction=Extraction(every_turns=1),
        memory_work="inline",
        compaction=NO_COMPACTION,
    )
    memory_model.gate.set()

    out = _turn(graph, "I always drink green tea in the morning.", config, ctx)

    assert out["consolidation"]["memory_ids"] and not out.get("memory_jobs")
    assert _jobs(store, "in") == []
    assert LongTermMemory(store).search("in", "green tea")[0].memory.content == TEA["content"]


def test_a_session_end_waits_for_the_threads_jobs_and_applies_them(
    store, saver, memory_model
) -> None:
    graph = _graph(memory_model, store, saver)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(user_id="end", extraction=Extraction(every_turns=1), compaction=NO_COMPACTION)
    out = _turn(graph, "I always drink green tea in the morning.", config, ctx)
    assert out["memory_jobs"]
    memory_model.gate.set()

    out = graph.invoke({"end_session": True}, config, context=ctx)

    assert out["memory_jobs"] == [] and _jobs(store, "end") == []
    assert LongTermMemory(store).search("end", "green tea")[0].memory.content == TEA["content"]


def test_deleting_the_user_removes_their_pending_jobs_and_what_a_running_one_writes(store, saver, memory_model) -> None:
    graph = _graph(memory_model, store, saver)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(
        user_id="gone@example.com", extraction=Extraction(every_turns=1), compaction=NO_COMPACTION
    )
    _turn(graph, "I always drink green tea in the morning.", config, ctx)
    assert len(_jobs(store, "gone@example.com")) == 1

    assert memory_model.entered.wait(10)  # the job runs, blocked in the model

    report = delete_user(store, "gone@example.com", checkpointer=saver)

    assert report.deleted.get("memory_jobs") == 1
    assert _jobs(store, "gone@example.com") == []
    memory_model.gate.set()  # the job ends after the deletion: what it wrote is removed again
    assert wait_for_memory_work(timeout=30)
    assert LongTermMemory(store).list("gone@example.com", include_forgotten=True) == []
    assert _jobs(store, "gone@example.com") == []


def test_an_incognito_run_journals_nothing(store, saver, memory_model) -> None:
    graph = _graph(memory_model, store, saver)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(
        user_id="inc",
        extraction=Extraction(every_turns=1),
        incognito=True,
        compaction=Compaction(message_threshold=2),
    )
    memory_model.gate.set()
    for text in ("I always drink green tea in the morning.", "My pw is hunter2"):
        out = _turn(graph, text, config, ctx)
    assert not out.get("memory_jobs")
    assert _jobs(store, "inc") == []


def test_the_middleware_consolidates_after_the_run_in_the_background(
    store, saver, memory_model
) -> None:
    model = RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
    agent = _agent(memory_model, store, saver, model)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(user_id="agent", extraction=Extraction(every_turns=1), compaction=NO_COMPACTION)

    out = agent.invoke(
        {"messages": [HumanMessage("I always drink green tea in the morning.")]}, config, context=ctx
    )

    assert out["messages"][-1].content == "reply 0"
    assert memory_model.entered.wait(10) and not memory_model.gate.is_set()
    assert [j["kind"] for j in out["memory_jobs"]] == ["consolidate"]
    memory_model.gate.set()
    assert wait_for_memory_work(timeout=30)
    events = list(
        agent.stream(
            {"messages": [HumanMessage("What do I drink?")]}, config, context=ctx,
            stream_mode="custom",
        )
    )
    state = agent.get_state(config).values
    assert state["consolidation"]["trigger"] == "turns"
    assert "memory.created" in [e["event"] for e in events]
    assert TEA["content"] in state["built_context"]["memory_block"]
    assert model.calls[-1][0].content.count(TEA["content"]) == 1  # the model was given it


class ThreadRecordingModel(GatedMemoryModel):
    """Records the thread of each sync call, and any async call."""

    threads: list[str] = []
    async_calls: int = 0

    def _generate(self, *args: Any, **kwargs: Any):  # type: ignore[override]
        self.threads.append(threading.current_thread().name)
        return super()._generate(*args, **kwargs)

    async def _agenerate(self, *args: Any, **kwargs: Any):  # type: ignore[override]
        self.async_calls += 1
        return await super()._agenerate(*args, **kwargs)


@pytest.mark.parametrize("mode", ["inline", "background"])
def test_the_memory_model_is_never_called_through_its_async_api(store, saver, mode) -> None:
    """A model's async HTTP client is bound to one event loop: the middleware's compaction
    (inline, before the model call) and its consolidation call the memory model's sync API, on
    engram's call threads, so no loop ever holds its client."""
    memory_model = ThreadRecordingModel()
    memory_model.threads = []
    memory_model.gate.set()
    agent = _agent(memory_model, store, saver)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(
        user_id="loops",
        compaction=Compaction(message_threshold=4, keep_recent_messages=2),
        memory_work=mode,
    )
    for i in range(5):
        agent.invoke({"messages": [HumanMessage(f"note {i}")]}, config, context=ctx)
    agent.invoke({"messages": [], "end_session": True}, config, context=ctx)
    assert wait_for_memory_work(timeout=30)

    assert agent.get_state(config).values["summary"].startswith("SUMMARY")
    assert memory_model.threads
    assert all(t.startswith("engram-model-call") for t in memory_model.threads)
    assert memory_model.async_calls == 0


def test_resuming_at_start_up_drops_an_entry_its_thread_never_recorded(store, saver, memory_model) -> None:
    graph = _graph(memory_model, store, saver)
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    ctx = Context(user_id="bg", compaction=NO_COMPACTION)
    _turn(graph, "Hello there.", config, ctx)
    # the entry of a process that died inside the node that journaled it: its lease ran out
    # and the thread's state never recorded it
    store.put(job_namespace("bg"), "orphan", {
        "kind": "consolidate", "thread_id": config["configurable"]["thread_id"],
        "status": "pending", "owner": "elsewhere:1:x", "lease_until": "2000-01-01T00:00:00+00:00",
    }, index=False)
    before = graph.get_state(config).values["messages"]

    assert resume_memory_work(graph) == [config["configurable"]["thread_id"]]

    assert _jobs(store, "bg") == []
    assert graph.get_state(config).values["messages"] == before
    assert resume_memory_work(graph) == []  # nothing left to resume


@pytest.mark.parametrize("resume", ["resume", "sweep"])
def test_a_job_of_a_killed_process_is_resumed_by_the_next_one(tmp_path, resume) -> None:
    """"resume": by its thread's next turn; "sweep": by `resume_memory_work` at the next
    process's start, with no turn at all."""
    env = {
        **os.environ,
        "ENGRAM_DATA_DIR": str(tmp_path),
        "PYTHONPATH": str(TESTS),
    }
    first = subprocess.Popen(
        [sys.executable, str(SCRIPT), "start"], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        line = first.stdout.readline()  # printed once the turn returned, its model call blocked
        assert line, "the first process ended without reporting its turn"
        started = json.loads(line)
        assert started["jobs"] == ["consolidate"] and started["model_entered"]
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()

    done = subprocess.run(
        [sys.executable, str(SCRIPT), resume],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    resumed = json.loads(done.stdout.splitlines()[-1])
    assert resumed["memories"] == [TEA["content"]]
    [killed] = started["job_ids"]
    assert killed not in resumed["jobs_in_state"] and killed not in resumed["jobs_in_store"]
    if resume == "resume":
        assert resumed["consolidation"]["trigger"] == "turns"
        assert resumed["consolidation"]["messages"] == 4  # the killed turn's two exchanges
        assert TEA["content"] in resumed["recalled"]
    else:
        assert resumed["resumed_threads"] == ["crash-thread"]
        assert len(resumed["messages"]) == 4  # no turn was added
    # nothing of the killed turn was lost: its messages are all in the thread
    assert resumed["messages"][:4] == [
        "Hello there.", "reply 0", "I always drink green tea in the morning.", "reply 1"
    ]
