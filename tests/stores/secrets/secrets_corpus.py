"""The secrets corpus (`tests/stores/secrets/data/secrets_corpus.yaml`) and how a redaction is scored on it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

CORPUS = Path(__file__).parent / "data" / "secrets_corpus.yaml"
WINDOW = 10
"""A secret leaks when any piece of it this long (or all of it, if shorter) is left."""


@dataclass(frozen=True)
class Case:
    text: str
    secrets: list[str]


def load() -> tuple[list[Case], list[str]]:
    """The secret cases and the look-alikes."""
    data = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
    cases = [Case(c["text"], [str(s) for s in c["secrets"]]) for c in data["secrets"]]
    return cases, [str(t) for t in data["lookalikes"]]


def leaked(secret: str, text: str) -> bool:
    """Whether `text` still holds `secret` or a `WINDOW`-character piece of it."""
    if len(secret) <= WINDOW:
        return secret in text
    return any(secret[i : i + WINDOW] in text for i in range(len(secret) - WINDOW + 1))
