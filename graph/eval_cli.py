"""`engram eval`: run dialog suites or the LoCoMo retrieval benchmark and write reports.

The command bodies import `engram.evals` only when they run: `graph/` sits below `evals/` in
DESIGN's layering, and this module is the composition root that reaches up.
"""

from __future__ import annotations

import typer

app = typer.Typer(help="Run eval suites against the memory graph.", no_args_is_help=True)
