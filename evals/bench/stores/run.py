"""Benchmarks of engram's stores, measured side by side in one run, printed as tables plus JSON.

Run::

    python -m engram.evals.bench stores                      # every section
    python -m engram.evals.bench stores --only embeddings    # one section (repeat --only for several)
    python -m engram.evals.bench stores --json bench.json    # also write the JSON blob to a file

Sections:

- ``store``: `ChromaStore` (also without its BM25 mirror) vs raw chromadb collection calls vs
  langgraph's `InMemoryStore`: batched put throughput and top-10 search latency (in one user's
  namespace, and across all users) at 1k, 10k and 50k items (see `engram.evals.bench.stores.store`).
  Targets: ChromaStore <= 1.25x raw chromadb for search and batched put; search at 50k items
  faster than `InMemoryStore`.
- ``processes``: what sharing a data folder between processes costs: `ChromaStore` with its
  folder lock vs without it (single put, batched put, search), and a search that first reloads
  what another process wrote, at the store sizes up to 10k (see
  `engram.evals.bench.stores.processes`). Target: with the lock <= 1.05x without.
- ``reloads``: the memory and open files a reload keeps: ``--reloads`` reloads (default 30) of a
  store at the store sizes up to 10k, engram's way (its Chroma system restarted in place) beside
  the way it reloaded before (a new Chroma system per reload), each in a fresh process (see
  `engram.evals.bench.stores.reloads`); prints MB per reload.
- ``embeddings``: `LocalEmbeddings` vs chromadb's `DefaultEmbeddingFunction` (used the way Chroma
  calls it: a fresh `ONNXMiniLM_L6_V2` per call) and vs one reused `ONNXMiniLM_L6_V2` instance
  (to show what is left once model loading is out of the picture), on short texts (20-40 word
  pieces) and long texts (200-250 word pieces). The cache of `LocalEmbeddings` is off: the model
  is measured, not the cache. Target: `LocalEmbeddings` >= 4x `DefaultEmbeddingFunction` on short
  texts.

- ``concurrent``: many store calls in flight at once (asyncio tasks, and 10 threads), on an
  ephemeral and a persistent client: `ChromaStore` (coalescing them) vs the same store sending
  each call on its own vs `InMemoryStore` (see `engram.evals.bench.stores.concurrent`). Target:
  coalesced >= 10x each call on its own. ``--calls`` sets how many calls (default 6000).

The model files come from `$ENGRAM_EMBEDDING_MODEL_DIR` or chromadb's cache folder (see
`engram.stores.embeddings.resolve_model_dir`); chromadb's embedder is pointed at the same files, so
the benchmark runs offline. Without network, set the variable first, e.g.
``export ENGRAM_EMBEDDING_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx``.

Every section is a function taking `BenchSettings` and returning rows (a list of flat dicts);
`SECTIONS` maps section names to them. Implementations are timed in turns (the order rotates),
after a warm-up, so load from other processes hits them alike; ratios are medians of paired
ratios (two contenders' times for the same work, measured back to back). After the sections, a
``targets`` table says which of the benchmark's targets the measured ratios meet. The JSON records
the machine and the git commit measured (and which code files had uncommitted edits).
The defaults take about 10 minutes on 2 cores, mostly in chromadb's embedders, which pad every
text to 256 word pieces.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from engram.stores.embeddings import LocalEmbeddings, resolve_model_dir

Row = dict[str, Any]
MAX_STORE_OVERHEAD = 1.25
MIN_EMBED_SPEEDUP = 4.0
MAX_LOCK_OVERHEAD = 1.05
MAX_PROCESSES_SIZE = 10_000
"""The ``processes`` section runs at the store sizes up to this one."""
MIN_COALESCING_SPEEDUP = 10.0
_CODE_FOLDERS = ("stores", "nodes", "graph", "evals")


@dataclass(frozen=True)
class BenchSettings:
    """Knobs shared by the sections.

    Attributes:
        repeats: Timed repetitions per measurement (after one warm-up); the median is reported.
        texts: Texts per embedding call in the ``embeddings`` section.
        seed: Seed of the generated texts and vectors.
        store_sizes: Item counts of the ``store`` section.
        concurrent_calls: Calls in flight at once in the ``concurrent`` section.
        reloads: Reloads per store size in the ``reloads`` section.
    """

    repeats: int = 3
    texts: int = 128
    seed: int = 0
    store_sizes: tuple[int, ...] = (1_000, 10_000, 50_000)
    concurrent_calls: int = 6_000
    reloads: int = 30


Section = Callable[[BenchSettings], list[Row]]

_WORDS = (  # noqa: SIM905 (a sentence reads better than 64 quoted words)
    "the a user prefers dark mode in their code editor and works on a python project for the "
    "team every morning meeting about budget moved to thursday afternoon because client asked "
    "for more time to review new design of mobile app which should ship before end of year "
    "while we still need tests docs and release notes she likes coffee tea music books travel"
).split()
_LENGTHS = {"short": (20, 40), "long": (200, 250)}  # word pieces, [CLS] and [SEP] included


def bench_embeddings(settings: BenchSettings) -> list[Row]:
    """`LocalEmbeddings` vs chromadb's embedders on short and long texts; one row per pair."""
    from chromadb.utils.embedding_functions import DefaultEmbeddingFunction
    from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

    model_dir = resolve_model_dir()
    rows: list[Row] = []
    with _chromadb_reads(model_dir):
        local = LocalEmbeddings(model_dir, cache_size=0)
        embedders: dict[str, Callable[[list[str]], Sequence[Any]]] = {
            "LocalEmbeddings": local.embed_documents,
            "DefaultEmbeddingFunction": DefaultEmbeddingFunction(),
            "ONNXMiniLM_L6_V2 reused": ONNXMiniLM_L6_V2(),
        }
        for kind, (low, high) in _LENGTHS.items():
            texts = _texts(model_dir, settings.texts, low, high, settings.seed)
            timings, outputs = _time_in_turns(embedders, texts, settings.repeats)
            reference = np.asarray(outputs["DefaultEmbeddingFunction"])
            default_s = timings["DefaultEmbeddingFunction"]
            for name, seconds in timings.items():
                median = statistics.median(seconds)
                paired = statistics.median(d / s for d, s in zip(default_s, seconds, strict=True))
                rows.append(
                    {
                        "texts": kind,
                        "embedder": name,
                        "n": len(texts),
                        "word_pieces": f"{low}-{high}",
                        "median_s": round(median, 4),
                        "texts_per_s": round(len(texts) / median, 1),
                        "x_vs_default": round(paired, 2),
                        "min_cosine_vs_default": round(
                            float((np.asarray(outputs[name]) * reference).sum(axis=1).min()), 6
                        ),
                    }
                )
    return rows


def _store_section(settings: BenchSettings) -> list[Row]:
    from engram.evals.bench.stores.store import bench_store

    return bench_store(settings.store_sizes, settings.seed)


def _processes_section(settings: BenchSettings) -> list[Row]:
    from engram.evals.bench.stores.processes import bench_processes

    return bench_processes(
        tuple(s for s in settings.store_sizes if s <= MAX_PROCESSES_SIZE) or (1_000,),
        settings.seed,
    )


def _concurrent_section(settings: BenchSettings) -> list[Row]:
    from engram.evals.bench.stores.concurrent import bench_concurrent

    return bench_concurrent(settings.concurrent_calls, settings.repeats)


def _reloads_section(settings: BenchSettings) -> list[Row]:
    from engram.evals.bench.stores.reloads import bench_reloads

    sizes = tuple(s for s in settings.store_sizes if s <= MAX_PROCESSES_SIZE) or (1_000,)
    return bench_reloads(sizes, settings.reloads)


SECTIONS: dict[str, Section] = {
    "store": _store_section,
    "processes": _processes_section,
    "reloads": _reloads_section,
    "embeddings": bench_embeddings,
    "concurrent": _concurrent_section,
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected sections, print a table per section, then one JSON blob."""
    parser = argparse.ArgumentParser(
        prog="python -m engram.evals.bench stores", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--only", action="append", choices=sorted(SECTIONS), help="section to run (repeatable)"
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the JSON to PATH")
    parser.add_argument(
        "--repeats", type=int, default=BenchSettings.repeats, help="timed repetitions (median)"
    )
    parser.add_argument(
        "--texts", type=int, default=BenchSettings.texts, help="texts per embedding call"
    )
    parser.add_argument(
        "--sizes",
        type=lambda v: tuple(int(x) for x in v.split(",")),
        default=BenchSettings.store_sizes,
        help="store sizes, comma-separated (default 1000,10000,50000)",
    )
    parser.add_argument(
        "--calls",
        type=int,
        default=BenchSettings.concurrent_calls,
        help="concurrent calls of the concurrent section (default 6000)",
    )
    parser.add_argument(
        "--reloads",
        type=int,
        default=BenchSettings.reloads,
        help="reloads per store size of the reloads section (default 30)",
    )
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.texts < 1 or min(args.sizes) < 1 or args.calls < 6:
        parser.error("--repeats, --texts and --sizes must be >= 1, --calls >= 6")
    if args.reloads < 1:
        parser.error("--reloads must be >= 1")
    settings = BenchSettings(
        repeats=args.repeats,
        texts=args.texts,
        store_sizes=args.sizes,
        concurrent_calls=args.calls,
        reloads=args.reloads,
    )

    console = Console(width=None if sys.stdout.isatty() else 200)
    code = code_state()  # before the sections: the code they import is the code measured
    results: dict[str, list[Row]] = {}
    for name in args.only or list(SECTIONS):
        with console.status(f"running {name}..."):
            results[name] = SECTIONS[name](settings)
        console.print(_table(name, results[name]))
    verdicts = targets(results)
    if verdicts:
        console.print(_table("targets", verdicts))
    blob = json.dumps(
        {
            "settings": asdict(settings),
            "machine": _machine(),
            "code": code,
            "sections": results,
            "targets": verdicts,
        },
        indent=2,
    )
    print(blob)
    if args.json:
        args.json.write_text(blob + "\n", encoding="utf-8")
    return 0


def targets(results: dict[str, list[Row]]) -> list[Row]:
    """The benchmark's targets (`MAX_STORE_OVERHEAD`, `MIN_EMBED_SPEEDUP`, ...), each with the
    measured ratio and whether it holds."""
    verdicts: list[Row] = []
    store = results.get("store", [])
    largest = max((row["items"] for row in store), default=0)
    for row in store:
        verdicts.append(
            _verdict(
                f"ChromaStore {row['measure'].split(',')[0]} <= {MAX_STORE_OVERHEAD}x raw chromadb",
                row["items"],
                row["x_vs_raw"],
                row["x_vs_raw"] <= MAX_STORE_OVERHEAD,
            )
        )
    for row in store:
        if row["items"] == largest and row["measure"].startswith("search"):
            verdicts.append(
                _verdict(
                    f"ChromaStore {row['measure'].split(',')[0]} faster than InMemoryStore",
                    row["items"],
                    row["x_vs_in_memory"],
                    row["x_vs_in_memory"] < 1,
                )
            )
    for row in results.get("processes", []):
        if "reload" not in row["measure"]:
            verdicts.append(
                _verdict(
                    f"ChromaStore {row['measure'].split(',')[0]} with the folder lock "
                    f"<= {MAX_LOCK_OVERHEAD}x without",
                    row["items"],
                    row["ratio"],
                    row["ratio"] <= MAX_LOCK_OVERHEAD,
                )
            )
    for row in results.get("embeddings", []):
        if row["embedder"] == "LocalEmbeddings" and row["texts"] == "short":
            verdicts.append(
                _verdict(
                    "LocalEmbeddings >= 4x DefaultEmbeddingFunction, short texts",
                    row["n"],
                    row["x_vs_default"],
                    row["x_vs_default"] >= MIN_EMBED_SPEEDUP,
                )
            )
    for row in results.get("concurrent", []):
        verdicts.append(
            _verdict(
                f"concurrent calls ({row['callers']}, {row['client']}) >= "
                f"{MIN_COALESCING_SPEEDUP}x each call on its own",
                row["calls"],
                row["x_vs_one_by_one"],
                row["x_vs_one_by_one"] >= MIN_COALESCING_SPEEDUP,
            )
        )
    return verdicts


def _verdict(target: str, size: int, ratio: float, holds: bool) -> Row:
    return {"target": target, "n": size, "measured": ratio, "holds": holds}


def _time_in_turns(
    embedders: dict[str, Callable[[list[str]], Sequence[Any]]], texts: list[str], repeats: int
) -> tuple[dict[str, list[float]], dict[str, Sequence[Any]]]:
    outputs = {name: embed(texts) for name, embed in embedders.items()}  # warm-up
    timings: dict[str, list[float]] = {name: [] for name in embedders}
    names = list(embedders)
    for repeat in range(repeats):
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            embed = embedders[name]
            start = time.perf_counter()
            embed(texts)
            timings[name].append(time.perf_counter() - start)
    return timings, outputs


def _texts(model_dir: Path, count: int, low: int, high: int, seed: int) -> list[str]:
    """`count` distinct texts of `low`-`high` word pieces (special tokens included)."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    words = [w for w in dict.fromkeys(_WORDS) if len(tokenizer.encode(w).ids) == 3]  # CLS w SEP
    rng = np.random.default_rng(seed)
    sizes = rng.integers(low - 2, high - 1, size=count)  # one word piece per word, plus 2 specials
    texts = [" ".join(words[i] for i in rng.integers(len(words), size=int(n))) for n in sizes]
    if not all(low <= len(e.ids) <= high for e in tokenizer.encode_batch(texts)):
        raise RuntimeError(f"generated texts fall outside {low}-{high} word pieces")
    return texts


@contextmanager
def _chromadb_reads(model_dir: Path) -> Iterator[None]:
    """Point chromadb's ONNXMiniLM_L6_V2 at `model_dir` (links in a temporary cache folder)."""
    from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

    saved = ONNXMiniLM_L6_V2.DOWNLOAD_PATH
    with tempfile.TemporaryDirectory(prefix="engram-bench-") as tmp:
        folder = Path(tmp) / ONNXMiniLM_L6_V2.EXTRACTED_FOLDER_NAME
        folder.mkdir()
        for source in model_dir.iterdir():
            (folder / source.name).symlink_to(source.resolve())
        ONNXMiniLM_L6_V2.DOWNLOAD_PATH = Path(tmp)
        try:
            yield
        finally:
            ONNXMiniLM_L6_V2.DOWNLOAD_PATH = saved


def _machine() -> dict[str, Any]:
    import chromadb
    import onnxruntime

    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "chromadb": chromadb.__version__,
        "onnxruntime": onnxruntime.__version__,
    }


def code_state() -> dict[str, Any]:
    """The git commit measured, and the code files that differ from it (uncommitted edits)."""
    root = Path(__file__).resolve().parents[3]  # the repository
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", *_CODE_FOLDERS],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "uncommitted": None}  # not a git checkout (an installed wheel)
    return {"commit": commit, "uncommitted": sorted(line[3:] for line in dirty if line)}


def _table(title: str, rows: list[Row]) -> Table:
    table = Table(title=title)
    columns = list(dict.fromkeys(key for row in rows for key in row))
    for column in columns:
        text = isinstance(rows[0].get(column), str)
        table.add_column(column, justify="left" if text else "right", no_wrap=True)
    for row in rows:
        table.add_row(*(str(row.get(column, "")) for column in columns))
    return table
