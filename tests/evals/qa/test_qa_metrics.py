"""Answer-accuracy figures: F1 and BLEU-1 as the papers print them, J's Wilson interval, the
judges' verdicts read from their replies, and the per-system summary."""

from __future__ import annotations

import pytest

from engram.evals.qa.judge import label_verdict, yes_no_verdict
from engram.evals.qa.metrics import (
    ScoredAnswer,
    bleu1,
    bleu_tokens,
    summarize,
    token_f1,
    wilson_interval,
)


@pytest.mark.parametrize(
    ("answer", "gold", "expected"),
    [
        ("Paris", "Paris", 1.0),
        ("She went to Paris in May", "Paris", 2 / 7),  # P = 1/6, R = 1
        ("paris, france!", "Paris France", 1.0),  # case and . , ! ? do not count
        ("the the cat", "cat the", 1.0),  # word sets, not counts
        ("", "Paris", 0.0),
        ("London", "Paris", 0.0),
    ],
)
def test_token_f1_compares_word_sets(answer, gold, expected):
    assert token_f1(answer, gold) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("answer", "gold", "expected"),
    [
        ("the cat sat on the mat", "the cat is on the mat", 5 / 6),  # same length: no penalty
        ("the the the", "the cat", 1 / 3),  # clipped: "the" counts once
        ("cat", "the cat sat", 2.718281828 ** (1 - 3)),  # brevity penalty exp(1 - r/c)
        ("a dog", "the cat", 0.0),  # no unigram in common: 0, as NLTK returns
        ("", "the cat", 0.0),
        ("7 May 2023", "7 May, 2023", 2.718281828 ** (1 - 4 / 3)),  # the comma is a token
    ],
)
def test_bleu1_is_clipped_unigram_precision_times_the_brevity_penalty(answer, gold, expected):
    assert bleu1(answer, gold) == pytest.approx(expected, rel=1e-6)


def test_bleu_tokens_split_punctuation_and_keep_numbers_and_hyphens():
    assert bleu_tokens("Mel's self-care: 2.5 hours, daily!") == [
        "mel", "'s", "self-care", ":", "2.5", "hours", ",", "daily", "!"
    ]


def test_wilson_interval_known_values():
    low, high = wilson_interval(8, 10)
    assert (round(low, 4), round(high, 4)) == (0.4902, 0.9433)
    low, high = wilson_interval(0, 10)
    assert low == 0.0 and high == pytest.approx(0.2775, abs=1e-4)
    assert wilson_interval(5, 5)[1] == 1.0
    assert wilson_interval(0, 0) is None


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ('The dates match. {"label": "CORRECT"}', True),
        ('{"label": "WRONG"}', False),
        ('```json\n{"label": "correct"}\n```', True),
        ("Same topic, so CORRECT", True),
        ("Not the same: WRONG", False),
        ('First CORRECT... no. {"label": "WRONG"}', False),  # the JSON label wins
        ("I am not sure.", None),
        ("", None),
    ],
)
def test_locomo_judge_replies(reply, verdict):
    assert label_verdict(reply) is verdict


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [("yes", True), ("Yes, it does.", True), ("No.", False), ("no", False), ("unsure", None)],
)
def test_longmemeval_judge_replies(reply, verdict):
    assert yes_no_verdict(reply) is verdict


def test_summarize_overall_and_by_category():
    answers = [
        ScoredAnswer("temporal", 1.0, 1.0, 100, 10.0, correct=True, judged=True),
        ScoredAnswer("temporal", 0.0, 0.0, 300, 30.0, correct=False, judged=True),
        ScoredAnswer("multi-hop", 0.5, 0.25, 200, 20.0, correct=None, judged=True),  # unparsed
        ScoredAnswer("multi-hop", 0.5, 0.25, 200, 40.0),  # answered, the judge failed
    ]
    figures = summarize(answers, ["single-hop", "multi-hop", "temporal"])
    assert figures["answers"] == 4 and figures["judged"] == 3
    assert figures["j"] == pytest.approx(1 / 3)  # unparsed counts as not correct
    assert figures["j_ci95"] == pytest.approx(list(wilson_interval(1, 3)))
    assert figures["f1"] == pytest.approx(0.5) and figures["prompt_tokens"] == 200
    assert (figures["answer_latency_p50_ms"], figures["answer_latency_p95_ms"]) == (20.0, 40.0)
    assert figures["judge_unparsed"] == 1
    assert list(figures["by_category"]) == ["multi-hop", "temporal"]  # report order, non-empty
    assert figures["by_category"]["temporal"]["j"] == 0.5
    assert figures["by_category"]["multi-hop"]["j"] == 0.0
