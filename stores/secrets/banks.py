"""IBANs: a country code, two check digits and 11-30 letters and digits, often in groups of four.

A string of that shape is an IBAN when its mod-97 check holds, or when the word IBAN stands
shortly before it (a number typed wrong is still the person's account). Product codes and
serials of the same shape but neither stay ("SN12 3456 7890 ABCD" on a sticker).
"""

from __future__ import annotations

import re

from engram.stores.secrets.matches import replace_matches, text_before

_CANDIDATE = re.compile(
    r"(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?![A-Za-z0-9])"
)
_IBAN_WORD = re.compile(r"(?i:\biban\b)")
_IBAN_WORD_WINDOW = 60
"""How many characters before an IBAN-shaped string the word IBAN may stand."""


def iban_valid(iban: str) -> bool:
    """The ISO 13616 mod-97 check of an IBAN (spaces ignored).

    Example:
        >>> iban_valid("GB82 WEST 1234 5698 7654 32"), iban_valid("GB82 WEST 1234 5698 7654 33")
        (True, False)
    """
    compact = iban.replace(" ", "")
    digits = "".join(str(int(ch, 36)) for ch in compact[4:] + compact[:4])
    return int(digits) % 97 == 1


def redact_ibans(text: str, replacement: str) -> tuple[str, int]:
    """`text` with every IBAN replaced, and how many there were."""
    return replace_matches(_CANDIDATE, text, replacement, _is_iban)


def _is_iban(match: re.Match[str]) -> bool:
    iban = match.group(0)
    if not 15 <= len(iban.replace(" ", "")) <= 34:
        return False
    return bool(_IBAN_WORD.search(text_before(match, _IBAN_WORD_WINDOW))) or iban_valid(iban)
