"""Memory-quality metrics: pure functions over plain data, each defined by its docstring.

Shared rules:

- **Verbatim.** `contains(text, fragment)` compares after `normalize`: Unicode NFKC, case folding,
  and all whitespace removed (so "Node 20" matches "node20" and "用 Nuxt 4" matches "用Nuxt 4").
- **Satisfies.** A stored memory satisfies an expected memory when every one of the expected
  memory's `details` is contained in the stored memory's content. Categories do not matter here.
- **Matching.** `match_memories` pairs expected and stored memories one-to-one, maximising the
  number of pairs (augmenting paths); each expected memory tries satisfying memories of its own
  category first, then the rest, in stored order. So a stored memory counts for at most one
  expected memory, and the result is deterministic.
- **Ratios.** Rates are returned as `Ratio(numerator, denominator)`: compute one per dialog and
  add them up (`sum(ratios, Ratio())`) for a micro-average over a suite. `Ratio.value` is None
  when the denominator is 0: the metric is not measurable on that data (no expected memories,
  an empty store, no conflicts...), which a report shows as "n/a", never as a pass.
- **Stored memories.** `StoredMemory.current` is False for superseded (`valid_until` set) or
  forgotten memories. Extraction, retention, secrets and leaks look at every stored memory
  (a superseded memory was still extracted and still sits in the store); duplicates and
  staleness look at current ones only.
"""

from __future__ import annotations

import math
import unicodedata
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from difflib import SequenceMatcher
from typing import Any, Protocol


class ExpectedLike(Protocol):
    """What the metrics read of an expected memory (`engram.evals.dialogs.suite.ExpectedMemory` fits)."""

    @property
    def category(self) -> str: ...

    @property
    def details(self) -> Sequence[str]: ...


class ForbiddenLike(Protocol):
    """What the metrics read of a must-not-store entry (`engram.evals.dialogs.suite.ForbiddenText` fits)."""

    @property
    def text(self) -> str: ...

    @property
    def kind(self) -> str: ...


@dataclass(frozen=True)
class StoredMemory:
    """A memory as found in the store after a session."""

    content: str
    category: str
    current: bool = True
    """False once superseded (`valid_until` set) or forgotten."""
    session_id: str | None = None
    """The dialog session it was extracted from (the runner maps `source_thread_id` to it)."""

    @classmethod
    def from_value(cls, value: Mapping[str, Any], session_id: str | None = None) -> StoredMemory:
        """From a long-term memory's store value: current unless `valid_until` is set or it is
        `forgotten`.

        Example:
            >>> StoredMemory.from_value({"content": "Uses pnpm", "category": "preference",
            ...                          "valid_until": "2025-01-01T00:00:00+00:00"}).current
            False
        """
        current = value.get("valid_until") is None and not value.get("forgotten", False)
        return cls(str(value["content"]), str(value["category"]), current, session_id)


@dataclass(frozen=True)
class Ratio:
    """A rate kept as its two counts, so dialogs add up into a micro-average.

    Example:
        >>> (Ratio(1, 2) + Ratio(2, 2)).value
        0.75
        >>> Ratio().value is None
        True
    """

    numerator: int = 0
    denominator: int = 0

    @property
    def value(self) -> float | None:
        """numerator / denominator, or None when there is nothing to measure."""
        return self.numerator / self.denominator if self.denominator else None

    def __add__(self, other: Ratio) -> Ratio:
        return Ratio(self.numerator + other.numerator, self.denominator + other.denominator)


@dataclass(frozen=True)
class TokenTrace:
    """One dialog's prompt sizes per user turn (index 0 = turn 1): engram's and two baselines'.

    `full_context` resends the whole conversation so far (every earlier session that was not
    incognito, then this thread: what an app without memory sends to know the same); `thread`
    resends this thread only (an app that forgets every earlier session).
    """

    engram: Sequence[int]
    full_context: Sequence[int]
    thread: Sequence[int] = ()


def normalize(text: str) -> str:
    """Unicode NFKC, case-folded, every whitespace character removed."""
    return "".join(unicodedata.normalize("NFKC", text).casefold().split())


def contains(text: str, fragment: str) -> bool:
    """Whether `fragment` occurs verbatim in `text`, case- and whitespace-insensitively."""
    return normalize(fragment) in normalize(text)


def satisfies(content: str, expected: ExpectedLike) -> bool:
    """Whether a stored memory's content holds every required detail of `expected`."""
    text = normalize(content)
    return all(normalize(detail) in text for detail in expected.details)


def match_memories(
    expected: Sequence[ExpectedLike], stored: Sequence[StoredMemory]
) -> list[tuple[int, int]]:
    """One-to-one pairs (expected index, stored index) of satisfying memories, as many as possible.

    Maximum-cardinality bipartite matching by augmenting paths (Kuhn). Each expected memory
    tries the stored memories that satisfy it, those of its own category first, then in stored
    order. Pairs come back sorted by expected index.
    """
    texts = [normalize(m.content) for m in stored]
    candidates = []
    for memory in expected:
        details = [normalize(d) for d in memory.details]
        fitting = [j for j, text in enumerate(texts) if all(d in text for d in details)]
        fitting.sort(key=lambda j: stored[j].category != memory.category)
        candidates.append(fitting)
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for j in candidates[i]:
            if j not in seen:
                seen.add(j)
                if j not in owner or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    for i in range(len(expected)):
        augment(i, set())
    return sorted((i, j) for j, i in owner.items())


def extraction_precision(expected: Sequence[ExpectedLike], stored: Sequence[StoredMemory]) -> Ratio:
    """Matched pairs / stored memories: the share of stored memories that are expected ones.

    Every stored memory counts (current or not), so chit-chat and junk memories lower it.
    """
    return Ratio(len(match_memories(expected, stored)), len(stored))


def extraction_recall(expected: Sequence[ExpectedLike], stored: Sequence[StoredMemory]) -> Ratio:
    """Matched pairs / expected memories: the share of expected memories that were stored."""
    return Ratio(len(match_memories(expected, stored)), len(expected))


def extraction_f1(expected: Sequence[ExpectedLike], stored: Sequence[StoredMemory]) -> Ratio:
    """F1 = 2·matched / (stored + expected), the harmonic mean of precision and recall.

    Kept as counts so dialogs add up (micro F1). It is 0 when nothing is stored but memories
    were expected, and None only when there is neither.
    """
    return Ratio(2 * len(match_memories(expected, stored)), len(stored) + len(expected))


def detail_retention(expected: Sequence[ExpectedLike], stored: Sequence[StoredMemory]) -> Ratio:
    """Required details found verbatim in any stored memory / all required details.

    Each detail of each expected memory counts once, wherever it is found (a detail shared by
    two expected memories counts twice); no matching is involved.
    """
    texts = [normalize(m.content) for m in stored]
    details = [normalize(d) for memory in expected for d in memory.details]
    return Ratio(sum(any(d in text for text in texts) for d in details), len(details))


def category_accuracy(expected: Sequence[ExpectedLike], stored: Sequence[StoredMemory]) -> Ratio:
    """Matched pairs whose stored category equals the expected one / matched pairs."""
    pairs = match_memories(expected, stored)
    return Ratio(sum(stored[j].category == expected[i].category for i, j in pairs), len(pairs))


def duplicate_rate(
    expected: Sequence[ExpectedLike], stored: Sequence[StoredMemory], similarity: float = 0.9
) -> Ratio:
    """Duplicate current memories / current memories.

    Only current memories take part (superseded history is meant to resemble the present).
    Going through them in stored order, a memory is a duplicate when either
    (a) it satisfies an expected memory but the one-to-one matching gave that expected memory to
    another stored memory, or
    (b) its normalised content is near-identical to an earlier memory that is not itself a
    duplicate: `difflib.SequenceMatcher` ratio >= `similarity`.
    So n copies of one fact count n - 1.
    """
    current = [m for m in stored if m.current]
    pairs = match_memories(expected, current)
    matched_to = {j for _, j in pairs}
    matched_expected = {i for i, _ in pairs}
    texts = [normalize(m.content) for m in current]
    kept: list[str] = []
    duplicates = 0
    for j, memory in enumerate(current):
        repeats_match = j not in matched_to and any(
            satisfies(memory.content, expected[i]) for i in matched_expected
        )
        near = any(SequenceMatcher(None, texts[j], other).ratio() >= similarity for other in kept)
        if repeats_match or near:
            duplicates += 1
        else:
            kept.append(texts[j])
    return Ratio(duplicates, len(current))


def stale_fact_rate(
    conflicts: Sequence[tuple[ExpectedLike, ExpectedLike]], stored: Sequence[StoredMemory]
) -> Ratio:
    """Conflicts still stale / conflicts, for (old, new) expected memory pairs already due.

    A conflict is stale when some current stored memory satisfies the old memory without
    satisfying the new one ("prefers Vue 3" still current after the switch to React; "moved from
    Vue 3 to React" is fine).
    """
    current = [m for m in stored if m.current]
    stale = sum(
        any(satisfies(m.content, old) and not satisfies(m.content, new) for m in current)
        for old, new in conflicts
    )
    return Ratio(stale, len(conflicts))


@dataclass(frozen=True)
class Shown:
    """A statement a memory block shows: a memory or an archived message, the day it was said
    (None when the block gives none), and whether the block marks it as replaced."""

    text: str
    said: date | None = None
    replaced: bool = False


def stale_shown(shown: Sequence[Shown], old: ExpectedLike, new: ExpectedLike) -> bool:
    """Whether a block that shows the old statement of a correction leaves it looking current.

    Stale-shown when the block holds the old statement (a statement holding every old detail,
    not marked replaced) and either holds no statement of the new value (every new detail), or
    nothing tells which is later: each old statement needs a day, and a new one a later day.

    Example:
        >>> from types import SimpleNamespace as E
        >>> lisbon, porto = E(details=["Lisbon"]), E(details=["Porto"])
        >>> stale_shown([Shown("I live in Lisbon", date(2026, 1, 5))], lisbon, porto)
        True
        >>> stale_shown([Shown("I live in Lisbon", date(2026, 1, 5)),
        ...              Shown("moved to Porto", date(2026, 3, 1))], lisbon, porto)
        False
        >>> stale_shown([Shown("I live in Lisbon"), Shown("moved to Porto")], lisbon, porto)
        True
        >>> stale_shown([Shown("I live in Lisbon", replaced=True)], lisbon, porto)
        False
    """
    olds = [s for s in shown if satisfies(s.text, old) and not satisfies(s.text, new)]
    current_olds = [s for s in olds if not s.replaced]
    if not current_olds:
        return False
    news = [s.said for s in shown if satisfies(s.text, new)]
    latest = max((day for day in news if day is not None), default=None)
    if not news or latest is None:
        return True
    return any(s.said is None or s.said >= latest for s in current_olds)


def probe_recall(expected: Sequence[ExpectedLike], recalled: Sequence[str], k: int = 5) -> Ratio:
    """Expected memories satisfied by one of the top `k` recalled contents / expected memories.

    For one probe; `recalled` is ranked best first. One recalled memory may satisfy several
    expected ones (a probe asks whether the information came back, not how it was split).
    Add the ratios of all probes for recall@k over (probe, expected memory) pairs.
    """
    top = [normalize(text) for text in recalled[:k]]
    found = sum(
        any(all(normalize(d) in text for d in memory.details) for text in top)
        for memory in expected
    )
    return Ratio(found, len(expected))


def secrets_stored(forbidden: Iterable[ForbiddenLike], stored: Sequence[StoredMemory]) -> int:
    """How many `secret` entries of must_not_store occur verbatim in at least one stored memory."""
    return sum(
        any(contains(m.content, item.text) for m in stored)
        for item in forbidden
        if item.kind == "secret"
    )


def chitchat_memories(
    stored: Sequence[StoredMemory],
    chitchat_sessions: Collection[str],
    forbidden: Iterable[ForbiddenLike] = (),
) -> int:
    """Stored memories taken from a chit-chat session or holding a `chitchat` phrase (each once)."""
    phrases = [item.text for item in forbidden if item.kind == "chitchat"]
    return sum(
        m.session_id in chitchat_sessions or any(contains(m.content, p) for p in phrases)
        for m in stored
    )


def incognito_leaks(
    stored: Sequence[StoredMemory],
    incognito_sessions: Collection[str],
    forbidden: Iterable[ForbiddenLike] = (),
) -> int:
    """Stored memories taken from an incognito session or holding an `incognito` phrase (each once)."""
    phrases = [item.text for item in forbidden if item.kind == "incognito"]
    return sum(
        m.session_id in incognito_sessions or any(contains(m.content, p) for p in phrases)
        for m in stored
    )


def full_context_tokens(message_tokens: Sequence[int], system_tokens: int = 0) -> list[int]:
    """The full-context baseline: prompt tokens per user turn when the whole history is sent.

    `message_tokens` are the token counts of the dialog's messages in order (user, assistant,
    user, ...). At user turn n the baseline prompt is the system prompt, every earlier message
    and the n-th user message: `system_tokens + sum(message_tokens[: 2n - 1])`.
    """
    prompts, total = [], system_tokens
    for index, tokens in enumerate(message_tokens):
        total += tokens
        if index % 2 == 0:
            prompts.append(total)
    return prompts


def token_ratio_at(traces: Iterable[TokenTrace], turn: int = 150) -> float | None:
    """Mean, over dialogs with at least `turn` user turns, of engram's prompt tokens at that
    turn divided by the full-context baseline's; None when no dialog is that long."""
    ratios = [
        t.engram[turn - 1] / t.full_context[turn - 1]
        for t in traces
        if len(t.engram) >= turn and len(t.full_context) >= turn and t.full_context[turn - 1]
    ]
    return sum(ratios) / len(ratios) if ratios else None


def prompt_tokens_per_turn(traces: Iterable[TokenTrace]) -> tuple[float, float, float] | None:
    """(engram, full-context, thread-only) prompt tokens per user turn, averaged over every turn
    of every dialog; None when there are no turns."""
    traces = list(traces)
    engram = [n for t in traces for n in t.engram]
    baseline = [n for t in traces for n in t.full_context]
    thread = [n for t in traces for n in t.thread] or baseline
    if not engram or not baseline:
        return None
    return sum(engram) / len(engram), sum(baseline) / len(baseline), sum(thread) / len(thread)


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile: the smallest value with at least p% of the values at or below it.

    Raises:
        ValueError: `values` is empty or `p` is outside [0, 100].
    """
    if not values or not 0 <= p <= 100:
        raise ValueError(
            f"percentile needs values and 0 <= p <= 100 (got {len(values)} values, p={p})"
        )
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def latency_percentile(samples: Iterable[tuple[str, float]], p: float) -> dict[str, float]:
    """Per node, the nearest-rank `p`-th percentile of its (node, milliseconds) samples.

    Nodes without samples are absent. Use p=50 and p=95 for the report's p50/p95.
    """
    by_node: dict[str, list[float]] = defaultdict(list)
    for node, ms in samples:
        by_node[node].append(ms)
    return {node: percentile(values, p) for node, values in sorted(by_node.items())}


def model_calls_per_turn(calls: int, turns: int) -> Ratio:
    """Chat-model calls (answering, summarising, extracting) / user turns."""
    return Ratio(calls, turns)
