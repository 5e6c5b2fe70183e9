"""Secrets recognisable by their format alone: provider keys, tokens, private keys, URL credentials.

Each `Rule` pairs a pattern with the literal strings its match must contain (lower case), so a
text that holds none of them skips the pattern. A pattern with a `value` group redacts that group
only (the words around it say what it is, and stay); any other pattern redacts its whole match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    """One detector: what it finds, its pattern, and the strings that must occur for it to run."""

    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]
    """Lower-case strings, one of which every match contains (a cheap filter before the regex)."""

    def applies(self, lowered: str) -> bool:
        """Whether the lower-cased text holds one of the triggers."""
        return any(map(lowered.__contains__, self.triggers))


_AWS_PREFIXES = ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA")
_AWS_ACCESS_KEY = rf"\b(?:{'|'.join(_AWS_PREFIXES)})[0-9A-Z]{{16}}\b"
_AWS = tuple(p.lower() for p in _AWS_PREFIXES)
_GROUP = r"[A-Z0-9]{4,6}"
_MIXED_GROUP = r"(?=[A-Z]*[0-9])(?=[0-9]*[A-Z])[A-Z0-9]{4,6}(?![A-Z0-9])"
"""A group of a license key with both a letter and a digit."""

FORMATS: tuple[Rule, ...] = (
    Rule(
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)",
            re.DOTALL,
        ),
        ("-----begin",),
    ),
    # The secret half of an AWS key pair, pasted after its access key id: "AKIA... / wJal...",
    # "AKIA...:wJal...", on the next line, or "AKIA..., secret wJal...".
    Rule(
        "aws_secret_key",
        re.compile(
            _AWS_ACCESS_KEY
            + r"(?:\s*[/:,;|]\s*|\s+(?:and|&)\s+|\s*\n\s*)"
            r"(?:(?i:secret(?:\s+access)?(?:\s+key)?)\s*(?:is\s+|[:=]\s*)?)?"
            r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
        _AWS,
    ),
    Rule("aws_access_key", re.compile(_AWS_ACCESS_KEY), _AWS),
    Rule("openai_key", re.compile(r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,}"), ("sk-",)),
    Rule(
        "github_token",
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    Rule("gitlab_token", re.compile(r"\bgl(?:pat|dt|rt|ptt|cbt|oas|soat)-[A-Za-z0-9_\-]{10,}"),
         ("gl",)),
    Rule("slack_token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}"),
         ("xox", "xapp-")),
    Rule(
        "webhook_url",
        re.compile(
            r"https://(?:hooks\.slack\.com/(?:services|workflows|triggers)"
            r"|(?:[\w-]+\.)?discord(?:app)?\.com/api/webhooks)/[A-Za-z0-9/_\-]+"
        ),
        ("hooks.slack.com", "/api/webhooks"),
    ),
    Rule("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}"), ("aiza",)),
    Rule("fcm_server_key", re.compile(r"\bAAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{20,}"),
         ("apa91b",)),
    Rule("google_oauth", re.compile(r"\bGOCSPX-[A-Za-z0-9_\-]{20,}|\bya29\.[0-9A-Za-z_\-]{20,}"),
         ("gocspx-", "ya29.")),
    Rule(
        "stripe_key",
        re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}|\bwhsec_[A-Za-z0-9]{20,}"),
        ("_live_", "_test_", "whsec_"),
    ),
    Rule("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), ("hf_",)),
    Rule("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{30,}"), ("npm_",)),
    Rule("pypi_token", re.compile(r"\bpypi-[A-Za-z0-9_\-]{40,}"), ("pypi-",)),
    Rule(
        "provider_key",
        re.compile(
            r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"  # SendGrid
            r"|\bSK[0-9a-fA-F]{32}\b|\bAC[0-9a-f]{32}\b"  # Twilio API key, account SID
            r"|\bkey-[0-9a-zA-Z]{32}\b"  # Mailgun
            r"|\bdo[opr]_v1_[a-f0-9]{64}\b"  # DigitalOcean
            r"|\bshp(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b"  # Shopify
            r"|\bdapi[a-f0-9]{32}\b"  # Databricks
            r"|\b(?:gsk|r8|lin_api|ntn|secret)_[A-Za-z0-9]{30,}"  # Groq, Replicate, Linear, Notion
            r"|\b(?:xai|pplx)-[A-Za-z0-9]{40,}"  # xAI, Perplexity
            r"|\bATATT3[A-Za-z0-9_\-=]{50,}"  # Atlassian
            r"|\bAGE-SECRET-KEY-1[0-9A-Z]{50,}"  # age
            r"|\b\d{8,10}:AA[A-Za-z0-9_\-]{33}\b"  # Telegram bot
            r"|\bLTAI[0-9A-Za-z]{12,24}\b|\bAKID[0-9A-Za-z]{32}\b"  # Alibaba, Tencent Cloud key ids
            r"|\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}:fx\b"  # DeepL (free)
        ),
        ("sg.", "sk", "ac", "key-", "_v1_", "shp", "dapi", "_", "xai-", "pplx-", "atatt3", ":aa",
         "ltai", "akid", ":fx"),
    ),
    # a Discord bot token: the bot's id in base64, a timestamp, an HMAC, joined by dots
    Rule(
        "discord_token",
        re.compile(r"(?<![\w.-])[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}(?![\w.-])"),
        (".",),
    ),
    Rule(
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
        ("eyj",),
    ),
    Rule("bearer_token", re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=\-]{16,}"), ("bearer ",)),
    Rule("basic_auth", re.compile(r"(?<=\bBasic )[A-Za-z0-9+/]{12,}={0,2}"), ("basic ",)),
    # user:password in a URL; the password may hold "@" (the host follows the last one)
    Rule("url_credentials", re.compile(r"(?<=://)[^\s:/@]*:[^\s/]+(?=@[^\s@/]+)"), ("://",)),
    # user:password in a Go (go-sql-driver/mysql) DSN, which has no scheme:
    # root:pw@tcp(10.0.0.5:3306)/shop; the password may hold "@" (the protocol follows the last)
    Rule(
        "dsn_credentials",
        re.compile(r"(?<![^\s\"'`=(,;])[^\s:/@\"'`=]+:[^\s\"'`]+(?=@(?:tcp6?|udp|unix)\()"),
        ("@tcp(", "@tcp6(", "@udp(", "@unix("),
    ),
    # a license or product key (after a short product prefix, GP8-): four or more dash-separated
    # groups of 4-6 capital letters and digits, two of them at least mixing both
    # (7HQD-K2MX-PL9V-R4TE-W8ZN-3CYB); a date, a phone or an ISBN has no letter, a build id
    # (BUILD-2024-0612-1530) or a serial with one mixed group (SN12-3456-7890-ABCD) is not a key,
    # a UUID is lower-case hex
    Rule(
        "license_key",
        re.compile(
            rf"(?<![\w-])(?:[A-Z0-9]{{2,3}}-)?"
            rf"(?=(?:{_GROUP}-)*?{_MIXED_GROUP}-(?:{_GROUP}-)*?{_MIXED_GROUP})"
            rf"(?:{_GROUP}-){{3,}}{_GROUP}(?![\w-])"
        ),
        ("-",),
    ),
)
