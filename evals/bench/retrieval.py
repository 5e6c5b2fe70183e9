"""Retrieval experiments: LoCoMo engine-mode variants side by side, and recall latency at 10k memories.

Usage (a CLI: it prints):
    python -m engram.evals.bench retrieval quality [--data PATH]   # the variant table
    python -m engram.evals.bench retrieval split [--data PATH]     # tune on one conversation,
                                                                   # validate on the others
    python -m engram.evals.bench retrieval latency [--memories 1000,10000]  # p50/p95/p99

Quality runs embed every text once (one cached `LocalEmbeddings`), then each variant archives the
turns again and ranks them with `engram.evals.locomo.engine.arun_engine` (engram's episode recall).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import PutOp
from rich.console import Console
from rich.table import Table

from engram.evals.locomo.engine import EngineSettings, arun_engine, load_locomo
from engram.evals.scripted import ScriptedChatModel
from engram.graph import Context, compile_graph
from engram.stores.chroma.store import ChromaStore
from engram.stores.embeddings import LocalEmbeddings
from engram.stores.lexical.fusion import FUSION_METHODS
from engram.stores.lexical.hybrid import HybridSearchOp
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.types import Memory

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared/data/locomo/locomo-dev.json"
_COLUMNS = ("any_at_1", "any_at_5", "any_at_10", "any_at_25", "frac_at_10")

_PLAIN = EngineSettings(
    with_speakers=False, with_dates=False, with_captions=False, context_turns=0, stemming=False
)
_ENGINE = EngineSettings()

VARIANTS: list[tuple[str, EngineSettings]] = [
    ("BM25 alone, turn text only", replace(_PLAIN, channels="lexical")),
    ("MiniLM alone, turn text only", replace(_PLAIN, channels="dense")),
    ("reciprocal-rank fusion of the two", replace(_PLAIN, method="rrf")),
    ("engram (DEFAULT): relative score fusion", _ENGINE),
    ("  its lexical channel alone", replace(_ENGINE, channels="lexical")),
    ("  its dense channel alone", replace(_ENGINE, channels="dense")),
    ("  reciprocal-rank fusion instead", replace(_ENGINE, method="rrf")),
    ("  z-score fusion instead", replace(_ENGINE, method="zscore")),
    ("  lexical weight 0.3", replace(_ENGINE, lexical_weight=0.3)),
    ("  lexical weight 0.7", replace(_ENGINE, lexical_weight=0.7)),
    ("  no previous messages as lexical context", replace(_ENGINE, context_turns=0)),
    ("  without speaker names", replace(_ENGINE, with_speakers=False)),
    ("  without dates", replace(_ENGINE, with_dates=False)),
    ("  without stemming", replace(_ENGINE, stemming=False)),
    ("  depth 100", replace(_ENGINE, depth=100)),
]


async def quality(data: Path, console: Console) -> None:
    """Every variant of `VARIANTS` on all conversations of `data`, one table row each."""
    embeddings = LocalEmbeddings(cache_size=50_000)
    table = _table("variant (LoCoMo engine mode, categories 1-4)")
    for name, settings in VARIANTS:
        result = await arun_engine(data, embeddings=embeddings, settings=settings)
        table.add_row(name, *(f"{result['metrics'][c]:.3f}" for c in _COLUMNS))
    console.print(table)
    console.print(f"questions: {result['questions']}")


async def split(data: Path, train: str, console: Console) -> None:
    """Tune on the `train` conversation, validate on the others: the lexical weight per fusion
    method, then the number of context turns; the chosen defaults are shown beside."""
    embeddings = LocalEmbeddings(cache_size=50_000)
    held_out = [c.sample_id for c in load_locomo(data) if c.sample_id != train]

    async def run(settings: EngineSettings, conversations: list[str]) -> dict[str, Any]:
        result = await arun_engine(
            data, conversations=conversations, embeddings=embeddings, settings=settings
        )
        return result["metrics"]

    grids: list[tuple[str, str, list[tuple[float, EngineSettings]], EngineSettings]] = [
        (
            method,
            "lexical weight",
            [(w / 10, EngineSettings(method=method, lexical_weight=w / 10)) for w in range(1, 10)],
            EngineSettings(method=method),
        )
        for method in FUSION_METHODS
    ]
    grids.append((
        "relative",
        "context turns",
        [(n, EngineSettings(context_turns=n)) for n in (0, 1, 2, 3, 4)],
        EngineSettings(),
    ))
    table = Table(title=f"tuned on {train} (best any@10), validated on {', '.join(held_out)}")
    for column in ("method", "parameter", "best", "train any@10", "train frac@10",
                   "held-out any@10", "held-out frac@10", "default: held-out any@10 / frac@10"):
        table.add_column(column, justify="right")
    for method, parameter, grid, default in grids:
        trained = [(value, settings, await run(settings, [train])) for value, settings in grid]
        value, settings, metrics = max(trained, key=lambda row: row[2]["any_at_10"])
        tuned = await run(settings, held_out)
        untuned = await run(default, held_out)
        table.add_row(
            method, parameter, f"{value:g}",
            f"{metrics['any_at_10']:.3f}", f"{metrics['frac_at_10']:.3f}",
            f"{tuned['any_at_10']:.3f}", f"{tuned['frac_at_10']:.3f}",
            f"{untuned['any_at_10']:.3f} / {untuned['frac_at_10']:.3f}",
        )
    console.print(table)


def latency(memories: int, queries: int, console: Console) -> None:
    """p50/p95/p99 of engram's recall at `memories` memories of one user, stage by stage, and
    the first graph turn after reopening the store against the second.

    The store is the real one (a `ChromaStore` on a `PersistentClient`, with its lexical index);
    texts are synthetic (Zipf-distributed words) and their vectors random unit vectors looked up
    by text, so that the query embedding, which recall excludes, costs nothing. The MiniLM query
    embedding is timed separately, for scale.
    """
    rng = random.Random(0)
    texts = [_synthetic_text(rng, rng.randint(6, 16)) for _ in range(memories)]
    questions = [_synthetic_text(rng, rng.randint(4, 10)) for _ in range(queries)]
    embeddings = LookupEmbeddings(384)
    categories = ("preference", "fact", "project", "lesson", "skill", "goal")
    rows: list[tuple[str, list[float]]] = []
    with tempfile.TemporaryDirectory() as folder:
        store = ChromaStore(
            path=Path(folder) / "chroma",
            index={"dims": 384, "embed": embeddings, "fields": ["content"]},
        )
        ltm = LongTermMemory(store)
        namespace = ltm.namespace("bench")
        stamp = "2026-01-01T00:00:00+00:00"
        started = time.perf_counter()
        for start in range(0, memories, 1000):
            store.batch([
                PutOp(namespace, f"m{n}", Memory.new(
                    texts[n], categories[n % 6], 0.5 + (n % 5) / 10, now=stamp, id=f"m{n}"
                ).to_value(), index=["content"])
                for n in range(start, min(start + 1000, memories))
            ])
        bulk = time.perf_counter() - started
        store.close()
        store = ChromaStore(  # reopened: the first search checks the lexical index against Chroma
            path=Path(folder) / "chroma",
            index={"dims": 384, "embed": embeddings, "fields": ["content"]},
        )
        first_turn, second_turn = _first_turns(store, questions[:2])
        ltm = LongTermMemory(store)
        flt = {"current": True, "forgotten": False}
        rows.append(("recall, k=5 (LongTermMemory.recall_for_turn, as start runs it)",
                     _timed(lambda n: ltm.recall_for_turn("bench", questions[n], k=5), queries)))
        rows.append(("  the hybrid search op in it (15 candidates, depth 50)", _timed(
            lambda n: store.batch([HybridSearchOp(namespace, questions[n], flt, 15)]), queries)))
        rows.append(("access update of 5 memories (consolidate, after the reply)", _timed(
            lambda n: ltm.touch("bench", [f"m{(n * 5 + j) % memories}" for j in range(5)]),
            queries)))
        rows.append(("  dense only: SearchOp, top 50", _timed(
            lambda n: store.search(namespace, query=questions[n], filter=flt, limit=50), queries)))
        rows.append(("  lexical only: BM25, top 50", _timed(
            lambda n: store.lexical.search(namespace, questions[n], 50), queries)))
        store.close()
    embedder = LocalEmbeddings(cache_size=0)
    embedder.embed_query("warm up")
    rows.append(("query embedding (MiniLM, for scale; not part of recall)", _timed(
        lambda n: embedder.embed_query(questions[n]), queries)))
    table = Table(title=f"recall at {memories} memories of one user, {queries} queries")
    for column in ("stage", "p50 ms", "p95 ms", "p99 ms"):
        table.add_column(column, justify="right")
    for name, times in rows:
        table.add_row(name, *(f"{_pct(times, p):.2f}" for p in (50, 95, 99)))
    console.print(table)
    console.print(
        f"bulk insert of {memories} memories: {bulk:.1f} s; after reopening the store, the "
        f"graph's first turn took {first_turn:.0f} ms (it loads the indexes and checks the "
        f"lexical one against Chroma) and its second {second_turn:.0f} ms (scripted replies)"
    )


def _first_turns(store: ChromaStore, questions: Sequence[str]) -> tuple[float, float]:
    """Milliseconds of the graph's first and second turn on `store` (a new thread each, a
    scripted reply): what a user of a freshly started app waits, engram's part of it."""
    graph = compile_graph(
        ScriptedChatModel(replies=["ok", "ok"]), store=store, checkpointer=InMemorySaver()
    )
    times = []
    for n, question in enumerate(questions):
        started = time.perf_counter()
        out = graph.invoke(
            {"messages": [HumanMessage(question)]},
            {"configurable": {"thread_id": f"t{n}"}},
            context=Context(user_id="bench"),
        )
        times.append((time.perf_counter() - started) * 1000)
        if out.get("failures"):
            raise RuntimeError(f"turn {n + 1} worked around a failure: {out['failures']}")
    return times[0], times[1]


class LookupEmbeddings(Embeddings):
    """A random unit vector per text, the same every time: embedding costs nothing here."""

    def __init__(self, dims: int) -> None:
        self.dims = dims

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.embed_query(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")
        vector = np.random.default_rng(seed).standard_normal(self.dims)
        return (vector / np.linalg.norm(vector)).tolist()


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(
        prog="python -m engram.evals.bench retrieval", description=__doc__.splitlines()[0]
    )
    parser.add_argument("what", choices=("quality", "split", "latency"))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--train", default="conv-26")
    parser.add_argument(
        "--memories", default="1000,10000", help="Comma-separated store sizes (latency)."
    )
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    console = Console()
    if args.what == "quality":
        asyncio.run(quality(args.data, console))
    elif args.what == "split":
        asyncio.run(split(args.data, args.train, console))
    else:
        for size in (int(n) for n in args.memories.split(",")):
            latency(size, args.queries, console)


def _table(first: str) -> Table:
    table = Table(title="LoCoMo retrieval, engine mode")
    table.add_column(first)
    for column in _COLUMNS:
        table.add_column(column.replace("_at_", "@"), justify="right")
    return table


_VOCABULARY = [f"w{i}" for i in range(20_000)]
_WEIGHTS = [1.0 / (rank + 1) ** 1.07 for rank in range(len(_VOCABULARY))]  # Zipf-like, like words


def _synthetic_text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choices(_VOCABULARY, weights=_WEIGHTS, k=words))


def _timed(step: Callable[[int], object], repeats: int) -> list[float]:
    times = []
    for n in range(repeats):
        started = time.perf_counter()
        step(n)
        times.append((time.perf_counter() - started) * 1000)
    return times


def _pct(times: list[float], percentile: int) -> float:
    return statistics.quantiles(times, n=100)[percentile - 1] if len(times) > 1 else times[0]
