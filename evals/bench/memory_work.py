"""`invoke` latency of turns that consolidate or compact against plain turns, with the memory
model's work inline and in the background (`Context.memory_work`), side by side.

Run::

    ENGRAM_LOCAL_THREADS=1 python -m engram.evals.bench memory-work --memory-model local:0.5b
    python -m engram.evals.bench memory-work --json out.json   # also write the JSON

The bundled English dialogs are replayed through the compiled graph (each session a thread,
then its session end), once per mode, each mode in a fresh data folder (embedded ChromaStore
with the local embeddings, SQLite checkpointer). The answering model replays the dialog's own
replies instantly, so a turn's time is engram's work plus whatever memory-model work the turn
waits for. Thresholds are low so that many turns trigger: consolidation every 3 turns,
compaction at 8 messages (4 kept). A turn is a *consolidation* turn when its consolidation
fired (`turns_since_consolidation` back to 0), a *compaction* turn when it compacted, else
*plain*. There is no pause between turns (the worst case for background mode: its jobs compete
with the next turns for the CPU); the session ends are not timed (they wait for the thread's
jobs). `memories` counts what each mode stored, so both modes can be seen to keep the same.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from langchain_core.messages import HumanMessage
from rich.console import Console
from rich.table import Table

from engram.evals.bench.stores import code_state
from engram.evals.dialogs.suite import Dialog, bundled_suite_path, load_suite
from engram.evals.scripted import ScriptedChatModel
from engram.graph.builder import compile_graph
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.graph.models import load_chat_model
from engram.nodes.context import Compaction, Context, Extraction, Recall
from engram.nodes.work.background import wait_for_memory_work
from engram.stores.chroma.store import ChromaStore, default_index
from engram.stores.memory.long_term import LongTermMemory

MODES = ("inline", "background")
KINDS = ("plain", "consolidation", "compaction")
USER = "bench"


def run_mode(mode: str, dialogs: list[Dialog], memory_model: Any, folder: Path) -> dict[str, Any]:
    """Replay `dialogs` with `memory_work=mode`; per-kind turn latencies and what was stored."""
    store = ChromaStore(path=folder / "chroma", index=default_index())
    saver = ThreadedSqliteSaver.from_path(folder / "checkpoints.sqlite")
    replies = [reply for d in dialogs for s in d.sessions for _, reply in s.exchanges()]
    graph = compile_graph(
        ScriptedChatModel(replies=replies), memory_model=memory_model, store=store,
        checkpointer=saver,
    )
    ctx = Context(
        user_id=USER,
        memory_work=mode,
        extraction=Extraction(every_turns=3),
        compaction=Compaction(message_threshold=8, keep_recent_messages=4),
        recall=Recall(timeout_ms=30_000),
    )
    times: dict[str, list[float]] = {kind: [] for kind in KINDS}
    started = time.perf_counter()
    for dialog in dialogs:
        for session in dialog.sessions:
            config = {"configurable": {"thread_id": f"{mode}/{dialog.id}/{session.id}"}}
            for user, _ in session.exchanges():
                begin = time.perf_counter()
                out = graph.invoke({"messages": [HumanMessage(user)]}, config, context=ctx)
                elapsed = time.perf_counter() - begin
                times[_kind(out)].append(elapsed)
            graph.invoke({"end_session": True}, config, context=ctx)
    drained = wait_for_memory_work(timeout=3600)
    total = time.perf_counter() - started
    memories = len(LongTermMemory(store).list(USER, limit=100_000))
    store.close()
    return {
        "turns": {kind: _summary(values) for kind, values in times.items()},
        "total_seconds": round(total, 1),
        "memories": memories,
        "drained": drained,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engram.evals.bench memory-work")
    parser.add_argument(
        "--memory-model", default="local:0.5b", help='a model spec, or "offline" (the built-ins)'
    )
    parser.add_argument("--dialogs", type=int, default=3, help="bundled English dialogs replayed")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    memory_model = None if args.memory_model == "offline" else load_chat_model(args.memory_model)
    dialogs = load_suite(bundled_suite_path() / "en")[: args.dialogs]
    result: dict[str, Any] = {
        "memory_model": args.memory_model,
        "dialogs": [d.id for d in dialogs],
        "threads": os.environ.get("ENGRAM_LOCAL_THREADS"),
        "load_average_before": os.getloadavg(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        **code_state(),
        "modes": {},
    }
    for mode in MODES:
        with tempfile.TemporaryDirectory(prefix=f"engram-{mode}-") as folder:
            result["modes"][mode] = run_mode(mode, dialogs, memory_model, Path(folder))
        print(json.dumps({mode: result["modes"][mode]}), file=sys.stderr, flush=True)
    result["load_average_after"] = os.getloadavg()
    Console(width=120).print(_table(result))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


def _kind(out: dict[str, Any]) -> str:
    if out.get("last_compaction_turn") == out.get("turn"):
        return "compaction"
    if out.get("turns_since_consolidation") == 0:
        return "consolidation"
    return "plain"


def _summary(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)
    return {
        "n": len(values),
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))] * 1000, 1),
        "max_ms": round(ordered[-1] * 1000, 1),
    }


def _table(result: dict[str, Any]) -> Table:
    table = Table(title=f"invoke latency, memory model {result['memory_model']}")
    table.add_column("turn")
    for mode in MODES:
        table.add_column(f"{mode} n", justify="right")
        table.add_column(f"{mode} p50 / p95 ms", justify="right")
    table.add_column("p95 inline / background", justify="right")
    for kind in KINDS:
        cells = []
        for mode in MODES:
            row = result["modes"][mode]["turns"][kind]
            cells += [str(row["n"]), f"{row.get('p50_ms', '-')} / {row.get('p95_ms', '-')}"]
        inline, background = (result["modes"][m]["turns"][kind].get("p95_ms") for m in MODES)
        ratio = f"{inline / background:.1f}x" if inline and background else "-"
        table.add_row(kind, *cells, ratio)
    return table
