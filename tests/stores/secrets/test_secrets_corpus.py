"""Recall and precision of redaction on the secrets corpus: every secret goes, no look-alike is touched."""

from __future__ import annotations

import pytest
from secrets_corpus import leaked, load

from engram.stores.secrets import redact

CASES, LOOKALIKES = load()


def test_the_corpus_is_big_enough() -> None:
    assert len(CASES) >= 50 and len(LOOKALIKES) >= 40
    assert sum(any("\u4e00" <= ch <= "\u9fff" for ch in c.text) for c in CASES) >= 10


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.text[:40])
def test_every_secret_is_redacted(case) -> None:
    text = redact(case.text).text
    assert [s for s in case.secrets if leaked(s, text)] == [], text


@pytest.mark.parametrize("text", LOOKALIKES)
def test_no_lookalike_is_redacted(text) -> None:
    result = redact(text)
    assert result.text == text and result.kinds == []


def test_recall_and_precision_on_the_whole_corpus() -> None:
    found = sum(not any(leaked(s, redact(c.text).text) for s in c.secrets) for c in CASES)
    touched = sum(redact(t).text != t for t in LOOKALIKES)
    assert (found / len(CASES), touched) == (1.0, 0)
