"""Replacing the matches of a pattern that a check says are secrets, and counting them.

The number-shaped secrets (card numbers, IBANs, resident identity numbers) are found the same
way: a pattern finds the candidates, a check (a checksum, a telling word shortly before) decides.

Example:
    >>> import re
    >>> replace_matches(re.compile(r"\\d+"), "pin 1234 or 99", "#", lambda m: len(m.group()) == 4)
    ('pin # or 99', 1)
"""

from __future__ import annotations

import re
from collections.abc import Callable


def replace_matches(
    pattern: re.Pattern[str],
    text: str,
    replacement: str,
    is_secret: Callable[[re.Match[str]], bool],
) -> tuple[str, int]:
    """`text` with every match of `pattern` that `is_secret` holds for replaced, and how many
    there were."""
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if not is_secret(match):
            return match.group(0)
        count += 1
        return replacement

    return pattern.sub(replace, text), count


def text_before(match: re.Match[str], chars: int) -> str:
    """Up to `chars` characters of the searched text just before `match`."""
    return match.string[max(0, match.start() - chars) : match.start()]
