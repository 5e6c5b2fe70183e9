"""Secret redaction: API keys, tokens, passwords, card data and private keys never persist.

The one redaction step for everything engram keeps beyond a thread's own messages: long-term
memories and their `structured_data` (every store write of a memory), archived messages
(episodes), the running summary (the evicted messages before it is written and the summary
itself, whichever summarizer wrote it), recorded failures and eval reports. What these hold is
all that reaches the BM25 index. Detection, in four families, applied in this order:

- **formats** recognisable on their own (`engram.stores.secrets.formats`): PEM private keys,
  OpenAI/Anthropic `sk-...`, AWS access keys and the secret key pasted after one, GitHub,
  GitLab, Slack, Google, Stripe, Hugging Face, npm, PyPI, SendGrid, Twilio and other provider
  tokens, Discord bot tokens, webhook URLs, JWTs, bearer and basic authorization values, credentials inside URLs
  (`postgres://user:pw@host`);
- **labelled values** (`engram.stores.secrets.labels`): the value after a telling word, English
  or Chinese — passwords, passcodes and PINs (`password: X`, `pw X`, `密码是X`, `口令 X`,
  `PIN 是 1234`; a password beyond doubt a few words after its name), identity, member and
  policy numbers, bank account numbers (`acct 3309881244`, `账号 6222...`), login pairs (`login is alice / X`), card security codes, tokens and keys
  (`api key: X`, `aws_secret_access_key = X`, `密钥 X`) and `*_PASSWORD=`, `*_SECRET=`,
  `*_TOKEN=` assignments in any case (`app_secret=X`) and the secret half of an AK/SK pair
  (`ALIYUN_SK=X`, `SK=X`);
- **card numbers** (`engram.stores.secrets.cards`): 13–19 digits that pass the Luhn check and
  look like a card, or that follow a card word; **IBANs** (`engram.stores.secrets.banks`) that
  pass the mod-97 check or follow the word IBAN; **Chinese resident identity numbers**
  (`engram.stores.secrets.ids`): 18 characters with a birth date and a valid checksum;
- **random-looking tokens** (`engram.stores.secrets.entropy`): 32+ characters mixing cases and
  digits with a random string's entropy, such as an AWS secret key on its own.

Not redacted: versions, ports, IP addresses, dates, phone numbers, git SHAs, UUIDs and other
plain numbers and identifiers (the look-alikes in `tests/stores/secrets/data/secrets_corpus.yaml`).

Limits: a secret with no recognisable format and no telling word before it ("the door code
is 4711" is found, "open it with 4711" is not); a number that passes the Luhn check and is
grouped like a card is redacted even if it is not one (the safe side).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from engram.stores.secrets.banks import redact_ibans
from engram.stores.secrets.cards import redact_cards
from engram.stores.secrets.entropy import redact_random_tokens
from engram.stores.secrets.formats import FORMATS
from engram.stores.secrets.ids import redact_resident_ids
from engram.stores.secrets.labels import describes_secret, label_patterns

REDACTED = "[REDACTED]"
"""What a secret is replaced with."""

_RULES = (*FORMATS, *label_patterns())

# Words that only describe a secret: once the secret is gone, a text made of these says nothing.
_SECRET_WORDS = frozenset(
    """
    my our the a an is was are be it its this that these for of to and or in on with your his her
    their me i we here there now new old set changed change use using key keys api password
    passwords passwd passphrase passcode pwd pw pass pin code secret secrets token tokens access
    auth private credential credentials creds card number credit debit bank account login user
    username aws openai github slack stripe google bearer jwt value id cvv cvc cvv2 csc security
    exp expiry expires door pair ssn social insurance passport national identity licence license
    tax driver garage gate alarm safe combination
    """.split()
)
_SECRET_WORDS_ZH = ("我的", "我们的", "支付密码", "密码", "口令", "密钥", "秘钥", "私钥", "令牌",
                    "验证码", "安全码", "是", "为", "卡号", "银行卡", "信用卡", "账号", "设置", "改成",
                    "改为", "支付", "登录", "身份证", "护照", "社保", "号码", "号")
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
        >>> redact("card 4539 1488 0343 6467, CVV 917, port 5433").text
        'card [REDACTED], CVV [REDACTED], port 5433'
    """
    kinds: list[str] = []
    lowered = text.lower()
    for rule in _RULES:
        if rule.applies(lowered):
            text, n = _redact_pattern(rule.pattern, text)
            kinds.extend([rule.kind] * n)
    text, cards = redact_cards(text, REDACTED)
    kinds.extend(["card_number"] * cards)
    text, ibans = redact_ibans(text, REDACTED)
    kinds.extend(["bank_account"] * ibans)
    text, ids = redact_resident_ids(text, REDACTED)
    kinds.extend(["national_id"] * ids)
    text, tokens = redact_random_tokens(text, REDACTED)
    kinds.extend(["random_token"] * tokens)
    return Redaction(text=text, kinds=kinds)


def redact_data(value: Any) -> Any:
    """`value` with every string in it redacted: dicts (their values), lists and tuples, deeply.

    Example:
        >>> redact_data({"dsn": "postgres://bob:hunter2xyz@db/x", "port": 5432, "tags": ["pw: Qx9!a"]})
        {'dsn': 'postgres://[REDACTED]@db/x', 'port': 5432, 'tags': ['pw: [REDACTED]']}
    """
    if isinstance(value, str):
        return redact(value).text
    if isinstance(value, dict):
        return {k: redact_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(redact_data(v) for v in value)
    return value


def is_only_secret(text: str) -> bool:
    """Whether an already redacted text is a secret and nothing worth keeping around it.

    Example:
        >>> is_only_secret(f"my password is {REDACTED}"), is_only_secret(f"deploy with {REDACTED} on staging")
        (True, False)
    """
    return REDACTED in text and not _has_substance(text)


def _redact_pattern(pattern: re.Pattern[str], text: str) -> tuple[str, int]:
    """Replace each match, or only its `value`/`quoted` group when it has one.

    A match is left alone when its value is already redacted, or (unquoted) is a word that
    describes the secret instead of being it.
    """
    count = 0
    group = next((g for g in ("quoted", "value") if g in pattern.groupindex), None)

    def replace(match: re.Match[str]) -> str:
        nonlocal count
        if group is None:
            count += 1
            return REDACTED
        value = match.group(group)
        if REDACTED in value or (group == "value" and describes_secret(value)):
            return match.group(0)
        count += 1
        start, end = (i - match.start() for i in match.span(group))
        return match.group(0)[:start] + REDACTED + match.group(0)[end:]

    return pattern.sub(replace, text), count


def _has_substance(text: str) -> bool:
    rest = text.replace(REDACTED, " ")
    for word in _SECRET_WORDS_ZH:
        rest = rest.replace(word, " ")
    words = [w for w in _WORD.findall(rest.lower()) if w not in _SECRET_WORDS]
    return len(words) >= 2
