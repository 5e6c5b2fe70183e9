"""Secret redaction: API keys, tokens, passwords, card data and private keys never reach the store.

The first step of the long-term write policy (DESIGN "Long-term memories"), also applied to every
archived message. Detection is by pattern, in three families:

- **formats** recognisable on their own: PEM private keys, OpenAI/Anthropic `sk-...`, AWS
  `AKIA...`, GitHub, GitLab, Slack, Google, Stripe, Hugging Face, npm and PyPI tokens, JWTs,
  bearer and basic authorization values, credentials inside URLs (`postgres://user:pw@host`);
- **labelled values**: the value after a telling word, English or Chinese — passwords, passcodes
  and PINs (`password: X`, `pwd=X`, `密码是X`, `支付密码 X`), card security codes (`CVV 917`,
  `安全码 123`), tokens and keys (`api key: X`, `token X`, `密钥 X`), and `*_PASSWORD=`,
  `*_SECRET=`, `*_TOKEN=` assignments (environment files, connection strings with
  `Password=X;`). After `is`/`=`/`:` any value is taken; after a bare space only a value that
  looks like one (digits for a PIN or CVV; digits, symbols or mixed case for a password; a long
  letters-and-digits string for a token), so "password manager" and "token limit" stay;
- **card numbers**: 13–19 digits (spaces or dashes allowed) that pass the Luhn check, or that
  follow a card word ("card", "卡号", "银行卡", "visa", ...).

Not redacted: versions, ports, IP addresses, dates, phone numbers and other plain numbers.

Limits: a secret with no recognisable format and no telling word before it ("the door code
is 4711" is found, "open it with 4711" is not); a 13–19 digit number that passes the Luhn check
is redacted even if it is not a card number (the safe side).
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
    ("gitlab_token", re.compile(r"\bgl(?:pat|dt|rt|ptt|cbt)-[A-Za-z0-9_\-]{10,}")),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{30,}")),
    ("pypi_token", re.compile(r"\bpypi-[A-Za-z0-9_\-]{40,}")),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("bearer_token", re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=\-]{16,}")),
    ("basic_auth", re.compile(r"(?<=\bBasic )[A-Za-z0-9+/]{12,}={0,2}")),
    ("url_credentials", re.compile(r"(?<=://)[^\s:/@]*:[^\s@/]+(?=@)")),
)

_IS = (
    r"(?:\s+(?:is|was|are)(?:\s+set\s+to|\s+now)?\s+|\s*[=:：]\s*|\s+(?:set\s+to|changed\s+to)\s+"
    r"|\s*(?:是|为|设为|设置为|设成|改成|改为|换成)了?\s*)"
)
"""A separator after which whatever follows is the secret."""
_VALUE = r"[\"'`“”「」]?(?P<value>[^\s\"'`“”「」，。；！？、,;]+?)[\"'`“”「」]?(?=[\s，。；！？、,;\"'`“”「」]|[.!?](?:\s|$)|$)"


@dataclass(frozen=True)
class _Label:
    """Telling words, and what a value must look like to count as the secret they label."""

    kind: str
    words: str
    value: str
    """Pattern a value must match in full (always after a bare space; after `is`/`=`/`:` too
    when `strict`)."""
    strict: bool = False
    """Whether the value must match `value` even after `is`/`=`/`:` ("the key is simplicity")."""
    space: str = r"\s+"
    """What may separate the words from a bare value (Chinese writes them together)."""


_DIGITS = r"\d{3,8}"
_PASSWORD_LIKE = r"(?=[!-+\--:<-~]*(?:\d|[^\w\s]|[A-Z][!-~]*[a-z]|[a-z][!-~]*[A-Z]))[!-+\--:<-~]{4,}"
"""Printable ASCII but `,` and `;`, with a digit, a symbol or mixed case somewhere."""
_TOKEN_LIKE = r"(?=\S*\d)(?=\S*[A-Za-z])[A-Za-z0-9_\-.+/=]{16,}"
_ZH_PASSWORD = r"(?:支付|登录|交易|取款|开机|管理员|数据库|邮箱|WiFi|wifi|WIFI)?(?:密码|口令)"

_LABELS: tuple[_Label, ...] = (
    _Label("card_security_code",
           r"(?i:\b(?:cvv2?|cvc2?|cid|csc|card\s+security\s+code|security\s+code))", _DIGITS, strict=True),
    _Label("card_security_code", r"安全码|(?i:cvv|cvc)码", _DIGITS, strict=True, space=r"\s*"),
    _Label("password", r"(?i:\b(?:pin(?:\s+(?:code|number))?|passcode|door\s+code|alarm\s+code))",
           _DIGITS, strict=True),
    _Label("password", r"(?i:pin)码|验证码|门禁码", _DIGITS, strict=True, space=r"\s*"),
    _Label("password", r"(?i:\b(?:password|passwd|passphrase|pwd|pass\s+word))", _PASSWORD_LIKE),
    _Label("password", _ZH_PASSWORD, _PASSWORD_LIKE, space=r"\s*"),
    _Label("api_token",
           r"(?i:\b(?:secret\s+key|client[_\s]secret|api[_\s\-]?key|apikey|access[_\s](?:token|key)"
           r"|auth[_\s]token|token|private[_\s]key|aws_secret_access_key|secret_access_key))",
           _TOKEN_LIKE),
    _Label("api_token", r"(?i:\b(?:key|secret))", _TOKEN_LIKE, strict=True),
    _Label("api_token", r"密钥|秘钥|私钥|令牌", _TOKEN_LIKE, space=r"\s*"),
)

_ENV_SECRET = re.compile(
    r"\b[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|PWD|SECRET|TOKEN(?!S)|API_?KEY|PRIVATE_KEY|ACCESS_KEY)[A-Z0-9_]*"
    r"\s*[=:]\s*" + _VALUE
)
_CARD_CANDIDATE = re.compile(r"(?<![\d\-])\d(?:[ \-]?\d){12,18}(?![\d\-])")
_CARD_WORD = re.compile(
    r"(?i:\b(?:card|visa|mastercard|amex|debit|credit|iban)\b)|卡号|卡|信用卡|银行卡|借记卡"
)
_CARD_WORD_WINDOW = 30
"""How many characters before a number a card word may stand to make it a card number."""

# Words that only describe a secret: once the secret is gone, a text made of these says nothing.
_SECRET_WORDS = frozenset(
    """
    my our the a an is was are be it its this that these for of to and or in on with your his her
    their me i we here there now new old set changed change use using key keys api password
    passwords passwd passphrase passcode pwd pin code secret secrets token tokens access auth
    private credential credentials card number credit debit bank account login aws openai github
    slack stripe google bearer jwt value id cvv cvc cvv2 csc security exp expiry expires door
    """.split()
)
_SECRET_WORDS_ZH = ("我的", "我们的", "支付密码", "密码", "口令", "密钥", "秘钥", "私钥", "令牌",
                    "验证码", "安全码", "是", "为", "卡号", "银行卡", "信用卡", "账号", "设置", "改成",
                    "改为", "支付")
_WORD = re.compile(r"[A-Za-z0-9_]+|[\u3400-\u9fff]")


def _label_patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    out = []
    end = r"[\"'`“”「」]?(?=[\s，。；！？、,;\"'`“”「」]|[.!?](?:\s|$)|$)"
    for label in _LABELS:
        words = rf"(?:{label.words})(?:\s+(?:for|of|to)\s+[\w.\-@]+)?"
        strict = rf"[\"'`“”「」]?(?P<value>{label.value})" + end
        after_is = strict if label.strict else _VALUE
        out.append((label.kind, re.compile(words + _IS + after_is)))
        out.append((label.kind, re.compile(words + label.space + strict)))
    return tuple(out)


_LABELLED = _label_patterns()


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
        >>> redact("card 4539 1488 0343 6467, CVV 917, port 5433").text
        'card [REDACTED], CVV [REDACTED], port 5433'
    """
    kinds: list[str] = []
    for kind, pattern in _TOKEN_PATTERNS:
        text, n = pattern.subn(REDACTED, text)
        kinds.extend([kind] * n)
    for kind, pattern in (*_LABELLED, ("password", _ENV_SECRET)):
        text, n = _redact_group(pattern, text)
        kinds.extend([kind] * n)
    text, cards = _redact_cards(text)
    kinds.extend(["card_number"] * cards)
    return Redaction(text=text, kinds=kinds)


def is_only_secret(text: str) -> bool:
    """Whether an already redacted text is a secret and nothing worth keeping around it.

    Example:
        >>> is_only_secret(f"my password is {REDACTED}"), is_only_secret(f"deploy with {REDACTED} on staging")
        (True, False)
    """
    return REDACTED in text and not _has_substance(text)


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
        if REDACTED in match.group("value"):
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
        before = text[max(0, match.start() - _CARD_WORD_WINDOW): match.start()]
        if 13 <= len(digits) <= 19 and (luhn_valid(digits) or _CARD_WORD.search(before)):
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
