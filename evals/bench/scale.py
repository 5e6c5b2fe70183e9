"""A data folder at an app's size: `python -m engram.evals.bench scale`.

Builds a folder of N items over M users as an app accrues them (per user: memories, archived
messages, thread-registry entries, background-job entries, pending memories), with real text
(the bundled eval dialogs' messages, each made distinct by a few words and a number) and a
cheap embedding (a random unit vector per text, the same every time), so that building is
fast. Then, in a fresh process on that folder (so that its peak memory is what an app that
opens the folder holds), it measures what an app and its operator do:

- open: `ChromaStore(...)` on the folder;
- first turn: the graph's first turn on a new thread (scripted reply), recall included;
- recall p50 / p95: `LongTermMemory.search` as a turn runs it;
- add, forget: one memory through the write policy, one forgotten;
- delete --all: everything of one user (`delete_user`), with how many items that user had, and
  of that the purge of the folder's files (timed again alone: `VACUUM` costs the folder's size);
- maintain: one maintenance run over one user's memories, with how many items it changed (past
  10,000 memories or 20,000 archived messages, the caps forget and delete the rest);
- export: one user's memory.md;
- users: listing every user with memories;
- peak memory of the measuring process.

Two shapes: "spread" (N items over M users alike) and "one" (one user owns 90% of them). With
`--server`, the same on a `chroma run` server. Each figure's growth between the two largest
sizes is printed beside it.

    python -m engram.evals.bench scale [--sizes 1000,10000,100000] [--users 1000]
                                       [--shapes spread,one] [--server]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from engram.evals.bench.retrieval import LookupEmbeddings

DIMS = 384
QUERIES = 20
MEASURED_USER = "user-0"
"""The user every per-user figure is measured on: in the "one" shape, the one who owns most."""
SHARES = {"memories": 0.45, "episodes": 0.45, "threads": 0.04, "memory_jobs": 0.03,
          "pending_memories": 0.03}
"""How an app's items split by kind (archived messages grow as fast as memories)."""


def index() -> dict[str, Any]:
    """The store's index: a random unit vector per text (`LookupEmbeddings`)."""
    return {"dims": DIMS, "embed": LookupEmbeddings(DIMS), "fields": ["content"]}


# -- building -------------------------------------------------------------------------------------


def texts() -> list[str]:
    """Every message of the bundled eval dialogs."""
    from engram.evals.dialogs.suite import bundled_suite_path, load_suite

    return [
        turn.content
        for dialog in load_suite(bundled_suite_path())
        for session in dialog.sessions
        for turn in session.turns
    ]


def owners(n: int, users: int, shape: str) -> Iterator[str]:
    """The user of each of `n` items: alike over `users`, or 90% to `MEASURED_USER`."""
    rng = random.Random(1)
    for i in range(n):
        if shape == "one" and rng.random() < 0.9:
            yield MEASURED_USER
        else:
            yield f"user-{i % users}"


def build(store: Any, n: int, users: int, shape: str) -> dict[str, int]:
    """Write `n` items into `store`; how many the measured user got."""
    from langgraph.store.base import PutOp

    from engram.stores.memory.jobs import job_namespace
    from engram.stores.memory.types import Memory, hash_put, memory_put
    from engram.stores.namespaces import (
        episode_namespace,
        hash_namespace,
        memory_namespace,
        pending_namespace,
        thread_namespace,
    )

    rng = random.Random(0)
    corpus = texts()
    kinds = list(SHARES)
    weights = list(SHARES.values())
    started = datetime.now(UTC)
    ops: list[Any] = []
    mine = 0
    for i, user in enumerate(owners(n, users, shape)):
        mine += user == MEASURED_USER
        text = f"{rng.choice(corpus)} ({rng.choice(corpus).split()[0]} {i})"
        kind = rng.choices(kinds, weights)[0]
        if kind == "memories":  # written over the last 60 days, as an app writes them
            stamp = (started - timedelta(days=rng.uniform(0, 60))).isoformat()
            memory = Memory.new(text, rng.choice(["preference", "fact", "project", "goal"]),
                                0.7, now=stamp, id=f"m{i}")
            ops += [memory_put(memory_namespace(user), memory),
                    hash_put(hash_namespace(user), f"h{i}", memory.id)]
        elif kind == "episodes":
            value = {"content": f"[2026-06-01] user: {text}", "thread_id": f"t{i % 50}",
                     "message_ids": [f"x{i}"], "role": "user"}
            ops.append(PutOp(episode_namespace(user), f"e{i}", value))
        elif kind == "threads":
            ops.append(PutOp(thread_namespace(user), f"t{i}", {"thread_id": f"t{i}"}, index=False))
        elif kind == "memory_jobs":
            ops.append(PutOp(job_namespace(user), f"j{i}", {"id": f"j{i}", "status": "done",
                                                             "thread_id": f"t{i % 50}"}, index=False))
        else:
            ops.append(PutOp(pending_namespace(user), f"p{i}", {"id": f"p{i}", "content": text},
                             index=False))
        if len(ops) >= 2000:
            store.batch(ops)
            ops = []
    if ops:
        store.batch(ops)
    return {"measured_user_items": mine}


# -- measuring ------------------------------------------------------------------------------------


def measure(where: str, server: bool) -> dict[str, Any]:
    """Every figure, in this process, on the folder (or server) at `where`."""
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import InMemorySaver

    from engram.evals.scripted import ScriptedChatModel
    from engram.graph import Context, Recall, compile_graph
    from engram.stores.chroma.store import ChromaStore
    from engram.stores.maintenance.maintain import maintain
    from engram.stores.memory.long_term import LongTermMemory
    from engram.stores.memory.markdown.format import render_markdown
    from engram.stores.memory.types import MemoryCandidate
    from engram.stores.memory.users import delete_user, memories_steps, users_steps
    from engram.stores.steps import run_steps

    figures: dict[str, Any] = {}
    with timed(figures, "open"):
        store = ChromaStore.from_url(where, index=index()) if server else ChromaStore(
            path=where, index=index())
    graph = compile_graph(ScriptedChatModel(replies=["ok"] * 4), store=store,
                          checkpointer=InMemorySaver())
    with timed(figures, "first turn"):
        out = graph.invoke(
            {"messages": [HumanMessage("what do I like to cook?")]},
            {"configurable": {"thread_id": "bench-1"}},
            context=Context(user_id=MEASURED_USER, recall=Recall(timeout_ms=600_000)),
        )
    figures["first turn failures"] = out.get("failures", [])
    ltm = LongTermMemory(store)
    corpus = texts()
    rng = random.Random(2)
    recalls = []
    for _ in range(QUERIES):
        started = time.perf_counter()
        ltm.recall_for_turn(MEASURED_USER, rng.choice(corpus), k=5)
        recalls.append(time.perf_counter() - started)
    figures["recall p50"] = statistics.median(recalls)
    figures["recall p95"] = sorted(recalls)[int(0.95 * (len(recalls) - 1))]
    with timed(figures, "add"):
        [added] = ltm.upsert(MEASURED_USER, [MemoryCandidate(
            content="I switched my editor to Helix last week", category="preference")])
    with timed(figures, "forget"):
        ltm.forget(MEASURED_USER, added.memory.id)
    with timed(figures, "export"):
        render_markdown(MEASURED_USER, run_steps(store, memories_steps(MEASURED_USER)),
                        exported_at=datetime.now(UTC).isoformat())
    with timed(figures, "maintain"):
        report = maintain(store, MEASURED_USER)
    figures["maintain changed"] = report.changed + len(report.episodes_deleted)
    with timed(figures, "users"):
        figures["user count"] = len(run_steps(store, users_steps()))
    with timed(figures, "delete --all"):
        figures["deleted items"] = sum(delete_user(store, MEASURED_USER).deleted.values())
    with timed(figures, "of which purge"):  # the purge again, with nothing new to remove
        store.purge_deleted()
    store.close()
    figures["peak memory MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return figures


@contextmanager
def timed(figures: dict[str, Any], name: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    except Exception as exc:
        figures[name] = f"failed: {type(exc).__name__}: {str(exc)[:120]}"
        raise
    else:
        figures[name] = time.perf_counter() - started


# -- one size, in its own processes ---------------------------------------------------------------


def run_size(n: int, users: int, shape: str, server: bool, console: Console) -> dict[str, Any]:
    """Build a folder of `n` items in one process and measure it in another."""
    with tempfile.TemporaryDirectory(prefix="engram-scale-") as folder, _chroma(folder, server) as where:
        started = time.perf_counter()
        built = _child(["build", where, str(n), str(users), shape] + (["--server"] if server else []))
        console.print(f"built {n} items ({shape}, {users} users) in "
                      f"{time.perf_counter() - started:.0f} s", highlight=False)
        figures = _child(["measure", where] + (["--server"] if server else []))
        return {**built, **figures}


def _child(args: list[str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-m", "engram.evals.bench.scale", "--child", *args],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"scale {args[0]} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


@contextmanager
def _chroma(folder: str, server: bool) -> Iterator[str]:
    """The folder, or the URL of a `chroma run` serving a folder inside it."""
    if not server:
        yield str(Path(folder) / "chroma")
        return
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    process = subprocess.Popen(
        ["chroma", "run", "--path", str(Path(folder) / "server"), "--port", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=30)


def _child_main(args: list[str]) -> None:
    from engram.stores.chroma.store import ChromaStore

    server = "--server" in args
    args = [a for a in args if a != "--server"]
    if args[0] == "build":
        where, n, users, shape = args[1], int(args[2]), int(args[3]), args[4]
        store = ChromaStore.from_url(where, index=index()) if server else ChromaStore(
            path=where, index=index())
        result = build(store, n, users, shape)
        store.close()
    else:
        result = measure(args[1], server)
    print(json.dumps(result, default=str))


# -- the table ------------------------------------------------------------------------------------


ROWS = ["open", "first turn", "recall p50", "recall p95", "add", "forget", "delete --all",
        "of which purge", "maintain", "export", "users", "peak memory MB"]
COUNTS = {"items of the measured user": "measured_user_items",
          "items maintain changed": "maintain changed"}


def table(results: dict[int, dict[str, Any]], title: str) -> Table:
    sizes = sorted(results)
    out = Table(title=title)
    out.add_column("")
    for n in sizes:
        out.add_column(f"{n:,} items", justify="right")
    growth = f"{sizes[-2]:,} -> {sizes[-1]:,}" if len(sizes) > 1 else ""
    out.add_column(growth, justify="right")
    for row in ROWS:
        cells = [_cell(results[n].get(row), row) for n in sizes]
        first, last = (results[sizes[-2]].get(row), results[sizes[-1]].get(row)) if len(
            sizes) > 1 else (None, None)
        growth = (f"{last / first:.1f}x" if isinstance(first, float) and isinstance(last, float)
                  and first > 0 and len(sizes) > 1 else "")
        out.add_row(row, *cells, growth)
    for row, key in COUNTS.items():
        out.add_row(row, *(str(results[n].get(key, "")) for n in sizes), "")
    return out


def _cell(value: Any, row: str) -> str:
    if isinstance(value, float):
        return f"{value:.0f}" if row == "peak memory MB" else f"{value * 1000:.0f} ms"
    return str(value or "")


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--child":
        _child_main(argv[1:])
        return
    parser = argparse.ArgumentParser(prog="python -m engram.evals.bench scale",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--users", type=int, default=1000)
    parser.add_argument("--shapes", default="spread,one")
    parser.add_argument("--server", action="store_true", help="On a `chroma run` server.")
    args = parser.parse_args(argv)
    console = Console(width=140)
    for shape in args.shapes.split(","):
        results = {}
        for n in (int(s) for s in args.sizes.split(",")):
            results[n] = run_size(n, min(args.users, max(1, n // 10)), shape, args.server, console)
        where = "a Chroma server" if args.server else "an embedded folder"
        console.print(table(results, f"{shape}: items over users, on {where}"))


if __name__ == "__main__":
    main()
