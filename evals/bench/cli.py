"""Start-up time of the `engram` command against `python -c "import chromadb"`.

    python -m engram.evals.bench cli [--repeats 15] [--json out.json]

Every `engram memory` command opens a Chroma store, so `import chromadb` is its floor; the
target is at most 1.3x that. Each repetition runs the contenders back to back as fresh
processes, in rotating order, on a data folder with 50 memories of one user, and records each
one's wall time and CPU time (user + system, from the kernel's accounting of the child). The
ratio reported is the median of the per-repetition ratios, so load from other processes hits both
sides of a pair alike. The commands run with bytecode caching on (see `_child_env`). A second
floor, `chromadb.PersistentClient` on the same folder, shows what Chroma itself costs a command
that reads data ("cpu ÷ client"); a third adds langgraph's `BaseStore` module, which every store
command imports (the store is a LangGraph store); a fourth, loading engram's ONNX embedding model
and embedding one query, what `search` and `add` (which embed text) cannot do without ("cpu ÷
embed"). The
embedding model starts from its optimised copy (`engram.stores.optimized_model`), as in every
process but the first after an install: seeding the folder builds the copy if there is none.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

TARGET_RATIO = 1.3
"""At most this many times the time of `import chromadb`."""

BASELINE = "import chromadb"
CLIENT = "import chromadb; PersistentClient(folder)"
"""A second floor for commands that read data: Chroma's own client start-up on the folder."""
STORE = "import chromadb, langgraph.store.base; PersistentClient(folder)"
"""The least any engram store command does: Chroma's client, and langgraph's `BaseStore` module,
which imports langchain-core's `Embeddings` and with it langchain-core's callbacks, messages,
`requests` and `pydantic.v1`."""
EMBED = "import chromadb; embed one query"
"""What `search` and `add` cannot do without: loading engram's ONNX embedding model (a
langchain-core `Embeddings`) and embedding one text."""
FLOORS = (BASELINE, CLIENT, STORE, EMBED)
RUN = "{run}"
"""Replaced in a command by the number of its run: `add` stores a new text each time."""


def contenders(data: Path, memory_id: str) -> dict[str, list[str]]:
    """The commands timed, by label; the first is the baseline."""
    engram = [sys.executable, "-c", "from engram.graph.cli import main; main()"]  # the script
    on_data = ["--user", "alice", "--data", str(data)]
    return {
        BASELINE: [sys.executable, "-c", "import chromadb"],
        CLIENT: [
            sys.executable,
            "-c",
            f"import chromadb; chromadb.PersistentClient(path={str(data / 'chroma')!r})",
        ],
        STORE: [
            sys.executable,
            "-c",
            (
                "import chromadb, langgraph.store.base; "
                f"chromadb.PersistentClient(path={str(data / 'chroma')!r})"
            ),
        ],
        EMBED: [
            sys.executable,
            "-c",
            (
                "import chromadb; from engram.stores.embeddings import LocalEmbeddings; "
                "LocalEmbeddings().embed_query('project 3')"
            ),
        ],
        "engram memory list --user alice": [*engram, "memory", "list", *on_data],
        "engram memory show ID": [*engram, "memory", "show", memory_id, *on_data],
        "engram memory stats": [*engram, "memory", "stats", "--data", str(data)],
        "engram memory export --user alice": [*engram, "memory", "export", *on_data],
        "engram memory maintain --dry-run": [
            *engram,
            "memory",
            "maintain",
            "--dry-run",
            "--no-compress",
            *on_data,
        ],
        "engram memory search (embeds the query)": [
            *engram,
            "memory",
            "search",
            "project 3",
            *on_data,
        ],
        "engram memory add (embeds, new text)": [
            *engram,
            "memory",
            "add",
            f"Alice's neighbour number {RUN} keeps bees",
            *on_data,
        ],
        "engram memory add (a duplicate: embeds nothing)": [
            *engram,
            "memory",
            "add",
            "Alice noted fact number 3 about project 3",
            *on_data,
        ],
        "engram memory --help": [*engram, "memory", "--help"],
        "engram --help": [*engram, "--help"],
    }


def seed(data: Path, count: int = 50) -> str:
    """A data folder with `count` memories of user alice, written as the CLI writes them;
    returns the id of one of them."""
    from engram.stores.chroma.store import ChromaStore, default_index
    from engram.stores.embeddings import LocalEmbeddings
    from engram.stores.memory.long_term import LongTermMemory
    from engram.stores.memory.types import MemoryCandidate

    store = ChromaStore(path=data / "chroma", index=default_index(LocalEmbeddings()))
    try:
        candidates = [
            MemoryCandidate(
                content=f"Alice noted fact number {i} about project {i % 7}", category="fact"
            )
            for i in range(count)
        ]
        results = LongTermMemory(store).upsert("alice", candidates)
        return next(r.memory.id for r in results if r.memory is not None)
    finally:
        store.close()


def run(repeats: int) -> dict[str, Any]:
    """Time the contenders `repeats` times each; returns the result as JSON-ready data."""
    from engram.evals.bench.stores import code_state

    code = code_state()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder)
        commands = contenders(data, seed(data))
        names = list(commands)
        env = _child_env()
        for name in names:  # warm the file cache, check that each command works
            _time(_numbered(commands[name], -1), env)
        wall: dict[str, list[float]] = {n: [] for n in names}
        cpu: dict[str, list[float]] = {n: [] for n in names}
        for rep in range(repeats):
            order = names[rep % len(names) :] + names[: rep % len(names)]
            for name in order:
                w, c = _time(_numbered(commands[name], rep), env)
                wall[name].append(w)
                cpu[name].append(c)
    rows = []
    for name in names:
        wall_ratios = [w / b for w, b in zip(wall[name], wall[BASELINE], strict=True)]
        cpu_ratios = [c / b for c, b in zip(cpu[name], cpu[BASELINE], strict=True)]
        client_ratios = [c / b for c, b in zip(cpu[name], cpu[CLIENT], strict=True)]
        embed_ratios = [c / b for c, b in zip(cpu[name], cpu[EMBED], strict=True)]
        rows.append(
            {
                "command": name,
                "wall_p50_s": round(statistics.median(wall[name]), 3),
                "cpu_p50_s": round(statistics.median(cpu[name]), 3),
                "wall_ratio": round(statistics.median(wall_ratios), 3),
                "cpu_ratio": round(statistics.median(cpu_ratios), 3),
                "cpu_ratio_vs_client": round(statistics.median(client_ratios), 3),
                "cpu_ratio_vs_embed": round(statistics.median(embed_ratios), 3),
            }
        )
        rows[-1]["within_target"] = name in FLOORS or (
            rows[-1]["wall_ratio"] <= TARGET_RATIO and rows[-1]["cpu_ratio"] <= TARGET_RATIO
        )
    return {
        "benchmark": "engram command start-up against import chromadb",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average_1m_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "repeats": repeats,
        "code": code,
        "rows": rows,
        "target_ratio": TARGET_RATIO,
        "target_met": all(r["within_target"] for r in rows),
    }


def _numbered(command: list[str], run: int) -> list[str]:
    return [arg.replace(RUN, str(run)) for arg in command]


def _child_env() -> dict[str, str]:
    """This process's environment for the timed commands, with bytecode caching on: an installed
    engram has its `.pyc` files, as chromadb has, and `PYTHONDONTWRITEBYTECODE` would make every
    run of engram (not of chromadb) compile its sources again."""
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def _time(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of `command` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} failed ({done.returncode}): {done.stderr.decode()[-500:]}"
        )
    used = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, used


def _table(result: dict[str, Any]) -> Table:
    table = Table(title=f"{result['benchmark']} (target <= {TARGET_RATIO}x)")
    columns = (
        "command",
        "wall p50 s",
        "cpu p50 s",
        "wall ratio",
        "cpu ratio",
        "cpu ÷ client",
        "cpu ÷ embed",
    )
    for column in columns:
        table.add_column(column, justify="left" if column == "command" else "right")
    for row in result["rows"]:
        table.add_row(
            row["command"],
            f"{row['wall_p50_s']:.3f}",
            f"{row['cpu_p50_s']:.3f}",
            f"{row['wall_ratio']:.2f}",
            f"{row['cpu_ratio']:.2f}",
            f"{row['cpu_ratio_vs_client']:.2f}",
            f"{row['cpu_ratio_vs_embed']:.2f}",
        )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engram.evals.bench cli", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--repeats", type=int, default=15, help="runs of each command")
    parser.add_argument("--json", type=Path, help="also write the JSON result to this file")
    args = parser.parse_args(argv)
    result = run(args.repeats)
    Console(width=120).print(_table(result))
    blob = json.dumps(result, indent=2)
    print(blob)
    if args.json:
        args.json.write_text(blob + "\n")
    return 0 if result["target_met"] else 1
