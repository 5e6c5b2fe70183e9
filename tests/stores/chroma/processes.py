"""Processes that share one engram data folder ($ENGRAM_DATA_DIR), for the multi-process tests.

Each prints one JSON line on stdout saying what it did, so the test can account for every write:

    python tests/stores/chroma/processes.py app TURNS USER [PROBE]  # the graph app: TURNS turns; then, once
                                                      # $ENGRAM_DATA_DIR/others.done exists, PROBE
    python tests/stores/chroma/processes.py writer NAME COUNT     # COUNT puts through ChromaStore, then reads
    python tests/stores/chroma/processes.py reader                # searches until others.done exists
    python tests/stores/chroma/processes.py upserter USER COUNT AT  # at wall-clock AT, COUNT memories
                                                      # written one by one (the same texts in each)
    python tests/stores/chroma/processes.py claimer USER COUNT NAME RACERS MEETING
                                                      # with the other RACERS, claims the abandoned
                                                      # jobs job-0 ... job-COUNT-1; stays alive
                                                      # until MEETING/checked exists
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from pathlib import Path

from langchain_core.messages import HumanMessage

NAMESPACE = ("shared", "items")


def app(turns: int, user: str, probe: str | None = None) -> dict:
    """The graph app on the default store and checkpointer, consolidating every 5 turns; with a
    `probe`, one more turn once the other processes are done, reporting what it recalled."""
    from fakes import RecordingChatModel

    from engram.graph.builder import compile_graph
    from engram.nodes.context import Context, Extraction, Recall

    model = RecordingChatModel(messages=itertools.cycle(["Noted, thanks."]))
    graph = compile_graph(model)
    config = {"configurable": {"thread_id": f"app-{user}"}}
    context = Context(
        user_id=user, extraction=Extraction(every_turns=5), recall=Recall(timeout_ms=30_000)
    )
    failed: list[list[dict]] = []
    recalled: list[int] = []
    for turn in range(turns):
        text = f"I prefer to keep project number {turn} notes in the folder named tidepool{turn}"
        out = graph.invoke({"messages": [HumanMessage(text)]}, config, context=context)
        if out.get("failures"):
            failed.append(out["failures"])
        recalled.append(len(out["built_context"]["memory_ids"]))
    result: dict = {"turns": turns, "failed": failed, "recalled": recalled}
    if probe:
        done = Path(os.environ["ENGRAM_DATA_DIR"]) / "others.done"
        while not done.exists():
            time.sleep(0.1)
        out = graph.invoke({"messages": [HumanMessage(probe)]}, config, context=context)
        result["probe_failures"] = out.get("failures", [])
        result["probe_memories"] = out["built_context"]["memory_block"]
    return result


def writer(name: str, count: int) -> dict:
    """`count` puts of distinct items, each read back by key and found by a search."""
    from engram.stores.chroma.store import make_store

    store = make_store()
    missing = []
    for n in range(count):
        key = f"{name}-{n}"
        store.put(NAMESPACE, key, {"content": f"note {n} written by {name} about quartz{n}"})
        if store.get(NAMESPACE, key) is None:
            missing.append(key)
        hits = store.search(NAMESPACE, query=f"quartz{n} {name}", limit=50)
        if key not in {hit.key for hit in hits}:
            missing.append(f"search:{key}")
    return {"written": count, "missing": missing}


def opener(name: str, at: float) -> dict:
    """Opens the store at wall-clock time `at` (beside other openers of a new folder), then
    writes one item."""
    import time

    from engram.stores.chroma.store import make_store

    time.sleep(max(0.0, at - time.time()))
    store = make_store()
    store.put(NAMESPACE, name, {"content": f"opened by {name}"})
    return {"opened": name}


def upserter(user: str, count: int, at: float) -> dict:
    """From wall-clock time `at`, `count` candidates written one call each through the write
    policy; processes given the same arguments write the same texts, racing."""
    from engram.stores.chroma.store import make_store
    from engram.stores.memory.long_term import LongTermMemory
    from engram.stores.memory.types import MemoryCandidate

    memory = LongTermMemory(make_store())
    time.sleep(max(0.0, at - time.time()))
    actions = []
    for n in range(count):
        text = f"I keep the spare key number {n} in the drawer labelled walnut{n}"
        [written] = memory.upsert(user, [MemoryCandidate(content=text, category="fact")])
        actions.append(written.action)
    return {"actions": actions}


def claimer(user: str, count: int, name: str, racers: int, meeting: str) -> None:
    """Once `racers` claimers have loaded their store (a `NAME.ready` file each in `meeting`),
    claims each of the jobs `job-0` ... of `user` that is still abandoned, prints the ones it
    won, and stays alive until `meeting/checked` exists: a claim whose process is gone is
    abandoned by design (`jobs.is_abandoned`), so a claimer that exited first would hand its
    jobs over to the other. Abandoned as of the start: on a slow machine a claim's 60-second
    lease may run out before the other process reaches the job."""
    from datetime import UTC, datetime

    from engram.stores.chroma.store import make_store
    from engram.stores.memory.jobs import claim, is_abandoned

    folder = Path(meeting)
    deadline = time.monotonic() + 900
    store = make_store()
    (folder / f"{name}.ready").touch()
    while len(list(folder.glob("*.ready"))) < racers:  # every claimer is ready: they race
        if time.monotonic() > deadline:
            raise SystemExit("the other claimers never got ready")
        time.sleep(0.005)
    start = datetime.now(UTC)
    won = [
        job
        for job in (f"job-{n}" for n in range(count))
        if claim(store, user, job, kind="consolidate", thread_id="t",
                 claimable=lambda value: value is None or is_abandoned(value, now=start))
    ]
    print(json.dumps({"won": won}), flush=True)
    while not (folder / "checked").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    store.close()


def reader() -> dict:
    """Searches (vector, plain, hybrid) and namespace listings until the writers are done
    (`$ENGRAM_DATA_DIR/others.done` exists), checking that they agree with each other."""
    from engram.stores.chroma.store import make_store
    from engram.stores.lexical.hybrid import HybridSearchOp

    store = make_store()
    reads = 0
    seen = 0
    done = Path(os.environ["ENGRAM_DATA_DIR"]) / "others.done"
    while not reads or not done.exists():
        listed = store.search(NAMESPACE, limit=1000)  # items only grow: later reads see more
        hits = store.search(NAMESPACE, query="quartz note", limit=10)
        [hybrid] = store.batch([HybridSearchOp(NAMESPACE, "quartz note", limit=10)])
        namespaces = store.list_namespaces(prefix=("shared",))
        reads += 1
        seen = max(seen, len(listed))
        wanted = min(10, len(listed))
        if len(hits) < wanted or len(hybrid) < wanted or (listed and namespaces != [NAMESPACE]):
            raise AssertionError(f"{len(hits)} hits, {len(hybrid)} hybrid, {len(listed)} items")
    return {"reads": reads, "seen": seen}


if __name__ == "__main__":
    role, *args = sys.argv[1:]
    if role == "app":
        result = app(int(args[0]), args[1], *args[2:])
    elif role == "writer":
        result = writer(args[0], int(args[1]))
    elif role == "reader":
        result = reader()
    elif role == "claimer":
        claimer(args[0], int(args[1]), args[2], int(args[3]), args[4])
        raise SystemExit(0)  # it printed its line itself, before waiting
    elif role == "upserter":
        result = upserter(args[0], int(args[1]), float(args[2]))
    elif role == "opener":
        result = opener(args[0], float(args[1]))
    else:
        raise SystemExit(f"unknown role {role!r}: use app, writer, reader or opener")
    print(json.dumps(result))
