"""Package `__init__` files that re-export names without importing them up front.

`engram memory ...` should start about as fast as `import chromadb`; eager re-exports in the
package `__init__` files would load the graph stack (chat models, langgraph's graph, the
embedding runtime) for every command. A package lists where each public name lives, and the
name is imported on first use (PEP 562 module `__getattr__`).

Example:
    >>> getattr_, dir_ = lazy_exports("pkg", {"sqrt": "math"})
    >>> getattr_("sqrt")(9.0)
    3.0
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from importlib import import_module
from typing import Any


def lazy_exports(
    package: str, sources: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The `__getattr__` and `__dir__` of a package whose names live in `sources` (name ->
    module)."""

    def __getattr__(name: str) -> Any:
        if name not in sources:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(import_module(sources[name]), name)

    def __dir__() -> list[str]:
        return sorted(sources)

    return __getattr__, __dir__
