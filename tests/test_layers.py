"""The tree is the layer map: arrows only point down, and nothing imports in a cycle.

Layers, bottom to top: `stores/` < `nodes/` < `graph/` < `evals/` < `graph/cli/` (the `engram`
command is the composition root, so `engram eval` may import the evals) < `evals/bench/` (the
benchmarks measure every layer, the command's start-up included). A module belongs to the
deepest of these folders that holds it. Every import counts: module level, inside functions and
under `TYPE_CHECKING`.

Inside a layer, rooms (sub-folders) may import each other's modules in one direction only, and
no module imports itself back through others.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("stores", "nodes", "graph", "evals", "graph/cli", "evals/bench")
"""Folders, bottom to top."""


def layer(module: str) -> int:
    """The rank of the deepest layer folder holding `module` (an `engram.` name)."""
    path = "/".join(module.split(".")[1:])
    return max(
        rank for rank, folder in enumerate(LAYERS) if path == folder or path.startswith(folder + "/")
    )


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(["engram", *parts])


MODULES = {
    module_name(p): p for folder in ("stores", "nodes", "graph", "evals") for p in (ROOT / folder).rglob("*.py")
}


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every `engram` module `path` imports; `from pkg import name` counts as
    importing `pkg.name` when that is a module, else `pkg`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                name = f"{node.module}.{alias.name}"
                found.append((node.lineno, name if name in MODULES else node.module))
    return [(line, name) for line, name in found if name.startswith("engram.")]


def _package(module: str) -> str:
    path = MODULES[module]
    return module if path.name == "__init__.py" else module.rsplit(".", 1)[0]


def test_every_module_has_a_layer() -> None:
    assert len(MODULES) > 50
    assert all(layer(m) >= 0 for m in MODULES)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_import_points_up(module: str) -> None:
    upward = [
        f"line {line}: {name}"
        for line, name in imports(MODULES[module])
        if layer(name) > layer(module) and not name.startswith(module + ".")
    ]
    assert not upward, f"{module} imports from a layer above it: {upward}"


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def test_no_module_imports_in_a_cycle() -> None:
    """A package `__init__` that only re-exports is left out: importing the package is
    importing the modules it names."""
    edges = {
        m: {n for _, n in imports(p) if n in MODULES and n != m}
        for m, p in MODULES.items()
        if p.name != "__init__.py"
    }
    for targets in edges.values():
        targets -= {n for n in targets if MODULES[n].name == "__init__.py"}
    assert _cycles(edges) == []


def test_rooms_depend_on_each_other_one_way() -> None:
    """Sibling folders (`stores/chroma` and `stores/lexical`, `nodes/model` and
    `nodes/extract`, ...) never import each other both ways."""
    edges: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        here = _package(module)
        for _, name in imports(path):
            if name not in MODULES:
                continue
            there = _package(name)
            if here.rsplit(".", 1)[0] == there.rsplit(".", 1)[0] and here != there:
                edges.setdefault(here, set()).add(there)
    assert _cycles(edges) == []


def test_the_rules_catch_an_upward_import_and_a_cycle(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from engram.graph import x\n"
    )
    assert [(line, layer(name)) for line, name in imports(probe)] == [(3, LAYERS.index("graph"))]
    assert layer("engram.graph.cli.commands") > layer("engram.evals.dialogs.runner")
    assert layer("engram.evals.bench.cli") > layer("engram.graph.cli.commands")
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
