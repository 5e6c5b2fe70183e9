"""Secret redaction: API keys, tokens, passwords, card numbers and private keys never reach the store.

The first step of the long-term write policy (DESIGN "Long-term memories"). Detection is by
pattern: well-known token formats (OpenAI `sk-...`, AWS `AKIA...`, GitHub `ghp_...`, Slack,
Google, Stripe, JWTs, bearer tokens), `password is X` / `密码是X`-style statements and
`key=value` assignments, credentials inside URLs, card numbers that pass the Luhn check, and
PEM private key blocks.

Limits: a secret with no recognisable format and no telling word before it ("my code for the
door is 4711") is not found; a 13–19 digit number that happens to pass the Luhn check is
redacted even if it is not a card number (the safe side).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

REDACTED = "[REDACTED]"
"""What a secret is replaced with."""

_TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*)",
            re.DOTALL,
        ),
    ),
    ("openai_key", re.compile(r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,}")),
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("bearer_token", re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=\-]{16,}")),
    ("url_credentials", re.compile(r"(?<=://)[^\s:/@]+:[^\s@/]+(?=@)")),
)

# "password is X", "api key: X", "token = X" — the value after the telling word is the secret.
_LABELLED_SECRET = re.compile(
    r"(?ix)"
    r"\b(?:password|passwd|passphrase|passcode|pwd|pin(?:\ code)?|secret(?:\ key)?|client[_\ ]secret"
    r"|api[_\ -]?key|apikey|access[_\ ]token|auth[_\ ]token|token|private[_\ ]key"
    r"|aws_secret_access_key|secret_access_key)"
    r"(?:\ (?:for|of|to)\ [\w.\-@]+)?"
    r"\s*(?:is|was|are|=|:|is\ set\ to|was\ set\ to)\s*"
    r"[\"'`]?(?P<value>[^\s\"'`,;]+?)[\"'`]?(?=[\s,;]|[.!?](?:\s|$)|$)"
)
_LABELLED_SECRET_ZH = re.compile(
    r"(?:密码|口令|密钥|私钥|令牌|验证码|支付密码|PIN码?|pin码?)"
    r"\s*(?:是|为|设为|设置为|改成|改为|=|:|：)\s*"
    r"[\"'`“”「」]?(?P<value>[^\s\"'`“”「」，。；！？,;]+)"
)
_CARD_CANDIDATE = re.compile(r"(?<![\d\-])\d(?:[ \-]?\d){12,18}(?![\d\-])")

# Words that only describe a secret: once the secret is gone, a text made of these says nothing.
_SECRET_WORDS = frozenset(
    """
    my our the a an is was are be it its this that these for of to and or in on with your his her
    their me i we here there now new old set changed change use using key keys api password
    passwords passwd passphrase passcode pwd pin code secret secrets token tokens access auth
    private credential credentials card number credit debit bank account login aws openai github
    slack stripe google bearer jwt value id
    """.split()
)
_SECRET_WORDS_ZH = ("我的", "我们的", "密码", "口令", "密钥", "私钥", "令牌", "验证码", "是", "为", "卡号",
                    "银行卡", "信用卡", "账号", "设置", "改成", "改为", "支付")
_WORD = re.compile(r"[A-Za-z0-9_]+|[\u3400-\u9fff]")


@dataclass(frozen=True)
class Redaction:
    """The outcome of `redact`."""

    text: str
    """The input with every secret replaced by `REDACTED`."""
    kinds: list[str] = field(default_factory=list)
    """What was found, one entry per secret (e.g. `"openai_key"`, `"password"`, `"card_number"`)."""

    @property
    def found(self) -> bool:
        """Whether any secret was redacted."""
        return bool(self.kinds)

    @property
    def only_secret(self) -> bool:
        """Whether a secret was found and nothing worth keeping is left around it.

        "My password is hunter2" is only a secret; "deploy with the token [REDACTED] on staging"
        still says something (how to deploy) and is kept redacted.
        """
        return self.found and not _has_substance(self.text)


def redact(text: str) -> Redaction:
    """Replace every secret in `text` with `REDACTED`.

    Args:
        text: Any text (a message, a memory candidate, a value in `structured_data`).

    Returns:
        The redacted text and the kinds of secret found.

    Example:
        >>> r = redact("my key is sk-proj-abcdefghijklmnop1234 and my password is hunter2")
        >>> r.text, r.kinds
        ('my key is [REDACTED] and my password is [REDACTED]', ['openai_key', 'password'])
    """
    kinds: list[str] = []
    for kind, pattern in _TOKEN_PATTERNS:
        text, n = pattern.subn(REDACTED, text)
        kinds.extend([kind] * n)
    for pattern in (_LABELLED_SECRET, _LABELLED_SECRET_ZH):
        text, labelled = _redact_group(pattern, text)
        kinds.extend(["password"] * labelled)
    text, cards = _redact_cards(text)
    kinds.extend(["card_number"] * cards)
    return Redaction(text=text, kinds=kinds)


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


def _redact_group(pattern: re.Pattern[str], text: str) -> tuple[str, int]:
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if match.group("value") == REDACTED:
            return match.group(0)
        count += 1
        start, end = (i - match.start() for i in match.span("value"))
        return match.group(0)[:start] + REDACTED + match.group(0)[end:]

    return pattern.sub(replace, text), count


def _redact_cards(text: str) -> tuple[str, int]:
    count = 0

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        digits = re.sub(r"\D", "", match.group(0))
        if 13 <= len(digits) <= 19 and luhn_valid(digits):
            count += 1
            return REDACTED
        return match.group(0)

    return _CARD_CANDIDATE.sub(replace, text), count


def _has_substance(text: str) -> bool:
    rest = text.replace(REDACTED, " ")
    for word in _SECRET_WORDS_ZH:
        rest = rest.replace(word, " ")
    words = [w for w in _WORD.findall(rest.lower()) if w not in _SECRET_WORDS]
    return len(words) >= 2
