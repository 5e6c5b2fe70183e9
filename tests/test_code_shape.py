"""Every function of engram reads in one screen: none is over `MAX_LINES` lines (a nested
function counts on its own, and inside the one that holds it)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("graph", "nodes", "stores", "evals")
MAX_LINES = 80


def long_functions() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    lines = node.end_lineno - node.lineno + 1
                    if lines > MAX_LINES:
                        where = path.relative_to(ROOT).as_posix()
                        found.append(f"{where}:{node.lineno} {node.name}: {lines} lines")
    return found


def test_no_function_is_over_80_lines() -> None:
    assert long_functions() == []
