"""engram.graph: the compiled memory graph, its state and per-run settings."""

from engram.graph.builder import build_graph, compile_graph
from engram.nodes import BuiltContext, Context, EngramState

__all__ = ["BuiltContext", "Context", "EngramState", "build_graph", "compile_graph"]
