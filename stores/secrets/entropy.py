"""Random-looking tokens with no known format: the secret half of a key pair, a provider's key.

A token of 32 or more letters, digits and `+/_-` counts as a secret when it mixes upper case,
lower case and digits, its characters are as varied as a random string's of that length
(Shannon entropy), and it is not mostly words (`GettingStartedWithLangGraph2024Edition`) or a
path. Git SHAs, UUIDs and hashes are lower-case hex and never match.

A provider's prefixed token (`cio_8fKq2LmZr0TxW9vB4nYsQd3`: a short lower-case prefix, `_` or `-`,
then the random part) is shorter; it counts from `MIN_PREFIXED_TAIL` characters after its prefix,
by the same tests on that part. So does the second half of a pair pasted as `app id / secret`
(`cli_a7f3b2c9d4e5 / Xq8Lm2Nv7Pz4Rt9Kw3Yb6Hc1Jd5Fg0`): an id with a digit, a slash, a colon or a
bar, then the random part.
"""

from __future__ import annotations

import math
import re
from collections import Counter

MIN_LENGTH = 32
_TOKEN = re.compile(rf"(?<![\w+/\-.])[A-Za-z0-9+/_\-]{{{MIN_LENGTH},}}={{0,2}}(?![\w+/\-=])")
MIN_PREFIXED_TAIL = 20
_PREFIXED = re.compile(
    rf"(?<![\w+/\-.])[a-z]{{2,6}}[_-](?P<tail>[A-Za-z0-9]{{{MIN_PREFIXED_TAIL},}})(?![\w+/\-=])"
)
_PAIRED = re.compile(
    r"(?<![\w+/\-.])(?=[A-Za-z_-]*\d)[A-Za-z][A-Za-z0-9_-]{5,}\s*[/:|]\s*"
    rf"(?P<tail>[A-Za-z0-9]{{{MIN_PREFIXED_TAIL},}})(?![\w+/\-=])"
)
_WORD = re.compile(r"[A-Z]?[a-z]{3,}")
_MAX_WORDINESS = 0.6
"""Above this share of characters in words, a token is an identifier, not a secret (random
strings of 32+ characters stay below it 99.8% of the time)."""
_ENTROPY_MARGIN = 1.0
"""How far below log2(length) a token's entropy may be (random 32-char strings: 99.9% within)."""
_ENTROPY_CAP = 4.3
_MAX_SLASHES = 3


def redact_random_tokens(text: str, replacement: str) -> tuple[str, int]:
    """`text` with every random-looking token replaced, and how many there were.

    Example:
        >>> redact_random_tokens("secret half: je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY.", "#")
        ('secret half: #.', 1)
        >>> redact_random_tokens("see GettingStartedWithLangGraph2024Edition", "#")[1]
        0
        >>> redact_random_tokens("pasted it: cio_8fKq2LmZr0TxW9vB4nYsQd3 ok", "#")
        ('pasted it: # ok', 1)
    """
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if match.re is _TOKEN:
            if not is_random_token(match.group(0)):
                return match.group(0)
            count += 1
            return replacement
        if not is_random_token(match.group("tail"), MIN_PREFIXED_TAIL):
            return match.group(0)
        count += 1
        start, end = (i - match.start() for i in match.span("tail"))
        kept = match.group(0)
        return kept[:start] + replacement + kept[end:] if match.re is _PAIRED else replacement

    for pattern in (_TOKEN, _PREFIXED, _PAIRED):
        text = pattern.sub(replace, text)
    return text, count


def is_random_token(token: str, min_length: int = MIN_LENGTH) -> bool:
    """Whether `token` looks like a generated secret (see the module docstring)."""
    token = token.rstrip("=")
    if len(token) < min_length or token.count("/") > _MAX_SLASHES:
        return False
    if not (re.search(r"[A-Z]", token) and re.search(r"[a-z]", token) and re.search(r"\d", token)):
        return False
    if sum(map(len, _WORD.findall(token))) / len(token) > _MAX_WORDINESS:
        return False
    threshold = min(math.log2(len(token)) - _ENTROPY_MARGIN, _ENTROPY_CAP)
    return _entropy(token) >= threshold


def _entropy(token: str) -> float:
    counts = Counter(token)
    return -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())
