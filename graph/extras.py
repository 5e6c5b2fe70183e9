"""What engram installs only when asked (pip extras), and the error that names the command
installing one: `[postgres]` for PostgreSQL checkpoints, `[mcp]` for `engram mcp`, `[local]` for
the local model server."""

from __future__ import annotations


class MissingExtraError(ImportError):
    """A feature needs a pip extra of engram that is not installed."""


def missing_extra(feature: str, extra: str, cause: ImportError) -> MissingExtraError:
    """The error for `feature`, which needs `extra`, when importing it raised `cause`."""
    package = (cause.name or "a package of it").split(".")[0]
    error = MissingExtraError(
        f"{feature} is in engram's {extra} extra, not installed here ({package} is missing): "
        f"pip install 'engram[{extra}]'"
    )
    error.__cause__ = cause
    return error
