"""The figures of an answer-accuracy run: J with its confidence interval, F1, BLEU-1, tokens and
latency, overall and by category.

F1 and BLEU-1 are computed as mem0's evaluation computes them (the papers' F1 and B1 columns):

- F1 compares the *sets* of lower-cased words (`.`, `,`, `!` and `?` turned into spaces, split on
  whitespace) of the answer and the gold answer;
- BLEU-1 is NLTK's `sentence_bleu` with weights (1, 0, 0, 0): clipped unigram precision times
  the brevity penalty, 0 when no word matches, over lower-cased tokens. NLTK's `word_tokenize` is
  approximated by a regular expression (words with inner hyphens, decimal numbers, `'s`-style
  clitics and each punctuation mark as tokens), so a figure can differ from NLTK's in the third
  decimal on answers with contractions.

J is the share of judged answers the judge called correct (an unparsed verdict counts as not
correct), with a 95% Wilson score interval. Latencies are nearest-rank percentiles.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from engram.evals.dialogs.metrics import percentile

_PUNCTUATION = str.maketrans({".": " ", ",": " ", "!": " ", "?": " "})
_BLEU_TOKEN = re.compile(r"\d+(?:[.,]\d+)+|\w+(?:-\w+)*|'\w+|[^\w\s]")
Z_95 = 1.959964
"""The standard normal quantile of a two-sided 95% interval."""


@dataclass(frozen=True)
class ScoredAnswer:
    """One system's answer to one question, with its figures."""

    category: str
    f1: float
    bleu1: float
    prompt_tokens: int
    latency_ms: float
    correct: bool | None = None
    """The judge's verdict; None when it said neither (or is missing: see `judged`)."""
    judged: bool = False


def f1_words(text: str) -> list[str]:
    """The words F1 compares (mem0's `simple_tokenize`).

    Example:
        >>> f1_words("Yes, in May 2023!")
        ['yes', 'in', 'may', '2023']
    """
    return str(text).lower().translate(_PUNCTUATION).split()


def token_f1(answer: str, gold: str) -> float:
    """F1 of the word sets of `answer` and `gold` (0 when either has no word).

    Example:
        >>> round(token_f1("She went to Paris in May", "Paris"), 3)
        0.286
    """
    predicted, expected = set(f1_words(answer)), set(f1_words(gold))
    common = len(predicted & expected)
    if not common:
        return 0.0
    precision, recall = common / len(predicted), common / len(expected)
    return 2 * precision * recall / (precision + recall)


def bleu_tokens(text: str) -> list[str]:
    """Lower-cased tokens for BLEU (an approximation of NLTK's `word_tokenize`).

    Example:
        >>> bleu_tokens("Caroline's self-care costs 3.5 dollars.")
        ['caroline', "'s", 'self-care', 'costs', '3.5', 'dollars', '.']
    """
    return _BLEU_TOKEN.findall(str(text).lower())


def bleu1(answer: str, gold: str) -> float:
    """Sentence BLEU-1 of `answer` against the single reference `gold`.

    Example:
        >>> round(bleu1("a shell necklace", "A shell necklace"), 3)
        1.0
        >>> round(bleu1("necklace", "a shell necklace"), 3)  # brevity penalty exp(1 - 3/1)
        0.135
    """
    hypothesis, reference = bleu_tokens(answer), bleu_tokens(gold)
    if not hypothesis or not reference:
        return 0.0
    wanted = Counter(reference)
    clipped = sum(min(n, wanted[token]) for token, n in Counter(hypothesis).items())
    if not clipped:
        return 0.0
    brevity = 1.0 if len(hypothesis) > len(reference) else math.exp(1 - len(reference) / len(hypothesis))
    return brevity * clipped / len(hypothesis)


def wilson_interval(successes: int, trials: int, z: float = Z_95) -> tuple[float, float] | None:
    """The Wilson score interval of a share (95% by default); None without trials.

    Example:
        >>> [round(x, 3) for x in wilson_interval(8, 10)]
        [0.49, 0.943]
    """
    if trials <= 0:
        return None
    share = successes / trials
    denominator = 1 + z * z / trials
    centre = (share + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def summarize(answers: Sequence[ScoredAnswer], categories: Sequence[str]) -> dict[str, Any]:
    """One system's figures: overall (with answer latency and unparsed verdicts) and by category
    (in `categories` order, those with answers)."""
    overall = _figures(answers)
    latencies = [a.latency_ms for a in answers]
    overall["answer_latency_p50_ms"] = percentile(latencies, 50) if latencies else None
    overall["answer_latency_p95_ms"] = percentile(latencies, 95) if latencies else None
    overall["judge_unparsed"] = sum(a.judged and a.correct is None for a in answers)
    overall["by_category"] = {
        category: _figures([a for a in answers if a.category == category])
        for category in categories
        if any(a.category == category for a in answers)
    }
    return overall


def _figures(answers: Sequence[ScoredAnswer]) -> dict[str, Any]:
    judged = [a for a in answers if a.judged]
    correct = sum(a.correct is True for a in judged)
    interval = wilson_interval(correct, len(judged))
    count = len(answers)
    return {
        "answers": count,
        "judged": len(judged),
        "j": correct / len(judged) if judged else None,
        "j_ci95": list(interval) if interval else None,
        "f1": sum(a.f1 for a in answers) / count if count else None,
        "bleu1": sum(a.bleu1 for a in answers) / count if count else None,
        "prompt_tokens": sum(a.prompt_tokens for a in answers) / count if count else None,
    }
