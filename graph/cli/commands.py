"""The `engram` command, put together in one place: `engram eval ...`, `engram memory ...` and
`engram mcp`.

Every command is registered here, in the order `--help` lists them; the command modules only
define functions.
"""

from __future__ import annotations

from importlib import metadata
from typing import Annotated

import typer

from engram.graph.cli.eval import app as eval_app
from engram.graph.cli.help import PlainCommand
from engram.graph.cli.mcp.command import mcp
from engram.graph.cli.memory import edit, maintain, pending, read, transfer
from engram.graph.cli.memory.support import ends_with_command

MEMORY_COMMANDS = (
    read.list_,
    read.search,
    read.show,
    read.stats,
    edit.add,
    edit.forget,
    edit.restore,
    edit.delete,
    pending.pending,
    pending.approve,
    pending.reject,
    maintain.maintain,
    transfer.export,
    transfer.import_,
)
"""The `engram memory` subcommands; a trailing `_` of a function's name is not part of the
command's (`list_` is `engram memory list`)."""

MEMORY_HELP = """Inspect and manage a user's long-term memories.

Exit codes: 0 done; 1 not found or nothing done (no data folder, no such user or memory, nothing
to restore, a confirmation declined); 2 bad input (an empty --user, an unknown category or option
value, an id prefix that matches several memories, a memory that is only a secret)."""

memory_app = typer.Typer(
    help=MEMORY_HELP,
    no_args_is_help=True,
    rich_markup_mode=None,
)
for _command in MEMORY_COMMANDS:
    memory_app.command(_command.__name__.rstrip("_"), cls=PlainCommand)(_command)

app = typer.Typer(
    name="engram",
    help="engram: a memory layer for LangGraph agents.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain help: no type noise, and typer's rich help is never loaded
)


def installed_version() -> str:
    """The version of the installed engram distribution."""
    try:
        return metadata.version("engram")
    except metadata.PackageNotFoundError:
        return "unknown (engram is not installed: pip install -e .)"


def _print_version(asked: bool) -> None:
    if asked:
        typer.echo(f"engram {installed_version()}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_print_version,
            help="Print engram's version and exit.",
        ),
    ] = False,
) -> None:
    """engram: a memory layer for LangGraph agents."""


app.add_typer(eval_app, name="eval")
app.add_typer(memory_app, name="memory")
app.command("mcp", cls=PlainCommand)(mcp)


def main() -> None:
    """The `engram` console script: `app`, in a process that ends with the command."""
    ends_with_command()
    app()
