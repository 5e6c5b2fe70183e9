"""Retrieval experiments: LoCoMo engine-mode variants side by side, and recall latency at 10k memories.

Usage (a CLI: it prints):
    python -m engram.evals.retrieval_bench quality [--data PATH]   # the variant table
    python -m engram.evals.retrieval_bench split [--data PATH]     # tune on one conversation,
                                                                   # validate on the others
    python -m engram.evals.retrieval_bench latency [--memories N]  # p50/p95 per recall stage

Quality runs embed every text once (one cached `LocalEmbeddings`), then each variant re-indexes
the turns and ranks them with `engram.evals.locomo.arun_engine`.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import chromadb
import numpy as np
from rich.console import Console
from rich.table import Table

from engram.evals.locomo import EngineSettings, arun_engine, load_locomo
from engram.stores.embeddings import LocalEmbeddings
from engram.stores.fusion import FUSION_METHODS, relative_score_fusion
from engram.stores.lexical import LexicalDocument, LexicalIndex

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared/data/locomo/locomo-dev.json"
_COLUMNS = ("any_at_1", "any_at_5", "any_at_10", "any_at_25", "frac_at_10")

_PLAIN = EngineSettings(
    with_speakers=False, with_dates=False, with_captions=False, context_turns=0, stemming=False
)
_RENDERED = EngineSettings(context_turns=0)
_ENGINE = EngineSettings()

VARIANTS: list[tuple[str, EngineSettings]] = [
    ("BM25, turn text only, stopwords", replace(_PLAIN, channels="lexical")),
    ("MiniLM, turn text only", replace(_PLAIN, channels="dense")),
    ("RRF of the two above", replace(_PLAIN, method="rrf")),
    ("BM25, \\[date] speaker: text \\[image], stopwords", replace(_RENDERED, channels="lexical", stemming=False)),
    ("  + stemming", replace(_RENDERED, channels="lexical")),
    ("MiniLM, \\[date] speaker: text \\[image]", replace(_RENDERED, channels="dense")),
    ("RRF (stemmed BM25 + MiniLM)", replace(_RENDERED, method="rrf")),
    ("relative score fusion", _RENDERED),
    ("z-score fusion", replace(_RENDERED, method="zscore")),
    ("BM25 + 2 previous turns as context (w 0.5)", replace(_ENGINE, channels="lexical")),
    ("RRF, context", replace(_ENGINE, method="rrf")),
    ("z-score fusion, context", replace(_ENGINE, method="zscore")),
    ("relative fusion, context (DEFAULT)", _ENGINE),
    ("  lexical weight 0.3", replace(_ENGINE, lexical_weight=0.3)),
    ("  lexical weight 0.7", replace(_ENGINE, lexical_weight=0.7)),
    ("  depth 50", replace(_ENGINE, depth=50)),
    ("  1 previous turn as context", replace(_ENGINE, context_turns=1)),
    ("  3 previous turns as context", replace(_ENGINE, context_turns=3)),
    ("  + dense: mean(turn, context+turn)", replace(_ENGINE, dense_context=True)),
    ("  without dates", replace(_ENGINE, with_dates=False)),
    ("  without image captions", replace(_ENGINE, with_captions=False)),
    ("  without speaker names", replace(_ENGINE, with_speakers=False)),
    ("  no stemming", replace(_ENGINE, stemming=False)),
    ("  no stopwords", replace(_ENGINE, stopwords=False)),
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
    """p50/p95 of each recall stage at `memories` short memories in one scope (2 cores here)."""
    rng = random.Random(0)
    texts = [_synthetic_text(rng, rng.randint(6, 16)) for _ in range(memories)]
    questions = [_synthetic_text(rng, rng.randint(4, 10)) for _ in range(queries)]
    vectors = np.random.default_rng(0).standard_normal((memories, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    query_vectors = np.random.default_rng(1).standard_normal((queries, 384)).astype(np.float32)
    ids = [f"m{i}" for i in range(memories)]
    rows: list[tuple[str, list[float]]] = []
    with tempfile.TemporaryDirectory() as folder:
        index = LexicalIndex(Path(folder) / "lexical")
        started = time.perf_counter()
        index.upsert("bench", [LexicalDocument(i, t) for i, t in zip(ids, texts, strict=True)])
        bulk = time.perf_counter() - started
        rows.append(("lexical: one upsert", _timed(
            lambda n: index.upsert("bench", [LexicalDocument(f"new{n}", texts[n])]), queries)))
        lexical = {}

        def lexical_search(n: int) -> None:
            lexical[n] = index.search("bench", questions[n], limit=100)

        rows.append(("lexical: search, top 100", _timed(lexical_search, queries)))
        index.upsert("bench-context", [
            LexicalDocument(i, t, context=f"{texts[n - 2]}\n{texts[n - 1]}")
            for n, (i, t) in enumerate(zip(ids, texts, strict=True))
        ])
        rows.append(("lexical: search, docs with 2 turns of context", _timed(
            lambda n: index.search("bench-context", questions[n], limit=100), queries)))
        index.close()
        client = chromadb.PersistentClient(str(Path(folder) / "chroma"))
        collection = client.create_collection("bench", metadata={"hnsw:space": "cosine"})
        for start in range(0, memories, 4096):
            collection.add(ids=ids[start : start + 4096], embeddings=vectors[start : start + 4096])
        dense = {}

        def dense_search(n: int) -> None:
            result = collection.query(query_embeddings=[query_vectors[n]], n_results=100)
            dense[n] = [(i, 1.0 - d) for i, d in zip(result["ids"][0], result["distances"][0])]

        rows.append(("dense: Chroma query, top 100", _timed(dense_search, queries)))
        rows.append(("fusion (relative), 100 + 100", _timed(
            lambda n: relative_score_fusion(lexical[n], dense[n]), queries)))
    embedder = LocalEmbeddings(cache_size=0)
    embedder.embed_query("warm up")
    rows.append(("query embedding (MiniLM, for scale)", _timed(
        lambda n: embedder.embed_query(questions[n]), queries)))
    table = Table(title=f"recall stages at {memories} memories, {queries} queries")
    for column in ("stage", "p50 ms", "p95 ms"):
        table.add_column(column, justify="right")
    for name, times in rows:
        table.add_row(name, f"{_pct(times, 50):.2f}", f"{_pct(times, 95):.2f}")
    stage = {name: times for name, times in rows}
    total = sum(
        _pct(stage[name], 50)
        for name in ("lexical: search, top 100", "dense: Chroma query, top 100",
                     "fusion (relative), 100 + 100")
    )
    table.add_row("recall without query embedding (sum of p50s)", f"{total:.2f}", "")
    console.print(table)
    console.print(f"bulk upsert of {memories} memories: {bulk:.2f} s")


def main(argv: Sequence[str] | None = None) -> None:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=("quality", "split", "latency"))
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--train", default="conv-26")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=300)
    args = parser.parse_args(argv)
    console = Console()
    if args.what == "quality":
        asyncio.run(quality(args.data, console))
    elif args.what == "split":
        asyncio.run(split(args.data, args.train, console))
    else:
        latency(args.memories, args.queries, console)


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


if __name__ == "__main__":
    main()
