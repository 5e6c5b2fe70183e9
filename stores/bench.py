"""Benchmarks of engram's stores, measured side by side in one run, printed as tables plus JSON.

Run::

    python -m engram.stores.bench                      # every section
    python -m engram.stores.bench --only embeddings    # one section (repeat --only for several)
    python -m engram.stores.bench --json bench.json    # also write the JSON blob to a file

Sections:

- ``store``: `ChromaStore` vs raw chromadb collection calls vs langgraph's `InMemoryStore`:
  batched put throughput and top-10 search latency at 1k, 10k and 50k items (see
  `engram.stores.bench_store`). Targets: ChromaStore <= 1.25x raw chromadb for search and batched
  put; search at 50k items faster than `InMemoryStore`.
- ``embeddings``: `LocalEmbeddings` vs chromadb's `DefaultEmbeddingFunction` (used the way Chroma
  calls it: a fresh `ONNXMiniLM_L6_V2` per call) and vs one reused `ONNXMiniLM_L6_V2` instance
  (to show what is left once model loading is out of the picture), on short texts (20-40 word
  pieces) and long texts (200-250 word pieces). The cache of `LocalEmbeddings` is off: the model
  is measured, not the cache. Target: `LocalEmbeddings` >= 4x `DefaultEmbeddingFunction` on short
  texts.

The model files come from `$ENGRAM_EMBEDDING_MODEL_DIR` or chromadb's cache folder (see
`engram.stores.embeddings.resolve_model_dir`); chromadb's embedder is pointed at the same files, so
the benchmark runs offline. Without network, set the variable first, e.g.
``export ENGRAM_EMBEDDING_MODEL_DIR=../shared/models/all-MiniLM-L6-v2/onnx``.

Every section is a function taking `BenchSettings` and returning rows (a list of flat dicts);
`SECTIONS` maps section names to them. Implementations are timed in turns inside each
repetition, after a warm-up, so load from other processes hits them alike; medians are reported.
The defaults (128 texts, 3 repetitions) take a few minutes on 2 cores, mostly in chromadb's
embedders, which pad every text to 256 word pieces.
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


@dataclass(frozen=True)
class BenchSettings:
    """Knobs shared by the sections.

    Attributes:
        repeats: Timed repetitions per measurement (after one warm-up); the median is reported.
        texts: Texts per embedding call in the ``embeddings`` section.
        seed: Seed of the generated texts and vectors.
        store_sizes: Item counts of the ``store`` section.
    """

    repeats: int = 3
    texts: int = 128
    seed: int = 0
    store_sizes: tuple[int, ...] = (1_000, 10_000, 50_000)


Section = Callable[[BenchSettings], list[Row]]

_WORDS = (
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
            default_s = statistics.median(timings["DefaultEmbeddingFunction"])
            for name, seconds in timings.items():
                median = statistics.median(seconds)
                rows.append(
                    {
                        "texts": kind,
                        "embedder": name,
                        "n": len(texts),
                        "word_pieces": f"{low}-{high}",
                        "median_s": round(median, 4),
                        "texts_per_s": round(len(texts) / median, 1),
                        "x_vs_default": round(default_s / median, 2),
                        "min_cosine_vs_default": round(
                            float((np.asarray(outputs[name]) * reference).sum(axis=1).min()), 6
                        ),
                    }
                )
    return rows


def _store_section(settings: BenchSettings) -> list[Row]:
    from engram.stores.bench_store import bench_store

    return bench_store(settings.store_sizes, settings.seed)


SECTIONS: dict[str, Section] = {"store": _store_section, "embeddings": bench_embeddings}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the selected sections, print a table per section, then one JSON blob."""
    parser = argparse.ArgumentParser(
        prog="python -m engram.stores.bench", description=__doc__.split("\n")[0]
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
    args = parser.parse_args(argv)
    if args.repeats < 1 or args.texts < 1 or min(args.sizes) < 1:
        parser.error("--repeats, --texts and --sizes must be >= 1")
    settings = BenchSettings(repeats=args.repeats, texts=args.texts, store_sizes=args.sizes)

    console = Console(width=None if sys.stdout.isatty() else 140)
    results: dict[str, list[Row]] = {}
    for name in args.only or list(SECTIONS):
        with console.status(f"running {name}..."):
            results[name] = SECTIONS[name](settings)
        console.print(_table(name, results[name]))
    blob = json.dumps(
        {"settings": asdict(settings), "machine": _machine(), "sections": results}, indent=2
    )
    print(blob)
    if args.json:
        args.json.write_text(blob + "\n", encoding="utf-8")
    return 0


def _time_in_turns(
    embedders: dict[str, Callable[[list[str]], Sequence[Any]]], texts: list[str], repeats: int
) -> tuple[dict[str, list[float]], dict[str, Sequence[Any]]]:
    outputs = {name: embed(texts) for name, embed in embedders.items()}  # warm-up
    timings: dict[str, list[float]] = {name: [] for name in embedders}
    for _ in range(repeats):
        for name, embed in embedders.items():
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


def _table(title: str, rows: list[Row]) -> Table:
    table = Table(title=title)
    columns = list(dict.fromkeys(key for row in rows for key in row))
    for column in columns:
        text = isinstance(rows[0].get(column), str)
        table.add_column(column, justify="left" if text else "right", no_wrap=True)
    for row in rows:
        table.add_row(*(str(row.get(column, "")) for column in columns))
    return table


if __name__ == "__main__":
    raise SystemExit(main())
