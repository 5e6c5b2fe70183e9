"""Memory search by meaning: is the memory a query asks for ranked first, and does a query about
nothing the user said return nothing?

    python -m engram.evals.bench search [--pairs FILE] [--corpus FILE] [--json out.json]

The pairs file (YAML) holds `pairs:` (each `{query, memory, language}`: a search as a person
types it, the memory it should find as stored, and `en`, `zh`, `en-zh` or `zh-en` for the
query's and the memory's languages), `unrelated:` (queries about nothing in the corpus) and,
optionally, `memories:` (more memories to search among). `--corpus` adds the `memories:` of
another file. Every memory is stored for one user in a fresh embedded `ChromaStore`, with an
importance from 0.3 to 1.0 and a day within the last 90 (seeded, so a run repeats), so that
neither can stand in for relevance; the search is the one every surface uses
(`LongTermMemory.search`, top 5). It reports, per language pair and overall, how often the
memory is first and in the top 5, and how many unrelated queries return anything.

The bundled `search_pairs.yaml` is a small example; measure on pairs nobody tuned on.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

BUNDLED = Path(__file__).with_name("search_pairs.yaml")
USER = "search-bench"
FIRST_TARGET = 0.9
"""The memory asked for should come first for at least this share of the pairs."""


def load(pairs_file: Path, corpus_file: Path | None) -> tuple[list[dict], list[str], list[str]]:
    """(pairs, unrelated queries, every memory text once) from the files."""
    data = yaml.safe_load(pairs_file.read_text(encoding="utf-8"))
    extra = yaml.safe_load(corpus_file.read_text(encoding="utf-8")) if corpus_file else {}
    pairs = list(data["pairs"])
    texts = [p["memory"] for p in pairs] + list(data.get("memories", [])) + list(
        extra.get("memories", [])
    )
    return pairs, list(data.get("unrelated", [])), list(dict.fromkeys(texts))


def measure(pairs: list[dict], unrelated: list[str], texts: list[str]) -> dict[str, Any]:
    """Store `texts` for one user, run every query, and count."""
    from engram.stores.chroma.store import ChromaStore, default_index
    from engram.stores.memory.long_term import LongTermMemory
    from engram.stores.memory.types import Memory, memory_put
    from engram.stores.namespaces import memory_namespace

    rng = random.Random(7)
    now = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="engram-search-") as folder:
        store = ChromaStore(path=folder, index=default_index())
        namespace = memory_namespace(USER)
        store.batch(
            [
                memory_put(
                    namespace,
                    Memory.new(
                        text,
                        "fact",
                        round(rng.uniform(0.3, 1.0), 2),
                        now=(now - timedelta(days=rng.uniform(0, 90))).isoformat(),
                    ),
                )
                for text in texts
            ]
        )
        memory = LongTermMemory(store)
        by_language: dict[str, list[int]] = defaultdict(list)  # rank of the memory, 0 = missing
        misses = []
        for pair in pairs:
            found = [s.memory.content for s in memory.search(USER, pair["query"], touch=False)]
            rank = found.index(pair["memory"]) + 1 if pair["memory"] in found else 0
            by_language[pair["language"]].append(rank)
            if rank != 1:
                misses.append({**pair, "rank": rank, "first": found[0] if found else None})
        returned = {q: len(memory.search(USER, q, touch=False)) for q in unrelated}
        store.close()
    rows = {lang: _rates(ranks) for lang, ranks in sorted(by_language.items())}
    rows["all"] = _rates([r for ranks in by_language.values() for r in ranks])
    return {
        "memories": len(texts),
        "rates": rows,
        "unrelated_queries": len(unrelated),
        "unrelated_answered": sum(1 for n in returned.values() if n),
        "unrelated_results": sum(returned.values()),
        "misses": misses,
    }


def _rates(ranks: list[int]) -> dict[str, float | int]:
    return {
        "pairs": len(ranks),
        "first": sum(r == 1 for r in ranks) / len(ranks) if ranks else 0.0,
        "top5": sum(r > 0 for r in ranks) / len(ranks) if ranks else 0.0,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engram.evals.bench search", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--pairs", type=Path, default=BUNDLED, help="the pairs file (YAML)")
    parser.add_argument("--corpus", type=Path, help="a file whose `memories:` are added")
    parser.add_argument("--json", type=Path, help="also write the JSON result to this file")
    args = parser.parse_args(argv)
    result = measure(*load(args.pairs, args.corpus))
    table = Table(title=f"memory search over {result['memories']} memories")
    for column in ("pairs", "queries", "first", "in top 5"):
        table.add_column(column, justify="right" if column != "pairs" else "left")
    for lang, row in result["rates"].items():
        table.add_row(lang, str(row["pairs"]), f"{row['first']:.2f}", f"{row['top5']:.2f}")
    console = Console(width=120)
    console.print(table)
    console.print(
        f"unrelated queries answered: {result['unrelated_answered']} of "
        f"{result['unrelated_queries']} ({result['unrelated_results']} results)",
        highlight=False,
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    met = result["rates"]["all"]["first"] >= FIRST_TARGET and not result["unrelated_answered"]
    return 0 if met else 1
