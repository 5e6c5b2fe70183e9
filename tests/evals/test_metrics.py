"""Each metric of engram.evals.dialogs.metrics on hand-made cases whose answers are worked out by hand."""

from __future__ import annotations

from datetime import date

import pytest

from engram.evals.dialogs.metrics import (
    Ratio,
    Shown,
    StoredMemory,
    TokenTrace,
    category_accuracy,
    chitchat_memories,
    contains,
    detail_retention,
    duplicate_rate,
    extraction_f1,
    extraction_precision,
    extraction_recall,
    full_context_tokens,
    incognito_leaks,
    latency_percentile,
    match_memories,
    model_calls_per_turn,
    percentile,
    probe_recall,
    prompt_tokens_per_turn,
    secrets_stored,
    stale_fact_rate,
    stale_shown,
    token_ratio_at,
)
from engram.evals.dialogs.suite import ExpectedMemory, ForbiddenText


def exp(memory_id: str, category: str, *details: str) -> ExpectedMemory:
    return ExpectedMemory(
        id=memory_id, category=category, content=" ".join(details), details=list(details)
    )


def mem(
    content: str, category: str = "fact", current: bool = True, session: str | None = None
) -> StoredMemory:
    return StoredMemory(content=content, category=category, current=current, session_id=session)


TS = exp("ts", "preference", "TypeScript", "strict")
DRIZZLE = exp("orm", "project", "Drizzle", "SQLite")
PROXY = exp("proxy", "lesson", "proxy-env", "docker")
VUE = exp("vue", "preference", "Vue 3")
REACT = exp("react", "preference", "React")


def test_verbatim_is_case_width_and_whitespace_insensitive():
    assert contains("User uses NODE20 on the box", "node 20")
    assert contains("项目用Nuxt 4 + SQLite", "用 Nuxt 4")
    assert contains("ＡＰＩ port 8080", "api port 8080")  # full-width folds to ASCII under NFKC
    assert not contains("uses Node 18", "Node 20")


def test_extraction_scores_on_a_mixed_store():
    stored = [
        mem("Prefers TypeScript in strict mode", "preference"),
        mem("Project uses Drizzle ORM over SQLite", "fact"),
        mem("Had pizza for lunch", "fact"),
    ]
    expected = [TS, DRIZZLE, PROXY]
    assert extraction_precision(expected, stored) == Ratio(2, 3)
    assert extraction_recall(expected, stored) == Ratio(2, 3)
    assert extraction_f1(expected, stored).value == pytest.approx(2 / 3)


def test_a_memory_missing_one_detail_does_not_match():
    stored = [mem("Project uses Drizzle ORM", "project")]
    assert extraction_recall([DRIZZLE], stored) == Ratio(0, 1)
    assert detail_retention([DRIZZLE], stored) == Ratio(1, 2)


def test_matching_is_one_to_one_and_maximal():
    # "TypeScript strict ... Drizzle SQLite" satisfies both; the second memory only TS.
    both = mem("TypeScript strict everywhere; Drizzle over SQLite", "project")
    ts_only = mem("likes TypeScript strict mode", "preference")
    pairs = match_memories([DRIZZLE, TS], [ts_only, both])
    assert pairs == [(0, 1), (1, 0)]
    # Reversed order of expected: TS tries ts_only (same category) first, DRIZZLE gets `both`.
    assert match_memories([TS, DRIZZLE], [both, ts_only]) == [(0, 1), (1, 0)]
    # One stored memory cannot serve two expected ones.
    assert extraction_recall([TS, DRIZZLE], [both]) == Ratio(1, 2)


def test_matching_augments_when_the_first_choice_is_taken():
    a = exp("a", "fact", "alpha")
    b = exp("b", "fact", "beta")
    alpha_beta = mem("alpha beta")
    alpha = mem("alpha")
    # a would take alpha_beta first (stored order), leaving b nothing, unless augmented.
    assert match_memories([a, b], [alpha_beta, alpha]) == [(0, 1), (1, 0)]


def test_matching_prefers_the_same_category():
    stored = [mem("Prefers Vue 3", "fact"), mem("Prefers Vue 3 for frontends", "preference")]
    assert match_memories([VUE], stored) == [(0, 1)]
    assert category_accuracy([VUE], stored) == Ratio(1, 1)


def test_category_accuracy_counts_only_matched_pairs():
    stored = [
        mem("TypeScript strict", "fact"),
        mem("Drizzle + SQLite", "project"),
        mem("unrelated"),
    ]
    assert category_accuracy([TS, DRIZZLE, PROXY], stored) == Ratio(1, 2)


def test_superseded_memories_still_count_as_extracted():
    stored = [
        mem("Prefers Vue 3", "preference", current=False),
        mem("Now prefers React", "preference"),
    ]
    assert extraction_recall([VUE, REACT], stored) == Ratio(2, 2)
    assert extraction_precision([VUE, REACT], stored) == Ratio(2, 2)


def test_empty_cases_are_not_measurable_rather_than_perfect():
    assert extraction_precision([TS], []).value is None
    assert extraction_recall([], [mem("x")]).value is None
    assert extraction_f1([], []).value is None
    assert extraction_f1([TS], []).value == 0.0  # memories were expected, nothing stored
    assert extraction_f1([], [mem("x")]).value == 0.0  # nothing expected, junk stored
    assert detail_retention([], [mem("x")]).value is None
    assert category_accuracy([TS], [mem("nothing")]).value is None
    assert duplicate_rate([TS], []).value is None
    assert stale_fact_rate([], [mem("x")]).value is None
    assert probe_recall([], ["x"]).value is None
    assert model_calls_per_turn(3, 0).value is None
    assert token_ratio_at([], 150) is None
    assert prompt_tokens_per_turn([]) is None
    assert latency_percentile([], 95) == {}


def test_ratios_add_up_to_a_micro_average():
    per_dialog = [
        extraction_recall([TS], [mem("TypeScript strict")]),
        extraction_recall([TS, PROXY, DRIZZLE], []),
    ]
    total = sum(per_dialog, Ratio())
    assert total == Ratio(1, 4)
    assert total.value == 0.25


def test_detail_retention_counts_each_detail_anywhere():
    stored = [
        mem("uses docker a lot"),
        mem("TypeScript everywhere"),
        mem("needs proxy-env for builds"),
    ]
    # TS: TypeScript yes, strict no; PROXY: proxy-env yes, docker yes (other memory).
    assert detail_retention([TS, PROXY], stored) == Ratio(3, 4)


def test_duplicate_rate_flags_extra_copies_of_a_matched_memory():
    stored = [
        mem("Prefers TypeScript strict mode", "preference"),
        mem("The user really likes TypeScript with strict on", "preference"),  # satisfies TS again
        mem("Drizzle ORM with SQLite", "project"),
        mem("Prefers TypeScript strict mode.", "preference", current=False),  # history: ignored
    ]
    assert duplicate_rate([TS, DRIZZLE], stored) == Ratio(1, 3)


def test_duplicate_rate_flags_near_identical_unexpected_memories():
    stored = [
        mem("Works late on Fridays"),
        mem("works late on fridays!"),
        mem("Has a cat named Miso"),
    ]
    assert duplicate_rate([], stored) == Ratio(1, 3)


def test_duplicate_rate_counts_n_copies_as_n_minus_one():
    # The first copy has the wrong category, so the matching picks the second: still one duplicate.
    stored = [
        mem("Prefers Vue 3", "fact"),
        mem("Prefers Vue 3", "preference"),
        mem("Prefers Vue 3", "fact"),
    ]
    assert duplicate_rate([VUE], stored) == Ratio(2, 3)


def test_stale_fact_rate():
    still_vue = [mem("Prefers Vue 3", "preference"), mem("Now prefers React", "preference")]
    superseded = [
        mem("Prefers Vue 3", "preference", current=False),
        mem("Now prefers React", "preference"),
    ]
    merged = [mem("Moved from Vue 3 to React", "preference")]
    tabs = exp("tabs", "preference", "tabs")
    spaces = exp("spaces", "preference", "spaces")
    assert stale_fact_rate([(VUE, REACT)], still_vue) == Ratio(1, 1)
    assert stale_fact_rate([(VUE, REACT)], superseded) == Ratio(0, 1)
    assert stale_fact_rate([(VUE, REACT)], merged) == Ratio(0, 1)
    assert stale_fact_rate(
        [(VUE, REACT), (tabs, spaces)], still_vue + [mem("indent with tabs")]
    ) == Ratio(2, 2)


def test_probe_recall_looks_at_the_top_k_only():
    recalled = ["Likes hiking", "Uses TypeScript in strict mode", "Drizzle + SQLite in the project"]
    assert probe_recall([TS, DRIZZLE], recalled, k=2) == Ratio(1, 2)
    assert probe_recall([TS, DRIZZLE], recalled, k=3) == Ratio(2, 2)
    # One recalled memory may cover two expected ones.
    assert probe_recall([TS, DRIZZLE], ["TypeScript strict, Drizzle over SQLite"], k=5) == Ratio(
        2, 2
    )
    assert probe_recall([PROXY], [], k=5) == Ratio(0, 1)


def test_secrets_stored_counts_secrets_not_memories():
    forbidden = [
        ForbiddenText(text="sk-proj-AbC123xyz", kind="secret"),
        ForbiddenText(text="hunter2!", kind="secret"),
        ForbiddenText(text="4111 1111 1111 1111", kind="secret"),
        ForbiddenText(text="lovely weather", kind="chitchat"),
    ]
    stored = [
        mem("OpenAI key is SK-PROJ-abc123XYZ"),
        mem("key again: sk-proj-AbC123xyz"),
        mem("card 4111111111111111"),  # whitespace-insensitive
        mem("lovely weather today"),  # chit-chat, not a secret
    ]
    assert secrets_stored(forbidden, stored) == 2
    assert secrets_stored(forbidden, []) == 0
    assert secrets_stored([], stored) == 0


def test_chitchat_and_incognito_memories():
    forbidden = [
        ForbiddenText(text="lovely weather", kind="chitchat"),
        ForbiddenText(text="divorce lawyer", kind="incognito"),
    ]
    stored = [
        mem("Thinks it's lovely weather", session="s1"),
        mem("Has a cat", session="s2"),
        mem("Lovely weather in the chit-chat session", session="s2"),  # counted once
        mem("Looking for a divorce lawyer", session="s1"),
        mem("Prefers tabs", session="s3"),
    ]
    assert chitchat_memories(stored, {"s2"}, forbidden) == 3
    assert chitchat_memories(stored, set()) == 0
    assert incognito_leaks(stored, {"s3"}, forbidden) == 2
    assert incognito_leaks([], {"s3"}, forbidden) == 0


def test_full_context_baseline_accumulates_history():
    # user 10, assistant 20, user 5, assistant 7, user 3 -> turns at 10, 35, 45 (+ system 100)
    assert full_context_tokens([10, 20, 5, 7, 3], system_tokens=100) == [110, 135, 145]
    assert full_context_tokens([]) == []


def test_token_ratio_at_turn():
    short = TokenTrace(engram=[10] * 3, full_context=[10, 20, 30])
    long_a = TokenTrace(engram=[5, 10, 20], full_context=[10, 20, 80])
    long_b = TokenTrace(engram=[5, 10, 20, 30], full_context=[10, 20, 40, 90])
    assert token_ratio_at([long_a, long_b], turn=3) == pytest.approx((0.25 + 0.5) / 2)
    assert token_ratio_at([short, long_b], turn=4) == pytest.approx(30 / 90)
    assert token_ratio_at([short], turn=150) is None
    assert prompt_tokens_per_turn([long_a, short]) == (
        pytest.approx(65 / 6),
        pytest.approx(170 / 6),
        pytest.approx(170 / 6),  # no thread-only baseline given: the full context's
    )
    two_sessions = TokenTrace(engram=[5, 6], full_context=[10, 50], thread=[10, 12])
    assert prompt_tokens_per_turn([two_sessions]) == (5.5, 30.0, 11.0)


def test_nearest_rank_percentile():
    values = [15, 20, 35, 40, 50]
    assert percentile(values, 50) == 35
    assert percentile(values, 95) == 50
    assert percentile(values, 0) == 15
    assert percentile([7], 95) == 7
    assert percentile(list(range(1, 101)), 95) == 95
    with pytest.raises(ValueError, match="percentile needs values"):
        percentile([], 50)
    with pytest.raises(ValueError, match="0 <= p <= 100"):
        percentile([1], 101)


def test_latency_percentiles_per_node():
    samples = [
        ("start", 10.0),
        ("respond", 100.0),
        ("start", 30.0),
        ("start", 20.0),
        ("respond", 300.0),
    ]
    assert latency_percentile(samples, 50) == {"respond": 100.0, "start": 20.0}
    assert latency_percentile(samples, 95) == {"respond": 300.0, "start": 30.0}


def test_model_calls_per_turn():
    assert model_calls_per_turn(3, 2).value == 1.5
    assert (model_calls_per_turn(1, 1) + model_calls_per_turn(0, 3)).value == 0.25


def test_stored_memory_from_a_store_value():
    value = {"content": "Uses pnpm", "category": "preference", "valid_until": None}
    assert StoredMemory.from_value(value, "s1") == StoredMemory(
        "Uses pnpm", "preference", True, "s1"
    )
    assert not StoredMemory.from_value({**value, "forgotten": True}).current
    assert not StoredMemory.from_value(
        {**value, "valid_until": "2025-05-01T00:00:00+00:00"}
    ).current


def test_stale_shown_needs_the_new_value_shown_later_or_the_old_marked_replaced():
    old, new = exp("lisbon", "fact", "Lisbon"), exp("porto", "fact", "Porto")
    jan, mar = date(2026, 1, 5), date(2026, 3, 1)
    assert not stale_shown([], old, new)  # nothing of the old: nothing stale
    assert not stale_shown([Shown("Porto now", mar)], old, new)
    assert stale_shown([Shown("lives in Lisbon", jan)], old, new)
    assert not stale_shown([Shown("lives in Lisbon", jan), Shown("moved to Porto", mar)], old, new)
    # the new value said no later than the old, or without a day: which is current is unknown
    assert stale_shown([Shown("lives in Lisbon", mar), Shown("moved to Porto", mar)], old, new)
    assert stale_shown([Shown("lives in Lisbon", jan), Shown("moved to Porto")], old, new)
    assert not stale_shown([Shown("lives in Lisbon", replaced=True)], old, new)
    # a statement naming both ("moved from Lisbon to Porto") is the new one, not the old
    assert not stale_shown([Shown("moved from Lisbon to Porto", mar)], old, new)
