"""Secrets recognisable by their format alone: provider keys, tokens, private keys, URL credentials.

Each entry is `(kind, pattern)`. A pattern with a `value` group redacts that group only (the
words around it say what it is, and stay); any other pattern redacts its whole match.
"""

from __future__ import annotations

import re

_AWS_ACCESS_KEY = r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"

FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*)",
            re.DOTALL,
        ),
    ),
    # The secret half of an AWS key pair, pasted after its access key id: "AKIA... / wJal...",
    # "AKIA...:wJal...", on the next line, or "AKIA..., secret wJal...".
    (
        "aws_secret_key",
        re.compile(
            _AWS_ACCESS_KEY
            + r"(?:\s*[/:,;|]\s*|\s+(?:and|&)\s+|\s*\n\s*)"
            r"(?:(?i:secret(?:\s+access)?(?:\s+key)?)\s*(?:is\s+|[:=]\s*)?)?"
            r"(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
    ),
    ("aws_access_key", re.compile(_AWS_ACCESS_KEY)),
    ("openai_key", re.compile(r"\bsk-(?:[A-Za-z0-9]+-)*[A-Za-z0-9_\-]{16,}")),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})")),
    ("gitlab_token", re.compile(r"\bgl(?:pat|dt|rt|ptt|cbt|oas|soat)-[A-Za-z0-9_\-]{10,}")),
    ("slack_token", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}|\bxapp-\d-[A-Za-z0-9-]{10,}")),
    (
        "webhook_url",
        re.compile(
            r"https://(?:hooks\.slack\.com/(?:services|workflows|triggers)"
            r"|(?:[\w-]+\.)?discord(?:app)?\.com/api/webhooks)/[A-Za-z0-9/_\-]+"
        ),
    ),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("google_oauth", re.compile(r"\bGOCSPX-[A-Za-z0-9_\-]{20,}|\bya29\.[0-9A-Za-z_\-]{20,}")),
    ("stripe_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}|\bwhsec_[A-Za-z0-9]{20,}")),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{30,}")),
    ("pypi_token", re.compile(r"\bpypi-[A-Za-z0-9_\-]{40,}")),
    (
        "provider_key",
        re.compile(
            r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"  # SendGrid
            r"|\bSK[0-9a-fA-F]{32}\b"  # Twilio API key
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
        ),
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}")),
    ("bearer_token", re.compile(r"(?i)(?<=\bbearer )[A-Za-z0-9._~+/=\-]{16,}")),
    ("basic_auth", re.compile(r"(?<=\bBasic )[A-Za-z0-9+/]{12,}={0,2}")),
    # user:password in a URL; the password may hold "@" (the host follows the last one)
    ("url_credentials", re.compile(r"(?<=://)[^\s:/@]*:[^\s/]+(?=@[^\s@/]+)")),
)
