"""The app closes what it opened: after graphs on the embedded data folder (Chroma, the BM25
index, the SQLite checkpointer) ran turns and ended their sessions, and `engram memory`
commands ran in-process, the process's open descriptors (/proc/self/fd) are back to their
count."""

from __future__ import annotations

import gc
import itertools
import os
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from fakes import RecordingChatModel
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore
from typer.testing import CliRunner

from engram.graph import Compaction, Context, compile_graph
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.graph.cli import app
from engram.stores.chroma.store import make_store

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/fd").is_dir(), reason="lists open files from /proc"
)
runner = CliRunner()


def open_files(at_most: int | None = None) -> dict[str, str]:
    """This process's open descriptors and what each one is, after a garbage collection; with
    `at_most`, waits up to 2 s for the count to come down to it (a thread another test left
    running may hold a file for a moment)."""
    for _ in range(20):
        gc.collect()
        found = {}
        for fd in os.listdir("/proc/self/fd"):
            try:
                found[fd] = os.readlink(f"/proc/self/fd/{fd}")
            except OSError:  # the listing's own descriptor is gone by now
                continue
        if at_most is None or len(found) <= at_most:
            break
        time.sleep(0.1)
    return found


def _model() -> RecordingChatModel:
    return RecordingChatModel(messages=(f"noted {i}" for i in itertools.count()))


def _cli(*args: str) -> str:
    result = runner.invoke(app, ["memory", *args])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    return result.stdout


def _round(n: int) -> None:
    """A session on the default graph, another process's write (a reload), a second session
    on a graph closed by hand, then commands."""
    ctx = Context(
        user_id="dana", compaction=Compaction(message_threshold=4, keep_recent_messages=2)
    )
    with compile_graph(_model()) as graph:
        config = {"configurable": {"thread_id": f"dana-{n}"}}
        for text in ("I'm Dana and I teach maths in Leeds.", "I prefer tea over coffee."):
            graph.invoke({"messages": [HumanMessage(text)]}, config, context=ctx)
        with make_store() as other:  # another process's store on the same folder
            other.put(("notes", "dana"), str(n), {"content": f"note {n}"})
        graph.invoke({"messages": [HumanMessage("What do I drink?")]}, config, context=ctx)
        graph.invoke({"end_session": True}, config, context=ctx)
    graph = compile_graph(_model())
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke({"messages": [HumanMessage("Hello again.")]}, config, context=ctx)
    graph.invoke({"end_session": True}, config, context=ctx)
    graph.close()
    _cli("add", "-u", "dana", f"Dana plays the cello, since {2000 + n}")
    for args in (["list"], ["search", "cello"], ["stats"]):
        _cli(*args, "-u", "dana")


def test_graphs_and_commands_leave_no_file_open(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ENGRAM_CHROMA_URL", raising=False)
    monkeypatch.delenv("ENGRAM_POSTGRES_URL", raising=False)
    _round(0)  # warm-up: what the process opens once (imports, worker threads, models)
    before = open_files()

    for n in range(1, 4):
        _round(n)

    after = open_files(at_most=len(before))
    # nothing more is open than before (an earlier test's connection may close meanwhile)
    opened = Counter(after.values()) - Counter(before.values())
    assert len(after) <= len(before) and not opened, sorted(opened)
    assert not [f for f in after.values() if f.startswith(str(tmp_path))]
    assert "cello" in _cli("list", "-u", "dana")  # what was written is all there


def test_close_closes_only_what_compile_graph_opened(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ENGRAM_CHROMA_URL", raising=False)
    saver = ThreadedSqliteSaver.from_path(tmp_path / "mine.sqlite")
    with compile_graph(_model(), checkpointer=saver) as graph:  # the default store
        config = {"configurable": {"thread_id": "t"}}
        graph.invoke({"messages": [HumanMessage("hi")]}, config)
        copy = graph.with_config(tags=["copied"])
        assert copy.opened == graph.opened == (graph.store,)
    assert saver.get_tuple(config) is not None  # still open: it is the caller's
    with pytest.raises(RuntimeError, match="closed"):
        graph.store.get(("memories", "default"), "m")
    graph.close()  # again: nothing to do
    copy.close()
    with compile_graph(_model(), store=InMemoryStore(), checkpointer=InMemorySaver()) as graph:
        assert graph.opened == ()
    saver.close()
    saver.close()
