"""What a memory's text must be: words (letters or digits, any script), at most
`MAX_CONTENT_CHARS` characters, valid Unicode.

A memory is one statement recalled into prompts for months; an empty, whitespace-only or
punctuation-only text would show up there as "- ." and a 100 KB text would crowd out every other
memory, so both are refused when a memory is proposed (`MemoryCandidate`), with a message that
says what to do. Extractors skip such texts instead of proposing them.

Example:
    >>> content_problem("The user prefers dark mode") is None
    True
    >>> content_problem(" ... ")
    'has no letters or digits (only punctuation or symbols): write what should be remembered'
"""

from __future__ import annotations

MAX_CONTENT_CHARS = 2000
"""The longest a memory's content may be, in characters (the cap on a merged memory, so
that repeated merges cannot grow one without bound: a merge longer than this keeps only the newer
text)."""


def content_problem(text: str) -> str | None:
    """What is wrong with `text` as a memory's content, or None when it is fine."""
    if not text:
        return "is empty: write what should be remembered"
    if not text.strip():
        return "is only whitespace: write what should be remembered"
    if not any(ch.isalnum() for ch in text):
        return "has no letters or digits (only punctuation or symbols): write what should be remembered"
    if len(text.strip()) > MAX_CONTENT_CHARS:
        return (
            f"is {len(text.strip())} characters long, more than the {MAX_CONTENT_CHARS} a memory "
            "holds: write its gist, or split it into several memories"
        )
    return None
