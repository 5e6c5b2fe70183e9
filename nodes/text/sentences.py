"""A chat message's sentences, where the task and verdict rules look for a request or a verdict."""

from __future__ import annotations

import re

_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+")


def split_sentences(text: str) -> list[str]:
    """`text`'s sentences and lines, whitespace collapsed, empty ones dropped.

    Example:
        >>> split_sentences("Thanks! Now publish it.\\n\\n好的。帮我看看")
        ['Thanks!', 'Now publish it.', '好的。', '帮我看看']
    """
    return [s for s in (" ".join(part.split()) for part in _END.split(text)) if s]
