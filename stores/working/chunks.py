"""A tool result as the text engram keeps: valid, printable, redacted, bounded, in chunks.

A tool may return anything: megabytes of logs, a binary file read as text, a secret in a config
dump. `kept_text` makes the one text every later step uses (the pointer's summary and preview,
the stored chunks, what `read` pages through and `search` looks in):

1. lone surrogates become U+FFFD, as in every stored text (`engram.stores.text`);
2. control characters other than tab, newline and carriage return become U+FFFD, so a NUL
   cannot break a store or a JSON reader, and binary content reads as what it is;
3. secrets are redacted (`engram.stores.secrets`);
4. at most `MAX_KEPT_CHARS` characters are kept (the rest is counted, not stored).

Example:
    >>> kept = kept_text("id=7\\x00\\x01 password: hunter22")
    >>> kept.text == "id=7\\ufffd\\ufffd password: [REDACTED]", kept.total_length, kept.redacted
    (True, 25, 1)
    >>> split("abcdefg", size=3)
    ['abc', 'def', 'g']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engram.stores.secrets import redact
from engram.stores.text import valid_unicode

CHUNK_CHARS = 1000
"""Characters per chunk: about what the local embedder reads of a text (256 word pieces)."""

MAX_KEPT_CHARS = 1_000_000
"""Characters of one tool result that are kept; the rest of a larger result is dropped (its
length is still reported)."""

BINARY_SHARE = 0.1
"""A text is binary-looking when more than this share of its first `_SAMPLE` characters are
replacement characters (what `kept_text` made of control characters and bad bytes)."""

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SAMPLE = 10_000


@dataclass(frozen=True)
class KeptText:
    """What `kept_text` made of a tool result."""

    text: str
    """Cleaned, redacted, at most `MAX_KEPT_CHARS` characters."""
    total_length: int
    """Characters of the tool's own result."""
    redacted: int
    """Secrets redacted."""

    @property
    def truncated(self) -> bool:
        """Whether part of the result was not kept."""
        return self.total_length > MAX_KEPT_CHARS


def kept_text(raw: str) -> KeptText:
    """The text engram keeps of a tool result (module docstring)."""
    head = _CONTROL.sub("\ufffd", valid_unicode(raw[:MAX_KEPT_CHARS]))
    redaction = redact(head)
    return KeptText(redaction.text, len(raw), len(redaction.kinds))


def looks_binary(text: str) -> bool:
    """Whether `text` (a `kept_text`) is mostly not text: a binary file read as characters."""
    sample = text[:_SAMPLE]
    return bool(sample) and sample.count("\ufffd") > BINARY_SHARE * len(sample)


def split(text: str, *, size: int = CHUNK_CHARS) -> list[str]:
    """`text` in consecutive pieces of `size` characters (the last one shorter)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def covering(offset: int, length: int, *, size: int = CHUNK_CHARS) -> range:
    """The chunk numbers that hold characters `offset` to `offset + length` (excluded).

    Example:
        >>> list(covering(1500, 1000))
        [1, 2]
    """
    if length <= 0:
        return range(0)
    return range(offset // size, (offset + length - 1) // size + 1)
