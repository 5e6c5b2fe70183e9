"""What a change leaves of a memory: its clauses that do not hold the value the change replaces.

A memory can hold several facts ("I live in Lisbon and I'm vegetarian"); a change of one of
them ("I moved to Porto") retires the memory, and the facts it does not touch must stay current.
A memory splits where its structure says so: at the end of a sentence or a semicolon, at a
Chinese comma (which joins clauses; the enumeration comma 、 joins items and does not split), and before "and"
or "but" that starts a clause of its own (a subject and a verb: "and I'm vegetarian", "but my
wife eats fish"). A clause is touched when it holds the value that changed; the others are the
rest, when each can stand alone: two words, or three CJK characters, and not leaning on the
clause before it ("it's what I know", "所以...").
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from engram.stores.memory.types import normalize_text

_SUBJECT = r"(?:I|I'm|I've|I'd|I'll|we|we're|we've|my|our|[A-Z][a-z]+'s)"
_SPLIT = re.compile(
    r"(?<=[.!?])\s+(?=\S)|[;；。！？\n]+|，"
    rf"|,?\s+(?:and|but)\s+(?={_SUBJECT}\b)|,\s+(?={_SUBJECT}\b)"
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_REFERS_BACK = frozenset(
    "it it's its that that's this they they're them he he's she she's there there's which so "
    "because and but also too 它 他 她 他们 她们 它们 这 那 所以 因为 但是 而且".split()
)
"""First words of a clause that leans on the one before it ("yarn always, it's what I know"): such
a clause does not stand alone."""
_WORD = re.compile(r"[^\W_]+")


def clauses(text: str) -> list[str]:
    """The clauses of a memory's text, in order.

    Example:
        >>> clauses("I live in Lisbon and I'm vegetarian")
        ['I live in Lisbon', "I'm vegetarian"]
        >>> clauses("我喜欢用深色主题写代码，住在上海")
        ['我喜欢用深色主题写代码', '住在上海']
        >>> clauses("Prefers Vue and React over Angular")
        ['Prefers Vue and React over Angular']
    """
    return [part.strip(" ,.") for part in _SPLIT.split(text) if part.strip(" ,.")]


def untouched(text: str, values: Iterable[str]) -> str | None:
    """The clauses of `text` that hold none of `values`, joined, when a change of one of
    `values` leaves them: some clause holds a value, and every other one stands alone. None
    when the change touches all of `text` or cannot be placed in it.

    Example:
        >>> untouched("I live in Lisbon and I'm vegetarian", ["Lisbon"])
        "I'm vegetarian"
        >>> untouched("我喜欢用深色主题写代码，住在上海", ["深色"])
        '住在上海'
        >>> untouched("I live in Lisbon", ["Lisbon"]) is None
        True
        >>> untouched("I live in Lisbon and I'm vegetarian", ["Berlin"]) is None
        True
    """
    wanted = [normalize_text(v) for v in values if v and normalize_text(v)]
    parts = clauses(text)
    if not wanted or len(parts) < 2:
        return None
    touched = [any(v in normalize_text(part) for v in wanted) for part in parts]
    rest = [part for part, hit in zip(parts, touched) if not hit]
    if not any(touched) or not rest or not all(_stands_alone(part) for part in rest):
        return None
    joiner = "，" if _CJK.search(rest[0]) else "; "
    return joiner.join(rest)


def _stands_alone(part: str) -> bool:
    words = part.split()
    if not words or words[0].casefold().strip(",.") in _REFERS_BACK:
        return False
    if any(part.startswith(word) for word in _REFERS_BACK if _CJK.match(word)):
        return False
    return len(_CJK.findall(part)) >= 3 or len(_WORD.findall(part)) >= 2
