"""Recall and precision on the secrets corpus: engram's redaction, detect-secrets, and both.

Run from the repository root: `python tests/stores/secrets/measure_secrets.py`. detect-secrets (Yelp's scanner,
`pip install detect-secrets`) is optional: without it only engram's figures are printed.

Recall: share of secret cases with nothing of their secrets left. Precision: share of redacted
cases that were secrets (look-alikes changed count against it).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from secrets_corpus import leaked, load  # noqa: E402

from engram.stores.secrets import REDACTED, redact  # noqa: E402

Redactor = Callable[[str], str]


def engram(text: str) -> str:
    return redact(text).text


def detect_secrets(text: str) -> str:
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write(text)
    found = SecretsCollection()
    try:
        with default_settings():
            found.scan_file(f.name)
    finally:
        os.unlink(f.name)
    for _, secret in found:
        if secret.secret_value:
            text = text.replace(secret.secret_value, REDACTED)
    return text


def both(text: str) -> str:
    return detect_secrets(engram(text))


def score(redactor: Redactor) -> tuple[float, float, int, int]:
    """(recall, precision, secret cases missed, look-alikes redacted)."""
    cases, lookalikes = load()
    missed = sum(any(leaked(s, redactor(c.text)) for s in c.secrets) for c in cases)
    touched = sum(redactor(t) != t for t in lookalikes)
    caught = len(cases) - missed
    precision = caught / (caught + touched) if caught + touched else 1.0
    return caught / len(cases), precision, missed, touched


def main() -> None:
    cases, lookalikes = load()
    print(f"corpus: {len(cases)} secret cases, {len(lookalikes)} look-alikes")
    redactors: list[tuple[str, Redactor]] = [("engram", engram)]
    try:
        import detect_secrets as _  # noqa: F401

        redactors += [("detect-secrets", detect_secrets), ("engram + detect-secrets", both)]
    except ImportError:
        print("detect-secrets is not installed: only engram is measured")
    print(f"{'redactor':<26}{'recall':>8}{'precision':>11}{'missed':>8}{'look-alikes hit':>17}")
    for name, redactor in redactors:
        recall, precision, missed, touched = score(redactor)
        print(f"{name:<26}{recall:>8.3f}{precision:>11.3f}{missed:>8}{touched:>17}")


if __name__ == "__main__":
    main()
