"""One rule of the offline extractor: a pattern that marks a statement as a memory of a category."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engram.stores.memory.types import Category


@dataclass(frozen=True)
class Rule:
    """A pattern marking a statement as a memory of `category`.

    Example:
        >>> rule = Rule("goal", rx(r"\\bI plan to\\b"))
        >>> first_match("ok so I plan to learn Go", [rule])[0].category
        'goal'
    """

    category: Category
    pattern: re.Pattern[str]
    kind: str = ""
    """How the statement's key is found: "pref" (the chosen value follows the match), "neg" (a
    dislike: no key), "fav" ("my favourite X is Y"), "fact.<attribute>" (the value follows the
    match), "other" (about someone close to the user, allowed although not first person), or ""
    (the value is anywhere in the statement)."""
    strong: bool = True
    """A weak rule (a broad pattern) keeps only statements with a detail and without doubt."""


def rx(pattern: str) -> re.Pattern[str]:
    """A rule pattern: compiled case-insensitive (English words and Latin names in Chinese text)."""
    return re.compile(pattern, re.IGNORECASE)


def first_match(
    text: str,
    rules: Sequence[Rule],
    fits: Callable[[Rule, re.Match[str]], bool] = lambda rule, match: True,
) -> tuple[Rule, re.Match[str]] | None:
    """The first rule whose pattern occurs in `text` and whose match `fits`, with its match."""
    for rule in rules:
        match = rule.pattern.search(text)
        if match and fits(rule, match):
            return rule, match
    return None
