"""engram.graph: the compiled memory graph, its state and per-run settings, and the same memory
for `create_agent` agents (`EngramMiddleware`, `memory_tools`).

Names are imported on first use, so that `engram memory ...` (which lives below this package)
does not load the graph stack.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram.stores.lazy import lazy_exports

if TYPE_CHECKING:
    from engram.graph.builder import build_graph, compile_graph
    from engram.graph.middleware import EngramMiddleware
    from engram.graph.resume import aresume_memory_work, resume_memory_work
    from engram.graph.tools import memory_tools
    from engram.nodes import (
        BuiltContext,
        Compaction,
        Context,
        EngramState,
        Extraction,
        Recall,
        SettingsError,
        WorkingMemory,
    )
    from engram.nodes.work.background import wait_for_memory_work

__all__ = [
    "BuiltContext",
    "Compaction",
    "Context",
    "EngramMiddleware",
    "EngramState",
    "Extraction",
    "Recall",
    "SettingsError",
    "WorkingMemory",
    "aresume_memory_work",
    "build_graph",
    "compile_graph",
    "memory_tools",
    "resume_memory_work",
    "wait_for_memory_work",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "BuiltContext": "engram.nodes",
        "Compaction": "engram.nodes",
        "Context": "engram.nodes",
        "Extraction": "engram.nodes",
        "Recall": "engram.nodes",
        "SettingsError": "engram.nodes",
        "WorkingMemory": "engram.nodes",
        "EngramState": "engram.nodes",
        "build_graph": "engram.graph.builder",
        "compile_graph": "engram.graph.builder",
        "EngramMiddleware": "engram.graph.middleware",
        "memory_tools": "engram.graph.tools",
        "aresume_memory_work": "engram.graph.resume",
        "resume_memory_work": "engram.graph.resume",
        "wait_for_memory_work": "engram.nodes.work.background",
    },
)
