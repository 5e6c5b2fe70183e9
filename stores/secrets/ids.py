"""Chinese resident identity card numbers: 18 characters whose last one is their checksum.

Six digits of region, a birth date (19xx or 20xx, a real month and day), three digits and a
check character (ISO 7064 MOD 11-2, `X` for 10), found anywhere, with or without a label: the
checksum and the date make an order number or a phone number pass one time in thousands. A
number of that shape whose checksum fails is still redacted when 身份证 stands up to 30
characters before it (a number typed wrong is still the person's).

Example:
    >>> redact_resident_ids("我的是310104198807152313 你帮我看看", "[REDACTED]")
    ('我的是[REDACTED] 你帮我看看', 1)
    >>> redact_resident_ids("订单号 202403150001234567", "[REDACTED]")
    ('订单号 202403150001234567', 0)
"""

from __future__ import annotations

import re

from engram.stores.secrets.matches import replace_matches, text_before

_CANDIDATE = re.compile(
    r"(?<![0-9A-Za-z])\d{6}(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])\d{3}[\dXx]"
    r"(?![0-9A-Za-z])"
)
_ID_WORD = re.compile(r"身份证|证件号")
_ID_WORD_WINDOW = 30
_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CHECK = "10X98765432"


def resident_id_valid(number: str) -> bool:
    """Whether an 18-character number's last character is its checksum.

    Example:
        >>> resident_id_valid("11010519491231002X"), resident_id_valid("110105194912310021")
        (True, False)
    """
    total = sum(int(digit) * weight for digit, weight in zip(number[:17], _WEIGHTS))
    return _CHECK[total % 11] == number[17].upper()


def redact_resident_ids(text: str, replacement: str) -> tuple[str, int]:
    """`text` with every resident identity number replaced (valid, or named), and how many there
    were."""
    return replace_matches(_CANDIDATE, text, replacement, _is_resident_id)


def _is_resident_id(match: re.Match[str]) -> bool:
    named = _ID_WORD.search(text_before(match, _ID_WORD_WINDOW))
    return resident_id_valid(match.group(0)) or named is not None
