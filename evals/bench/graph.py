"""Per-turn overhead of the memory graph, side by side at 10, 100 and 1000 history messages.

Run::

    python -m engram.evals.bench graph                   # table + JSON on stdout
    python -m engram.evals.bench graph --json out.json   # also write the JSON to a file
    python -m engram.evals.bench graph --load 2          # also recall, quiet and under load

What one "turn" measures here is engram's own work around the model call: `start` (current
input, recall query, recall through `LongTermMemory`, budget and context build), the compaction
check after `respond`, and `consolidate`'s decision whether to extract. The model and the
embedder are excluded: the embedder is an instant fake returning a fixed vector, and no model is
called. The store is not excluded, so it is measured twice: langgraph's `InMemoryStore` (what is
left is engram's own Python) and the default `ChromaStore` on a `PersistentClient` in a temporary
folder (recall then includes Chroma's query and the lexical channel). Each turn adds a new user
message (new id) to an N-message history whose counts are cached from earlier turns, as in a
real thread.

The worst case is measured on purpose: a 128k-token window (every history message fits, so every
one is looked at), thresholds raised so the compaction check sums the tokens of all N messages,
and 20 stored memories. Target: p50 <= 5 ms at 1000 messages, growing sub-linearly
(tokens are counted once per message, not once per turn). Growth is reported as the factor from
10 to 1000 messages (sub-linear: well under 100x) and as the extra cost per history message
between 100 and 1000 messages.

Times are wall-clock; `total_cpu` is this process's CPU time over the same span (every thread,
Chroma's included): on a machine shared with other work it shows how much of the wall time was
spent waiting for a core.

With `--load N`, a third section times a turn's recall alone (`engram.nodes.start.recall` on the
ChromaStore: memories and archived messages) on a quiet machine and with N busy processes
running alongside, in alternating rounds, and prints p50 / p95 of each side by side: what a
busy machine does to recall's time budget (`recall.timeout_ms`, 500 ms).

A second section runs whole turns through the compiled graph (`ainvoke` with an instant fake
model and `InMemorySaver`) to show what LangGraph's own machinery and the checkpoint add.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from rich.console import Console
from rich.table import Table

from engram.evals.bench.stores import code_state
from engram.evals.bench.stress import cpu_load
from engram.graph.builder import build_graph
from engram.nodes.compact import should_compact
from engram.nodes.consolidate import consolidation_trigger
from engram.nodes.context import Compaction, Context
from engram.nodes.start import make_start, recall
from engram.nodes.text.tokens import counter_for_model
from engram.stores.chroma.store import ChromaStore
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.types import MemoryCandidate

SIZES = (10, 100, 1000)
STORES = ("in_memory", "chroma")
WINDOW = 128_000
TARGET_P50_MS = 5.0
CONTEXT = Context(
    user_id="bench",
    context_window=WINDOW,
    compaction=Compaction(
        message_threshold=1_000_000, token_threshold=1_000_000_000, max_messages=1_000_000
    ),
)
_TEXT = (
    "We moved the billing service to Postgres 16 last sprint; the migration took 3 days and the "
    "nightly export now runs at 02:00 UTC. Next: shard the invoices table by customer region. "
)


class InstantEmbeddings(Embeddings):
    """A fixed unit vector for every text: recall runs, the embedder costs nothing."""

    dims = 8

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return [1.0] + [0.0] * (self.dims - 1)

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)  # no thread hop: the embedder is excluded

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)


def history(size: int) -> list[BaseMessage]:
    """`size` alternating user/assistant messages of about 60 tokens each."""
    return [
        (HumanMessage if i % 2 == 0 else AIMessage)(f"{i}: {_TEXT}", id=f"m{i}")
        for i in range(size)
    ]


@contextmanager
def store_with_memories(kind: str = "in_memory", count: int = 20) -> Iterator[BaseStore]:
    """A store holding `count` memories of user "bench": `InMemoryStore` or `ChromaStore`."""
    index = {"dims": InstantEmbeddings.dims, "embed": InstantEmbeddings(), "fields": ["content"]}
    with tempfile.TemporaryDirectory(prefix="engram-graph-bench-") as tmp:
        store: BaseStore
        if kind == "chroma":
            store = ChromaStore(path=tmp, collection="bench", index=index)
        else:
            store = InMemoryStore(index=index)
        candidates = [
            MemoryCandidate(
                content=f"Fact {i}: the user's service number {i} runs on port {8000 + i}",
                category="fact",
            )
            for i in range(count)
        ]
        LongTermMemory(store, duplicate_threshold=1.01).upsert("bench", candidates)
        try:
            yield store
        finally:
            if isinstance(store, ChromaStore):
                store.close()


async def node_overhead(size: int, iterations: int, store: BaseStore) -> dict[str, list[float]]:
    """Milliseconds per turn of start, the compaction check and the consolidation decision."""
    start = make_start(model_name=None, default_window=WINDOW)
    runtime = Runtime(context=CONTEXT, store=store)
    counter = counter_for_model(None)
    base = history(size)
    timings: dict[str, list[float]] = {
        "start": [],
        "compaction_check": [],
        "consolidation_decision": [],
        "total": [],
        "total_cpu": [],
    }
    for turn in range(iterations + 5):  # the first 5 warm caches up and are not reported
        messages = [*base, HumanMessage(f"turn {turn}: what changed in billing?", id=f"in{turn}")]
        state: dict[str, Any] = {
            "messages": messages,
            "summary": _TEXT * 3,
            "turn": turn,
            "kept_tail_ids": [m.id for m in base[:4]],
            "turns_since_consolidation": 1,
        }
        c0, t0 = time.process_time(), time.perf_counter()
        state.update(await start(state, runtime))  # type: ignore[arg-type]
        t1 = time.perf_counter()
        should_compact(state, CONTEXT, counter)  # type: ignore[arg-type]
        t2 = time.perf_counter()
        consolidation_trigger(state, CONTEXT.extraction.every_turns)  # type: ignore[arg-type]
        t3, c3 = time.perf_counter(), time.process_time()
        if turn >= 5:
            timings["start"].append((t1 - t0) * 1000)
            timings["compaction_check"].append((t2 - t1) * 1000)
            timings["consolidation_decision"].append((t3 - t2) * 1000)
            timings["total"].append((t3 - t0) * 1000)
            timings["total_cpu"].append((c3 - c0) * 1000)
    return timings


async def graph_turns(size: int, iterations: int) -> list[float]:
    """Milliseconds per whole turn through the compiled graph (instant model, InMemorySaver)."""
    model = GenericFakeChatModel(messages=iter([f"reply {i}" for i in range(iterations + 5)]))
    with store_with_memories() as store:
        graph = build_graph(model).compile(store=store, checkpointer=InMemorySaver())
        return await _timed_turns(graph, size, iterations)


async def _timed_turns(graph: Any, size: int, iterations: int) -> list[float]:
    config = {"configurable": {"thread_id": f"bench-{size}"}}
    past = history(size)  # an old thread: its messages were extracted from long ago
    await graph.aupdate_state(
        config,
        {"messages": past, "consolidated_message_ids": [m.id for m in past]},
        as_node="consolidate",
    )
    out = []
    for turn in range(iterations + 5):
        t0 = time.perf_counter()
        await graph.ainvoke({"messages": [HumanMessage(f"turn {turn}")]}, config, context=CONTEXT)
        if turn >= 5:
            out.append((time.perf_counter() - t0) * 1000)
    return out


async def recall_under_load(
    iterations: int, load: int, rounds: int = 4
) -> dict[str, dict[str, float]]:
    """p50 / p95 ms of a turn's recall on the ChromaStore, quiet and beside `load` busy
    processes, in alternating rounds."""
    busy_name = f"{load} busy {'process' if load == 1 else 'processes'}"
    samples: dict[str, list[float]] = {"quiet": [], busy_name: []}
    with store_with_memories("chroma") as store:
        await recall(store, CONTEXT, "warm up")  # the first recall loads what later ones reuse
        for _ in range(rounds):
            for name, busy in zip(samples, (0, load), strict=True):
                with cpu_load(busy):
                    await asyncio.sleep(0.5 if busy else 0.0)  # the busy loops get going
                    for i in range(iterations // rounds):
                        started = time.perf_counter()
                        await recall(store, CONTEXT, f"turn {i}: what changed in billing?")
                        samples[name].append((time.perf_counter() - started) * 1000)
    return {
        name: {"p50_ms": round(statistics.median(v), 2), "p95_ms": round(percentile(v, 95), 2)}
        for name, v in samples.items()
    }


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


async def run(iterations: int, graph_iterations: int, rounds: int = 4) -> dict[str, Any]:
    """All sizes and stores, in interleaved rounds so that load from other processes hits them
    alike."""
    code = code_state()  # before the runs: the code imported is the code measured
    samples: dict[tuple[str, int], dict[str, list[float]]] = {
        (kind, size): {} for kind in STORES for size in SIZES
    }
    with store_with_memories("in_memory") as memory, store_with_memories("chroma") as chroma:
        stores = {"in_memory": memory, "chroma": chroma}
        for _ in range(rounds):
            for size in SIZES:
                for kind in STORES:
                    gc.collect()
                    timings = await node_overhead(size, iterations // rounds, stores[kind])
                    for name, values in timings.items():
                        samples[(kind, size)].setdefault(name, []).extend(values)
    for size in SIZES:
        gc.collect()
        samples[("in_memory", size)]["graph_turn"] = await graph_turns(size, graph_iterations)
    rows = []
    for (kind, size), by_name in samples.items():
        row: dict[str, Any] = {"store": kind, "messages": size}
        for name, values in by_name.items():
            row[f"{name}_p50_ms"] = round(statistics.median(values), 3)
            row[f"{name}_p95_ms"] = round(percentile(values, 95), 3)
        rows.append(row)
    return {
        "benchmark": "engram.graph per-turn overhead (model and embedder excluded)",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),  # other processes share the cores
        "iterations": iterations,
        "graph_iterations": graph_iterations,
        "window": WINDOW,
        "code": code,
        "rows": rows,
        "targets": [growth(rows, kind) for kind in STORES],
    }


def growth(rows: list[dict[str, Any]], store: str) -> dict[str, Any]:
    """The target's verdict for one store: p50 at the largest size, and how it grows."""
    p50 = {r["messages"]: r["total_p50_ms"] for r in rows if r["store"] == store}
    small, middle, large = SIZES
    return {
        "store": store,
        "total_p50_ms_at_1000": p50[large],
        "total_cpu_p50_ms_at_1000": next(
            r["total_cpu_p50_ms"] for r in rows if r["store"] == store and r["messages"] == large
        ),
        "growth_1000_vs_10": round(p50[large] / p50[small], 2),
        "growth_1000_vs_100": round(p50[large] / p50[middle], 2),
        "us_per_extra_message": round((p50[large] - p50[middle]) * 1000 / (large - middle), 3),
        "target_p50_ms": TARGET_P50_MS,
        "target_met": p50[large] <= TARGET_P50_MS and p50[large] / p50[small] < large / small,
    }


def _table(result: dict[str, Any]) -> Table:
    table = Table(title=result["benchmark"])
    table.add_column("store")
    table.add_column("messages", justify="right")
    columns = [
        "start",
        "compaction_check",
        "consolidation_decision",
        "total",
        "total_cpu",
        "graph_turn",
    ]
    for name in columns:
        table.add_column(f"{name}\np50 / p95 ms", justify="right")
    for row in result["rows"]:
        cells = [
            f"{row[f'{n}_p50_ms']:.3f} / {row[f'{n}_p95_ms']:.3f}" if f"{n}_p50_ms" in row else ""
            for n in columns
        ]
        table.add_row(row["store"], str(row["messages"]), *cells)
    return table


def _targets_table(result: dict[str, Any]) -> Table:
    table = Table(title=f"target: total p50 <= {TARGET_P50_MS} ms at 1000 messages, sub-linear")
    for column in result["targets"][0]:
        table.add_column(column, justify="left" if column == "store" else "right")
    for verdict in result["targets"]:
        table.add_row(*(str(v) for v in verdict.values()))
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engram.evals.bench graph", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--iterations", type=int, default=200, help="timed turns per size (node overhead)"
    )
    parser.add_argument(
        "--graph-iterations", type=int, default=30, help="timed whole-graph turns per size"
    )
    parser.add_argument(
        "--load", type=int, default=0, metavar="N",
        help="also time recall quiet and beside N busy processes",
    )
    parser.add_argument("--json", type=Path, help="also write the JSON result to this file")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.iterations, args.graph_iterations))
    if args.load > 0:
        result["recall_under_load"] = asyncio.run(recall_under_load(args.iterations, args.load))
    console = Console(width=160)
    console.print(_table(result))
    console.print(_targets_table(result))
    if "recall_under_load" in result:
        table = Table(title="a turn's recall (ChromaStore), quiet and under load")
        for column in ("machine", "p50 ms", "p95 ms"):
            table.add_column(column, justify="left" if column == "machine" else "right")
        for name, figures in result["recall_under_load"].items():
            table.add_row(name, f"{figures['p50_ms']:.2f}", f"{figures['p95_ms']:.2f}")
        console.print(table)
    blob = json.dumps(result, indent=2)
    print(blob)
    if args.json:
        args.json.write_text(blob + "\n")
    return 0 if all(t["target_met"] for t in result["targets"]) else 1
