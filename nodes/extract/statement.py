"""A statement a person asks to keep ("remember this"), read as a memory candidate.

The offline rules guess its category (and a key for a single-valued attribute), also for a
third-person statement ("Alice prefers dark mode" reads as "I prefer dark mode"); what no rule
recognises is a `fact`. A statement that names what it changes ("we no longer use Jira, tickets
are in Linear") retires the memory it names, as in a conversation (`retired`). `engram memory
add` and the agent's `remember` tool read statements so.
"""

from __future__ import annotations

import re

from engram.nodes.extract.retired import retired
from engram.nodes.extract.rules import classify
from engram.stores.memory.types import Category, MemoryCandidate


def statement_candidate(
    text: str,
    *,
    category: Category | None = None,
    importance: float | None = None,
    key: str | None = None,
) -> MemoryCandidate:
    """The candidate for a statement to keep as it is (confidence 1: the person said so).

    Args:
        text: The statement, kept verbatim.
        category: The category; None: guessed (`guess_candidate`), else `fact`.
        importance: 0-1; None: the category's default.
        key: An attribute slug (a later value supersedes); None: the guessed one, if the guess
            has the chosen category.

    Example:
        >>> c = statement_candidate("Alice prefers dark mode")
        >>> (c.content, c.category, c.confidence)
        ('Alice prefers dark mode', 'preference', 1.0)
    """
    guess = guess_candidate(text)
    chosen = category or (guess.category if guess else "fact")
    same = guess is not None and guess.category == chosen
    return MemoryCandidate(
        content=text,
        category=chosen,
        importance=importance,
        confidence=1.0,
        key=key or (guess.key if same else None),
        structured_data=guess.structured_data if same and not key else None,
        replaces=retired(text),
    )


def guess_candidate(text: str) -> MemoryCandidate | None:
    """The offline extractor's reading of `text` (category, and a key for a single-valued
    attribute), also for a third-person statement ("Alice prefers dark mode" is read as "I
    prefer dark mode"); None when no rule recognises it."""
    found = classify(text)
    if found is None and (rewritten := _first_person(text)):
        found = classify(rewritten)
    return found


def _first_person(text: str) -> str | None:
    match = _THIRD_PERSON.match(text.strip())
    if match is None:
        return None
    verb = match["verb"]
    if verb in _IRREGULAR:
        verb = _IRREGULAR[verb]
    elif verb.endswith("ies"):
        verb = verb[:-3] + "y"
    elif verb.endswith(("shes", "ches", "sses", "xes", "oes")):
        verb = verb[:-2]
    elif verb.endswith("s") and not verb.endswith("ss"):
        verb = verb[:-1]
    else:
        return None
    return f"I {verb}{match['rest']}"


_THIRD_PERSON = re.compile(
    r"^(?:(?i:the user|user)|[A-Z][\w'-]*)\s+(?P<verb>[a-z]+)\b(?P<rest>.*)$", re.DOTALL
)
_IRREGULAR = {"is": "am", "has": "have", "does": "do"}
