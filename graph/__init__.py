"""engram.graph: the compiled memory graph, its state and per-run settings, and the same memory
for `create_agent` agents (`EngramMiddleware`, `memory_tools`).

Names are imported on first use, so that `engram memory ...` (which lives below this package)
does not load the graph stack.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engram.graph.builder import build_graph, compile_graph
    from engram.graph.middleware import EngramMiddleware
    from engram.nodes import BuiltContext, Context, EngramState

_SOURCES = {
    "BuiltContext": "engram.nodes",
    "Context": "engram.nodes",
    "EngramState": "engram.nodes",
    "build_graph": "engram.graph.builder",
    "compile_graph": "engram.graph.builder",
    "EngramMiddleware": "engram.graph.middleware",
}

__all__ = [
    "BuiltContext",
    "Context",
    "EngramMiddleware",
    "EngramState",
    "build_graph",
    "compile_graph",
]


def __getattr__(name: str) -> Any:
    if name not in _SOURCES:
        raise AttributeError(f"module 'engram.graph' has no attribute {name!r}")
    value = getattr(import_module(_SOURCES[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_SOURCES])
