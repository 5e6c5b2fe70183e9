"""What makes a fact this fact: the numbers, names and identifiers a memory states.

Embeddings place "I use Postgres 16 for project 3" and "... project 4" almost on top of each
other (similarity above the 0.9 merge threshold), yet they are two facts. Before the write
policy merges two similar texts, it compares their specifics:

- numbers: `16`, `3.11`, `2026-05-01`, `10:30`, `1,200` (separators kept, so `3.11` is not `311`);
- identifiers: words that mix letters and digits (`gpt-4o`, `py311`), carry inner capitals
  (`LazyVim`, `iPhone`) or join word characters with `.`, `_`, `/`, `@`, `#` or `:`
  (`example.com`, `max_tokens`, `src/app.py`, `@alice`, `#42`);
- names: capitalised words that are not common English words (`Postgres`, `Alice`, `Lisbon`),
  wherever they stand in the sentence.

Two texts `conflict` when each has a specific the other lacks (compared case-folded): they say
different things about similar subjects, and merging them would blend two facts into one.
A text whose specifics are a subset of the other's only adds or repeats detail: that is what
merging is for. A text written to merge others (by the memory model) must keep every specific of
theirs: `missing_specifics` lists what it lost.

Example:
    >>> sorted(specifics("I use Postgres 16 for project number 3"))
    ['16', '3', 'postgres']
    >>> conflict("I use Postgres 16 for project 3", "I use Postgres 16 for project 4")
    True
    >>> conflict("I use Vim", "I use Vim with the LazyVim config")
    False
    >>> sorted(missing_specifics("The user uses Postgres", "I use Postgres 16 for project 3"))
    ['16', '3']
"""

from __future__ import annotations

import re

from engram.stores.lexical.index import STOPWORDS_EN_PLUS

_NUMBER = r"\d+(?:[.,:/-]\d+)*"
_WORD = r"[^\W_]+(?:[._/@#:'’-][^\W_]+)*"
_TOKEN = re.compile(rf"[@#]?(?:{_NUMBER}|{_WORD})")
_JOINERS = re.compile(r"[._/@#:]")
"""Characters that make an identifier of the words they join (not `-`: "well-known" is English)."""
_COMMON = frozenset(STOPWORDS_EN_PLUS) | {"i", "i'm", "i've", "i'd", "i'll", "user"}


def specifics(text: str) -> frozenset[str]:
    """The numbers, identifiers and names `text` states, case-folded."""
    return frozenset(t.casefold() for t in _tokens(text) if _is_specific(t))


def missing_specifics(merged: str, *sources: str) -> frozenset[str]:
    """The specifics of `sources` that `merged` does not state (as any word, case-folded: a
    name that starts a source's sentence may stand mid-sentence in the merge)."""
    wanted = frozenset().union(*(specifics(s) for s in sources))
    return wanted - {t.casefold() for t in _tokens(merged)}


def conflict(a: str, b: str) -> bool:
    """Whether each text states a number, name or identifier the other does not."""
    sa, sb = specifics(a), specifics(b)
    return bool(sa - sb) and bool(sb - sa)


def _tokens(text: str) -> list[str]:
    return [re.sub(r"['’]s?$", "", m.group()) for m in _TOKEN.finditer(text)]  # "Bob's": Bob


def _is_specific(token: str) -> bool:
    if token[0] in "@#" or any(c.isdigit() for c in token):
        return True  # a number, or letters mixed with digits
    if _JOINERS.search(token):
        return True
    if any(c.isupper() for c in token[1:]) and any(c.islower() for c in token):
        return True  # inner capitals
    return token[0].isupper() and len(token) > 1 and token.casefold() not in _COMMON
