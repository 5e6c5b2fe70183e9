"""Several real processes on one embedded data folder (`engram.stores.chroma.process_lock`).

The processes are `tests/stores/chroma/processes.py` (writers, a reader, the graph app) and `engram memory add`,
started with `subprocess`, all on one `$ENGRAM_DATA_DIR`.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import TESTS
from langgraph.store.base import PutOp

from engram.stores.chroma import metadata as md
from engram.stores.chroma.store import make_store
from engram.stores.memory.jobs import job_namespace
from engram.stores.memory.long_term import LongTermMemory

SCRIPT = Path(__file__).with_name("processes.py")
NAMESPACE = ("shared", "items")
ENGRAM = "from engram.graph.cli import main; main()"  # the `engram` console script


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    variables = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    for name in ("ENGRAM_EMBEDDING_MODEL_DIR",):
        if name in os.environ:
            variables[name] = os.environ[name]
    return {**variables, "ENGRAM_DATA_DIR": str(tmp_path), "PYTHONPATH": str(TESTS)}


def start(env: dict[str, str], *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def result(process: subprocess.Popen[str], timeout: float = 240) -> dict:
    stdout, stderr = process.communicate(timeout=timeout)
    assert process.returncode == 0, stderr[-3000:]
    return json.loads(stdout.strip().splitlines()[-1])


def test_two_writers_and_a_reader_account_for_every_write(env, monkeypatch):
    count = 8
    reader = start(env, str(SCRIPT), "reader")
    writers = [start(env, str(SCRIPT), "writer", name, str(count)) for name in ("ann", "bob")]
    written = [result(w) for w in writers]
    Path(env["ENGRAM_DATA_DIR"], "others.done").touch()
    read = result(reader)

    assert written == [{"written": count, "missing": []}] * 2  # each saw its own writes at once
    assert read["reads"] > 0
    monkeypatch.setenv("ENGRAM_DATA_DIR", env["ENGRAM_DATA_DIR"])
    store = make_store()
    keys = {f"{name}-{n}" for name in ("ann", "bob") for n in range(count)}
    assert {item.key for item in store.search(NAMESPACE, limit=100)} == keys
    for key in keys:  # every item has its vector: a search for its own words finds it first
        name, n = key.split("-")
        [best] = store.search(
            NAMESPACE, query=f"note {n} written by {name} about quartz{n}", limit=1
        )
        assert best.key == key
    lexical = store.lexical
    assert lexical is not None
    assert lexical.index.pending() == {}
    assert set(lexical.index.ids(lexical.scope(NAMESPACE))) == {
        md.item_id(NAMESPACE, key) for key in keys
    }


def test_processes_writing_the_same_memories_at_once_store_each_once(env, monkeypatch):
    count = 150  # each write is a duplicate check, then the write: 150 races per process pair
    at = time.time() + 8  # both start together, once each has loaded its store
    racers = [start(env, str(SCRIPT), "upserter", "dana", str(count), str(at)) for _ in range(2)]
    outcomes = [result(r, timeout=600)["actions"] for r in racers]

    monkeypatch.setenv("ENGRAM_DATA_DIR", env["ENGRAM_DATA_DIR"])
    stored = LongTermMemory(make_store()).list("dana", limit=1000)
    texts = [m.content for m in stored]
    assert len(texts) == len(set(texts)) == count  # no text twice
    assert all(m.current and not m.forgotten for m in stored)
    for first, second in zip(*outcomes, strict=True):  # each write is accounted for
        assert {first, second} <= {"created", "unchanged", "duplicate", "merged"}


def test_processes_claiming_the_same_abandoned_jobs_at_once_each_win_different_ones(
    env, tmp_path, monkeypatch
):
    # The claimers start together once both have loaded their store, and each stays alive until
    # the test has both answers: a claim whose process is gone is abandoned by design
    # (`jobs.is_abandoned`), so a claimer that exited before the other reached its jobs would
    # hand them over, and the other would rightly win them too (what failed this test about once
    # in 8 runs when each claimer exited as soon as it was done).
    count = 200
    monkeypatch.setenv("ENGRAM_DATA_DIR", env["ENGRAM_DATA_DIR"])
    store = make_store()
    gone = {"status": "pending", "owner": "elsewhere:1:dead", "lease_until": "2000-01-01T00:00:00+00:00"}
    store.batch([PutOp(job_namespace("erin"), f"job-{n}", gone, index=False) for n in range(count)])
    store.close()
    meeting = tmp_path / "claimers"
    meeting.mkdir()
    racers = [
        start(env, str(SCRIPT), "claimer", "erin", str(count), f"c{n}", "2", str(meeting))
        for n in range(2)
    ]
    try:
        first, second = (set(json.loads(first_line(r))["won"]) for r in racers)
    finally:
        (meeting / "checked").touch()  # the claimers may exit now
    for racer in racers:
        _, stderr = racer.communicate(timeout=120)
        assert racer.returncode == 0, stderr[-3000:]

    assert not first & second, sorted(first & second)  # no job claimed by both
    assert first | second == {f"job-{n}" for n in range(count)}  # and none left


def first_line(process: subprocess.Popen[str], timeout: float = 600) -> str:
    """The first line `process` writes on stdout (it keeps running)."""
    assert process.stdout is not None
    with selectors.DefaultSelector() as waiting:  # epoll: the suite holds fds past select's 1024
        waiting.register(process.stdout, selectors.EVENT_READ)
        assert waiting.select(timeout=timeout), "the process wrote nothing"
    line = process.stdout.readline()
    if not line:  # it exited without a word
        raise AssertionError(process.communicate(timeout=30)[1][-3000:])
    return line


def test_processes_opening_a_new_folder_at_the_same_moment_all_start(env, tmp_path, monkeypatch):
    # Chroma creates its tables on a folder's first open; unguarded, simultaneous first opens
    # failed about once in 24 ("table collections already exists").
    for attempt in range(3):
        folder_env = {**env, "ENGRAM_DATA_DIR": str(tmp_path / f"new-{attempt}")}
        at = time.time() + 3  # after every interpreter has started and imported engram
        openers = [start(folder_env, str(SCRIPT), "opener", f"p{n}", str(at)) for n in range(4)]
        assert [result(p) for p in openers] == [{"opened": f"p{n}"} for n in range(4)]
        monkeypatch.setenv("ENGRAM_DATA_DIR", folder_env["ENGRAM_DATA_DIR"])
        store = make_store()
        assert sorted(item.key for item in store.search(NAMESPACE, limit=10)) == [
            f"p{n}" for n in range(4)
        ]
        store.close()


def test_graph_app_and_memory_add_side_by_side(env, monkeypatch):
    adds = [
        f"I prefer espresso blend number {n} from the roaster called bluefin{n}" for n in range(3)
    ]
    app = start(env, str(SCRIPT), "app", "6", "alice", "which espresso blend from bluefin2?")
    added = [
        subprocess.run(
            [sys.executable, "-c", ENGRAM, "memory", "add", "--user", "alice", text],
            env=env,
            check=False,
            capture_output=True,
            text=True,
            timeout=240,
        )
        for text in adds
    ]
    Path(env["ENGRAM_DATA_DIR"], "others.done").touch()
    ran = result(app)

    assert [(a.returncode, a.stderr[-2000:]) for a in added] == [(0, "")] * len(adds)
    assert ran["failed"] == [] and ran["probe_failures"] == []
    assert "bluefin2" in ran["probe_memories"]  # the app's next turn recalls the other's write
    monkeypatch.setenv("ENGRAM_DATA_DIR", env["ENGRAM_DATA_DIR"])
    memories = LongTermMemory(make_store()).list("alice")
    contents = "\n".join(m.content for m in memories)
    assert all(f"bluefin{n}" in contents for n in range(len(adds)))
    assert "tidepool" in contents  # the app's consolidations were kept too


def test_a_process_killed_while_holding_the_folder_lets_the_others_go_on(env, monkeypatch):
    monkeypatch.setenv("ENGRAM_DATA_DIR", env["ENGRAM_DATA_DIR"])
    store = make_store()
    store.put(NAMESPACE, "before", {"content": "written before the crash"})
    holder = start(env, "-c", HOLD_AND_HANG)
    assert holder.stdout is not None
    with selectors.DefaultSelector() as waiting:  # epoll: the suite holds fds past select's 1024
        waiting.register(holder.stdout, selectors.EVENT_READ)
        assert waiting.select(timeout=120), "the holding process never wrote"
    assert holder.stdout.readline().strip() == "holding"  # it wrote, then hangs with the lock
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=30)

    store.put(NAMESPACE, "after", {"content": "written after the crash"})  # the lock is free
    assert {i.key for i in store.search(NAMESPACE, query="written during the crash")} == {
        "before",
        "during",
        "after",
    }  # and its write, made before the kill, is seen: this process reloaded


HOLD_AND_HANG = """
import time
from langgraph.store.base import PutOp
from engram.stores.chroma.store import make_store
store = make_store()
with store._folder.hold():
    # the store's own uncoalesced batch, in this thread: `put` would hand the batch to the
    # coalescer's drain thread, which waits for the lock this thread holds
    store._run_batch([PutOp(("shared", "items"), "during", {"content": "written during the crash"})])
    print("holding", flush=True)
    time.sleep(600)
"""
