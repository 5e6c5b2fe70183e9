"""Card numbers: 13–19 digits that pass the Luhn check, or that follow a card word (within 30
characters; within 80 for a number grouped like a card, which a card typed wrong still is).

Without a card word nearby, a number must also look like a card: a payment network's first digit
(2–6) and, when written with spaces or dashes, a card's grouping (4-4-4-4, 4-4-4-4-3, 4-6-5...),
so ISBNs, phone numbers ("+86 138 0013 8000") and order numbers ("112-4938201-5583927") stay.
"""

from __future__ import annotations

import re

from engram.stores.secrets.matches import replace_matches, text_before

_CANDIDATE = re.compile(r"(?<![\d\-+])(?<!\d[ \-])\d(?:[ \-]?\d){12,18}(?![ \-]?\d)(?!-)")
_CARD_WORD = re.compile(
    r"(?i:\b(?:card|visa|mastercard|amex|debit|credit|iban|cc)\b)|卡号|卡|信用卡|银行卡|借记卡"
)
_CARD_WORD_WINDOW = 30
"""How many characters before a number a card word may stand to make it a card number."""
_CARD_SHAPE_WINDOW = 80
"""The same for a number shaped like a card (`_looks_like_card`) that fails the Luhn check: a card
typed wrong ("heres my card so u can tell me if im typing it wrong 4716 2039 ...")."""
_GROUPINGS = ((4, 6, 5), (4, 6, 4))
"""Card groupings other than fours (American Express, Diners Club)."""


def luhn_valid(digits: str) -> bool:
    """The Luhn checksum of a card number (digits only).

    Example:
        >>> luhn_valid("4111111111111111"), luhn_valid("4111111111111112")
        (True, False)
    """
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2 == 1:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def redact_cards(text: str, replacement: str) -> tuple[str, int]:
    """`text` with every card number replaced, and how many there were."""
    return replace_matches(_CANDIDATE, text, replacement, _is_card)


def _is_card(match: re.Match[str]) -> bool:
    number = match.group(0)
    if _CARD_WORD.search(text_before(match, _CARD_WORD_WINDOW)):
        return True
    if not _looks_like_card(number):
        return False
    return luhn_valid(_digits(number)) or bool(
        _CARD_WORD.search(text_before(match, _CARD_SHAPE_WINDOW))
    )


def _digits(number: str) -> str:
    return re.sub(r"\D", "", number)


def _looks_like_card(number: str) -> bool:
    if number[0] not in "23456":
        return False
    groups = tuple(len(g) for g in re.split(r"[ \-]", number))
    if len(groups) == 1:
        return True
    return groups in _GROUPINGS or (all(g == 4 for g in groups[:-1]) and 1 <= groups[-1] <= 4)
