"""Benchmarks: `python -m engram.evals.bench SECTION [options]`.

Each section measures one layer side by side with its counterpart in one run and prints ratios
(`python -m engram.evals.bench SECTION --help` for its options):

    stores       embeddings and ChromaStore against raw chromadb and langgraph's stores
    graph        the graph's turn and recall against calling the store directly
    cli          start-up of the `engram` command against `import chromadb`
    retrieval    recall quality and latency on LoCoMo
    memory-work  turns that wait (or not) for the memory model
    stress       wrong answers of `engram memory` commands run in sequence and at once
    working-memory  a tool-using agent on the local model with long tool results offloaded or not
    scale        a data folder of 1,000 to 100,000 items over many users: open, recall, delete
    search       memory search on query/memory pairs: the memory asked for first, nothing unrelated
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib import import_module

SECTIONS = {
    "stores": "engram.evals.bench.stores.run",
    "graph": "engram.evals.bench.graph",
    "cli": "engram.evals.bench.cli",
    "retrieval": "engram.evals.bench.retrieval",
    "memory-work": "engram.evals.bench.memory_work",
    "stress": "engram.evals.bench.stress",
    "working-memory": "engram.evals.bench.working_memory",
    "scale": "engram.evals.bench.scale",
    "search": "engram.evals.bench.search",
}


def main(argv: Sequence[str] | None = None) -> int:
    """Run one section with the rest of `argv`; its exit code (2 for an unknown section)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] not in SECTIONS:
        print(__doc__, file=sys.stderr)
        return 2
    return import_module(SECTIONS[args[0]]).main(args[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
