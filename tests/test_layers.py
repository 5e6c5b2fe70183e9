"""Arrows only point down: no module imports from a layer above its own (DESIGN "Layout").

Layers, bottom to top: `engram.stores` < `engram.nodes` < `engram.graph` < `engram.evals` <
`engram.graph.cli` (the commands sit at the top, so the eval command may import the evals).
Inside `stores/` and `nodes/`, rooms are ordered the same way (the memory model never imports
maintenance, a node's helpers never import a node). Every import counts: module level, inside
functions and under `TYPE_CHECKING`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("stores", "nodes", "graph", "evals")

# (module prefix, rank): the longest matching prefix gives a module its rank.
RANKS: dict[str, float] = {
    "engram.stores": 0.0,  # embeddings, secrets, namespaces, steps, paths
    "engram.stores.lexical": 0.1,
    "engram.stores.chroma": 0.2,
    "engram.stores.memory": 0.2,
    "engram.stores.maintenance": 0.3,
    "engram.stores.bench": 0.4,
    "engram.nodes": 1.0,  # prompts, tokens, transcript, failures, context, state
    "engram.nodes.extract": 1.1,
    "engram.nodes.summarize": 1.1,
    "engram.nodes.compress": 1.1,
    "engram.nodes.merge_decision": 1.1,
    "engram.nodes.start": 1.2,
    "engram.nodes.respond": 1.3,
    "engram.nodes.compact": 1.3,
    "engram.nodes.consolidate": 1.3,
    "engram.graph": 2.0,
    "engram.graph.bench": 2.1,
    "engram.evals": 3.0,
    "engram.graph.cli": 4.0,
}
# A package's __init__ only re-exports its rooms: it takes the rank of what it re-exports.
PACKAGE_INITS = {"engram.stores", "engram.nodes", "engram.graph", "engram.evals"}


def rank(module: str) -> float:
    best = max((p for p in RANKS if module == p or module.startswith(p + ".")), key=len)
    return RANKS[best]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["engram", *parts])


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.append((node.lineno, node.module))
            # `from engram.stores import secrets` imports the module engram.stores.secrets
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.startswith("engram.")]


SOURCES = sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


def test_every_module_has_a_room() -> None:
    assert len(SOURCES) > 50
    assert all(module_name(p).split(".")[1] in FOLDERS for p in SOURCES)


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_import_points_up(path: Path) -> None:
    importer = module_name(path)
    if importer in PACKAGE_INITS:
        return
    upward = [
        f"line {line}: {name}"
        for line, name in imports(path)
        if rank(name) > rank(importer) and not name.startswith(importer + ".")
    ]
    assert not upward, f"{importer} imports from a layer above it: {upward}"


def test_the_rule_catches_an_upward_import(tmp_path: Path) -> None:
    fake = ROOT / "nodes" / "start.py"
    source = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from engram.graph import x\n"
    probe = tmp_path / "probe.py"
    probe.write_text(source)
    found = imports(probe)
    assert {line for line, _ in found} == {3}
    assert all(rank(name) > rank(module_name(fake)) for _, name in found)
