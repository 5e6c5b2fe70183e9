"""The figures of a report: what each metric means, the targets it is judged by, and how it is
printed (shared by the JSON report, its HTML twin and the console summary).

A metric whose value is None (nothing to measure) never passes its target.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class Target:
    """A bar a metric must clear: `value >= threshold` or `value <= threshold`."""

    metric: str
    op: Literal[">=", "<="]
    threshold: float

    @property
    def text(self) -> str:
        """The target as written in reports, e.g. ">= 0.8"."""
        return f"{self.op} {self.threshold:g}"

    def passes(self, value: float | None) -> bool:
        """Whether `value` meets the target; a missing value (None) never does."""
        if value is None:
            return False
        return value >= self.threshold if self.op == ">=" else value <= self.threshold


SUITE_TARGETS: tuple[Target, ...] = (
    Target("extraction_f1", ">=", 0.8),
    Target("probe_recall_at_5", ">=", 0.9),
    Target("detail_retention", ">=", 0.8),
    Target("secrets_stored", "<=", 0),
    Target("chitchat_memories", "<=", 0),
    Target("token_ratio_at_150", "<=", 0.25),
)
"""The targets for the bundled suites in offline mode (reported, not tuned for)."""

LOCOMO_TARGETS: tuple[Target, ...] = (
    Target("any_at_10", ">=", 0.80),
    Target("frac_at_10", ">=", 0.70),
)
"""The targets on the LoCoMo dev set in engine mode. For scale, on those five conversations
BM25 alone reaches 0.663 / 0.605, all-MiniLM-L6-v2 alone 0.612 / 0.541."""

SUITE_METRICS: tuple[str, ...] = (
    "extraction_precision",
    "extraction_recall",
    "extraction_f1",
    "detail_retention",
    "category_accuracy",
    "duplicate_rate",
    "stale_fact_rate",
    "stale_shown_rate",
    "lost_memory_rate",
    "probe_recall_at_5",
    "secrets_stored",
    "chitchat_memories",
    "token_ratio_at_150",
    "model_calls_per_turn",
    "model_tokens_per_turn",
    "memory_model_fallbacks",
    "ungrounded_memories",
    "recall_timeouts",
    "latency_p50_ms",
    "latency_p95_ms",
)
"""The metric names every suite report holds (more may follow them)."""

METRIC_DEFINITIONS: dict[str, str] = {
    "extraction_precision": "stored memories that match an expected one / stored memories",
    "extraction_recall": "expected memories matched by a stored one / expected memories",
    "extraction_f1": "harmonic mean of extraction precision and recall",
    "detail_retention": "required details found verbatim in any stored memory / all details",
    "category_accuracy": "matched memories stored under the expected category",
    "duplicate_rate": "current memories that repeat a matched or earlier one / current memories",
    "stale_fact_rate": "corrected facts whose old version is still current / corrections due",
    "stale_shown_rate": "corrections whose old statement a new thread's first turn shows as current (without the new value, or with nothing telling which is later) / corrections due",
    "lost_memory_rate": "memories current on time that no current memory holds at the end, though nothing replaced them / memories current on time",
    "probe_recall_at_5": "expected memories found in a probe's top 5 recalled / expected",
    "probe_recall_with_episodes": "probe recall counting all a first turn shows: memories and archived messages",
    "on_time_recall": "expected memories stored right after the session they are due by",
    "secrets_stored": "stored memories holding a secret the dialog forbids (count)",
    "secrets_in_episodes": "archived messages holding a forbidden secret (count)",
    "chitchat_memories": "memories stored from chit-chat sessions (count)",
    "incognito_leaks": "memories stored from incognito sessions (count)",
    "token_ratio_at_150": "prompt tokens at turn 150 / the full-context baseline's",
    "model_calls_per_turn": "chat-model calls (answering, summarising, extracting) / user turns",
    "model_tokens_per_turn": "prompt + completion tokens the models reported / user turns",
    "stored_memories": "memories in the store after the last session (count)",
    "prompt_tokens_per_turn": "tokens engram put in the answering prompt, per turn (mean)",
    "full_context_tokens_per_turn": "tokens of the whole conversation so far (every earlier session and this one), per turn (mean)",
    "thread_tokens_per_turn": "tokens of this session's messages so far, per turn (mean)",
    "memory_model_fallbacks": "memory-model calls that failed, the offline built-ins doing the work (count)",
    "ungrounded_memories": "memories the memory model wrote that rest on no words of the user, dropped (count)",
    "recall_timeouts": "turns whose recall ran out of its time budget and answered without memories (count)",
    "latency_p50_ms": "median milliseconds per graph node",
    "latency_p95_ms": "95th-percentile milliseconds per graph node",
    # answer accuracy (kind "qa"): engram's figures; the report's systems table has all of them
    "j": "answers the judge called correct / judged answers (the papers' J)",
    "j_ci95_low": "lower end of J's 95% Wilson score interval",
    "j_ci95_high": "upper end of J's 95% Wilson score interval",
    "f1": "F1 of the answer's and the gold answer's word sets, mean over answers",
    "bleu1": "BLEU-1 of the answer against the gold answer, mean over answers",
    "prompt_tokens_per_question": "tokens of the answering prompt, mean per question",
    "answer_latency_p50_ms": "median milliseconds to answer a question (recall included)",
    "answer_latency_p95_ms": "95th-percentile milliseconds to answer a question",
    "memory_write_latency_p50_ms": "median milliseconds per graph run while writing the sessions",
    "memory_write_latency_p95_ms": "95th-percentile milliseconds per graph run while writing",
    "memory_model_calls": "memory-model calls spent writing the sessions (count)",
    "memory_model_tokens": "tokens the memory model reported spending on them (count)",
    "answers": "questions answered (count)",
    "judged": "answers the judge graded (count)",
    "judge_unparsed": "judge replies that said neither correct nor wrong, scored wrong (count)",
}
"""One line per metric: what it counts (shown next to the value in every report)."""

LOWER_IS_BETTER = frozenset(
    {
        "duplicate_rate",
        "stale_fact_rate",
        "stale_shown_rate",
        "lost_memory_rate",
        "secrets_stored",
        "secrets_in_episodes",
        "chitchat_memories",
        "incognito_leaks",
        "token_ratio_at_150",
        "model_calls_per_turn",
        "model_tokens_per_turn",
        "prompt_tokens_per_turn",
        "memory_model_fallbacks",
        "ungrounded_memories",
        "recall_timeouts",
        "prompt_tokens_per_question",
        "answer_latency_p50_ms",
        "answer_latency_p95_ms",
        "memory_write_latency_p50_ms",
        "memory_write_latency_p95_ms",
        "memory_model_calls",
        "memory_model_tokens",
        "judge_unparsed",
    }
)

COUNT_METRICS = frozenset(
    {
        "secrets_stored",
        "secrets_in_episodes",
        "chitchat_memories",
        "incognito_leaks",
        "stored_memories",
        "prompt_tokens_per_turn",
        "full_context_tokens_per_turn",
        "thread_tokens_per_turn",
        "model_calls_per_turn",
        "model_tokens_per_turn",
        "memory_model_fallbacks",
        "ungrounded_memories",
        "recall_timeouts",
        "prompt_tokens_per_question",
        "answer_latency_p50_ms",
        "answer_latency_p95_ms",
        "memory_write_latency_p50_ms",
        "memory_write_latency_p95_ms",
        "memory_model_calls",
        "memory_model_tokens",
        "answers",
        "judged",
        "judge_unparsed",
    }
)
"""Metrics that are not shares in [0, 1]."""


def check_targets(
    metrics: Mapping[str, Any], targets: Sequence[Target]
) -> dict[str, dict[str, Any]]:
    """`{metric: {"target": ">= 0.8", "value": ..., "pass": ...}}` for each target."""
    return {
        t.metric: {
            "target": t.text,
            "value": metrics.get(t.metric),
            "pass": t.passes(metrics.get(t.metric)),
        }
        for t in targets
    }


def all_pass(report: Mapping[str, Any]) -> bool:
    """Whether every target of a report passed."""
    return all(entry["pass"] for entry in report["targets"].values())


def verdict(target: Mapping[str, Any] | None) -> Literal["pass", "fail"] | None:
    """The verdict of a `check_targets` entry, "pass" or "fail"; None without a target."""
    if target is None:
        return None
    return "pass" if target["pass"] else "fail"


def format_number(value: Any) -> str:
    """A metric as reports print it: 3 decimals below 10, 1 above, "n/a" for None."""
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 10 else f"{value:.1f}"
    return str(value)
