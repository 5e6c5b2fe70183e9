"""The `engram` command (`app`, and `main` for the console script): `engram eval ...` (evals) and
`engram memory ...` (a user's memories), registered in `engram.graph.cli.commands`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram.stores.lazy import lazy_exports

if TYPE_CHECKING:
    from engram.graph.cli.commands import app, main

__all__ = ["app", "main"]

__getattr__, __dir__ = lazy_exports(
    __name__, {"app": "engram.graph.cli.commands", "main": "engram.graph.cli.commands"}
)
