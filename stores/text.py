"""Text as valid Unicode wherever it enters engram, and counts in words (`counted`).

A Python `str` can hold lone surrogates (U+D800-U+DFFF without their pair): from a JavaScript
string cut in the middle of an emoji, from JSON's `"\\ud800"`, or from Python's own
`surrogateescape` decoding of bytes that were not UTF-8 (command-line arguments, stdin). UTF-8
cannot encode them, so the tokenizer, SQLite and Chroma all fail on them. engram replaces each
with U+FFFD (the replacement character, as a browser shows broken text) instead of rejecting the
message: a chat app would rather keep the rest of what the person wrote.

Example:
    >>> valid_unicode("tea \\ud800 please")
    'tea \\ufffd please'
    >>> valid_unicode("\\ud83d\\ude00") == "\\U0001f600"  # a split pair is joined again
    True
"""

from __future__ import annotations


def valid_unicode(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (and a surrogate pair written as two
    code units joined into its character); `text` itself when it is valid already."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """`count` and a noun in the number it takes (`plural` defaults to `singular` + "s").

    Example:
        >>> counted(1, "memory", "memories"), counted(2, "memory", "memories"), counted(0, "thread")
        ('1 memory', '2 memories', '0 threads')
    """
    return f"{count} {singular if count == 1 else plural or singular + 's'}"
