"""What the `engram memory` commands load, run as the console script runs them (a process that
ends with the command): never the graph stack, the redaction rules only when something is
written, the embedding model from its optimised copy, and what opening the store loaded frozen
out of the cyclic collector's way. The start-up times themselves are measured by
`python -m engram.evals.bench cli`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engram.stores.optimized_model import CACHE_ENV

GRAPH_STACK = (
    "engram.graph.builder",
    "engram.graph.middleware",
    "engram.graph.models",
    "engram.graph.local_model",
    "engram.nodes.start",
    "engram.nodes.respond",
    "engram.nodes.consolidate",
    "engram.evals",
    "langgraph.graph",
    "langgraph.pregel",
    "langchain.agents",
    "langchain_openai",
    "openai",
    "xllamacpp",
    "scipy",
    "bm25s",
)
REDACTION_RULES = "engram.stores.secrets.redact"

SCRIPT = """
import gc, json, sys
from engram.graph.cli import main
report = sys.argv.pop(1)
try:
    main()
finally:
    with open(report, "w") as out:
        json.dump(
            {
                "modules": sorted(sys.modules),
                "frozen": gc.get_freeze_count(),
            },
            out,
        )
"""


def engram(tmp_path: Path, *args: str) -> dict:
    """Run `engram ARGS` as the console script does: what it loaded, how many objects it
    froze out of the collector's way and its output (`stdout`)."""
    report = tmp_path / "report.json"
    env = {**os.environ, CACHE_ENV: str(tmp_path / "onnx")}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(report), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {**json.loads(report.read_text()), "stdout": done.stdout}


def loaded(report: dict, *prefixes: str) -> list[str]:
    return [m for m in report["modules"] if any(m == p or m.startswith(p + ".") for p in prefixes)]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A data folder with one memory of alice's, and its id."""
    folder = tmp_path_factory.mktemp("data")
    add = ["add", "--user", "alice", "Alice prefers dark mode", "--json"]
    report = engram(folder, "memory", *add, "--data", str(folder))
    assert loaded(report, REDACTION_RULES)  # a write redacts
    return folder, json.loads(report["stdout"])["memory"]["id"]


@pytest.mark.parametrize(
    "command",
    [
        ["list"],
        ["show", "ID"],
        ["search", "editor theme"],
        ["add", "Alice moved to Berlin"],
        ["add", "Alice prefers dark mode"],  # a duplicate: the policy stops before embedding
        ["maintain", "--dry-run", "--no-compress"],
        ["stats"],
        ["export"],
    ],
    ids=lambda c: " ".join(c),
)
def test_store_commands_never_load_the_graph_stack(
    data: tuple[Path, str], tmp_path: Path, command: list[str]
) -> None:
    folder, memory_id = data
    command = [memory_id if arg == "ID" else arg for arg in command]
    user = [] if command[0] == "stats" else ["--user", "alice"]

    report = engram(tmp_path, "memory", *command, *user, "--data", str(folder))

    assert loaded(report, *GRAPH_STACK) == []
    assert report["frozen"]  # what opening the store loaded is spared the collector
    writes = command[0] == "add"
    assert bool(loaded(report, REDACTION_RULES)) == writes, "redaction rules only for writes"


def test_search_starts_the_model_from_its_optimised_copy(
    data: tuple[Path, str], tmp_path: Path
) -> None:
    search = ["memory", "search", "theme", "--user", "alice", "--data", str(data[0]), "--json"]
    first = engram(tmp_path, *search)
    [entry] = (tmp_path / "onnx").iterdir()
    built = entry.stat().st_mtime_ns

    again = engram(tmp_path, *search)

    assert list((tmp_path / "onnx").iterdir()) == [entry] and entry.stat().st_mtime_ns == built
    found = [[(m["id"], m["similarity"]) for m in json.loads(r["stdout"])] for r in (first, again)]
    assert found[0] == found[1] and found[0]  # the copy finds what the original model found
