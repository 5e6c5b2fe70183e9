"""What every `engram memory` command shares: its options (`--user`, `--json`, `--data`, ...) and
`command`, which turns a command's `CliError`s into one-line messages and exit codes (0 done,
1 not found or nothing done, 2 bad input). `engram.graph.cli.commands` registers the commands.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Annotated, Any, TypeVar

import typer

from engram.graph.cli.memory.support import (
    DEFAULT_USER,
    cli_error,
    err,
    esc,
)
from engram.stores.memory.categories import CATEGORIES

F = TypeVar("F", bound=Callable[..., Any])

User = Annotated[
    str | None,
    typer.Option(
        "--user",
        "-u",
        envvar="ENGRAM_USER",
        metavar="USER",
        show_default=False,
        help=f"Whose memories: the user's id, not empty (default: {DEFAULT_USER!r}, the graph's "
        "default user).",
    ),
]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
Data = Annotated[
    str | None,
    typer.Option(
        "--data",
        metavar="DIR|URL",
        show_default=False,
        help="Data folder, or a Chroma server URL http://host:port (default: "
        "$ENGRAM_CHROMA_URL, else $ENGRAM_DATA_DIR, else ./.engram).",
    ),
]
Forgotten = Annotated[bool, typer.Option("--forgotten", help="Include forgotten memories.")]
Superseded = Annotated[
    bool, typer.Option("--superseded", help="Include superseded ones (history).")
]
All = Annotated[bool, typer.Option("--all", help="Include forgotten and superseded memories.")]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")]
CATEGORY_HELP = f"Only this category ({', '.join(CATEGORIES)}); repeatable."


def command(func: F) -> F:
    """`func` as a command: its `CliError`s become one-line messages and exit codes."""

    @wraps(func)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except Exception as exc:
            error = cli_error(exc)
            if error is None:
                raise
            err.print(f"[red]error:[/red] {esc(str(error))}", highlight=False)
            raise typer.Exit(error.code) from None

    return run  # type: ignore[return-value]


