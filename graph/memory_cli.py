"""`engram memory`: list, search, edit, export and maintain a user's long-term memories."""

from __future__ import annotations

import typer

app = typer.Typer(help="Inspect and manage a user's long-term memories.", no_args_is_help=True)
