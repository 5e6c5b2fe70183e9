"""The `engram` command: `engram eval ...` (evals) and `engram memory ...` (a user's memories)."""

from __future__ import annotations

import typer

from engram.graph.cli.eval import app as eval_app
from engram.graph.cli.memory import app as memory_app
from engram.graph.cli.memory_support import ends_with_command

app = typer.Typer(
    name="engram",
    help="engram: a memory layer for LangGraph agents.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain help: no type noise, and 0.2 s less than rich's
)
app.add_typer(eval_app, name="eval")
app.add_typer(memory_app, name="memory")


def main() -> None:
    """The `engram` console script: `app`, in a process that ends with the command."""
    ends_with_command()
    app()
