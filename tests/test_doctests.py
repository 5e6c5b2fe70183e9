"""The examples in the code's docstrings run and print what they say."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

PACKAGES = ("engram.stores", "engram.nodes", "engram.graph", "engram.evals")
SKIPPED = {"engram.graph.studio"}  # builds the Studio graph from environment variables on import


def _modules() -> list[str]:
    names = []
    for package in PACKAGES:
        path = importlib.import_module(package).__path__
        names += [m.name for m in pkgutil.walk_packages(path, prefix=f"{package}.")]
    return sorted(n for n in set(names) - SKIPPED if not n.endswith(".__main__"))


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(
        importlib.import_module(name),
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
        report=True,
    )
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"
