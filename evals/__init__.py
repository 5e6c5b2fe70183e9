"""engram.evals: replay dialog suites through the memory graph, and the LoCoMo retrieval
benchmark (engine and graph modes), with reports (`report.json`, `report.html`)."""

from engram.evals.dialogs.runner import RunSettings, arun_suite, run_suite
from engram.evals.dialogs.suite import load_suite
from engram.evals.locomo.engine import arun_engine, run_engine
from engram.evals.locomo.graph import arun_graph
from engram.evals.report import build_report, write_report

__all__ = [
    "RunSettings",
    "arun_engine",
    "arun_graph",
    "arun_suite",
    "build_report",
    "load_suite",
    "run_engine",
    "run_suite",
    "write_report",
]
