"""The eval runner on a two-dialog suite: real graph, embedded Chroma, SQLite, all-MiniLM."""

from __future__ import annotations

import dataclasses
from datetime import date
from pathlib import Path

import pytest
import yaml

from engram.evals.dialogs.metrics import Ratio, Shown
from engram.evals.dialogs.runner import RunSettings, arun_suite
from engram.evals.dialogs.scoring import (
    dialog_rows,
    lost_over_sessions,
    score_dialog,
    stale_shown,
    suite_metrics,
)
from engram.evals.dialogs.suite import load_suite
from engram.evals.report import SUITE_METRICS
from engram.evals.scripted import ScriptedChatModel, ScriptExhaustedError
from engram.stores.embeddings import LocalEmbeddings

EDITOR = {
    "id": "t-editor",
    "language": "en",
    "description": "An editor preference changes between sessions; a key is pasted on the way.",
    "sessions": [
        {
            "id": "s1",
            "date": "2025-03-02",
            "turns": [
                {"role": "user", "content": "I prefer Vim over Emacs for everything."},
                {"role": "assistant", "content": "Vim it is."},
                {
                    "role": "user",
                    "content": "my token is sk-proj-Zx81kQ0vT3mNa8Lp2Rt6Yw4Qe, keep it",
                },
                {"role": "assistant", "content": "I won't keep tokens."},
            ],
        },
        {
            "id": "s2",
            "date": "2025-04-08T09:00:00",
            "turns": [
                {"role": "user", "content": "I prefer Helix over Vim now."},
                {"role": "assistant", "content": "Helix, noted."},
            ],
        },
    ],
    "memories": [
        {
            "id": "vim",
            "category": "preference",
            "content": "Prefers Vim.",
            "details": ["Vim over Emacs"],
            "key": "preference.editor",
        },
        {
            "id": "helix",
            "category": "preference",
            "content": "Now prefers Helix.",
            "details": ["Helix"],
            "key": "preference.editor",
        },
    ],
    "must_not_store": [{"text": "sk-proj-Zx81kQ0vT3mNa8Lp2Rt6Yw4Qe", "kind": "secret"}],
    "probes": [
        {
            "id": "editor-1",
            "after_session": "s1",
            "query": "which editor do I like",
            "expect": ["vim"],
        },
        {
            "id": "editor-2",
            "after_session": "s2",
            "query": "which editor do I like",
            "expect": ["helix"],
        },
    ],
    "conflicts": [{"old": "vim", "new": "helix"}],
}

SMALL_TALK = {
    "id": "t-small-talk",
    "language": "en",
    "description": "Weather talk, then a private question in an incognito chat.",
    "sessions": [
        {
            "id": "s1",
            "date": "2025-05-01",
            "chitchat": True,
            "turns": [
                {"role": "user", "content": "nice weather today huh"},
                {"role": "assistant", "content": "Sounds lovely."},
            ],
        },
        {
            "id": "s2",
            "date": "2025-05-02",
            "incognito": True,
            "turns": [
                {"role": "user", "content": "I love Rust and I always use tokio for async work."},
                {"role": "assistant", "content": "Good choice."},
                {"role": "user", "content": "I prefer Postgres over MySQL too."},
                {"role": "assistant", "content": "Noted for this chat only."},
            ],
        },
    ],
    "must_not_store": [{"text": "tokio", "kind": "incognito"}],
}


def write_suite(folder: Path) -> Path:
    """The two dialogs as YAML files in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    for dialog in (EDITOR, SMALL_TALK):
        (folder / f"{dialog['id']}.yaml").write_text(yaml.safe_dump(dialog), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory):
    dialogs = load_suite(write_suite(tmp_path_factory.mktemp("suite")))
    turns: list[int] = []
    done: list[str] = []
    settings = RunSettings(embeddings=LocalEmbeddings(), concurrency=2)
    import asyncio

    result = asyncio.run(
        arun_suite(
            dialogs,
            settings,
            on_turn=lambda: turns.append(1),
            on_dialog=lambda run: done.append(run.dialog.id),
        )
    )
    return result, len(turns), done


def test_runs_come_back_in_suite_order_with_progress_for_every_turn(runs):
    result, turns, done = runs
    assert [r.dialog.id for r in result] == ["t-editor", "t-small-talk"]
    assert sorted(done) == ["t-editor", "t-small-talk"]
    assert turns == 3 + 3 == sum(r.user_turns for r in result)


def test_each_session_is_snapshotted_and_probed_after_it_ends(runs):
    editor = runs[0][0]
    assert [s.session_id for s in editor.sessions] == ["s1", "s2"]
    first, second = editor.sessions
    assert any("Vim" in m.content and m.current for m in first.stored)
    assert not any("Helix" in m.content for m in first.stored)  # s2 had not happened yet
    assert [p.probe_id for p in first.probes] == ["editor-1"]
    assert [p.probe_id for p in second.probes] == ["editor-2"]
    assert any("Helix" in text for text in second.probes[0].memories)
    # the memory records which session (thread) it came from
    assert {m.session_id for m in second.stored} == {"s1", "s2"}


def test_scores_of_the_editor_dialog(runs):
    editor = runs[0][0]
    score = score_dialog(editor)
    assert score.extraction_recall.value == 1.0
    assert score.detail_retention.value == 1.0
    assert score.secrets_stored == 0  # the write policy redacts the pasted token
    assert score.stale_fact_rate.value == 0.0  # Helix superseded Vim (same key)
    assert score.probe_recall_at_5.value == 1.0
    assert score.on_time_recall.value == 1.0
    assert score.lost_memory_rate == Ratio(0, 1)  # Vim went as its conflict says; Helix stayed
    # offline: the scripted model is the only one called, once per user turn
    assert editor.model_calls == editor.user_turns == 3


def test_each_correction_is_checked_once_with_its_old_statement_as_the_query(runs):
    editor = runs[0][0]
    first, second = editor.sessions
    assert first.stale_checks == []  # Helix is not due before s2
    [check] = second.stale_checks
    assert (check.old, check.new) == ("vim", "helix")
    assert check.query == "I prefer Vim over Emacs for everything."
    helix = [s for s in check.shown if "Helix" in s.text]
    assert helix and all(s.said == date(2025, 4, 8) for s in helix)
    assert score_dialog(editor).stale_shown_rate == Ratio(0, 1)
    # the replaced Vim memory is shown as Helix's history, never alone as current
    vim = [s for s in check.shown if "Vim" in s.text and "Helix" not in s.text]
    assert vim and all(s.replaced for s in vim if "user:" not in s.text)
    # had the block shown the old statement without the new one, it would be stale-shown
    only_vim = [dataclasses.replace(s, replaced=False) for s in vim] or [Shown("I prefer Vim")]
    alone = dataclasses.replace(second, stale_checks=[dataclasses.replace(check, shown=only_vim)])
    assert stale_shown(editor.dialog, [first, alone]) == Ratio(1, 1)


def test_a_memory_retired_though_nothing_replaced_it_is_lost(runs):
    editor = runs[0][0]
    first, second = editor.sessions
    assert lost_over_sessions(editor.dialog, editor.sessions) == Ratio(0, 1)
    # had the dialog not said Helix replaces Vim, retiring Vim would lose it
    unreplaced = editor.dialog.model_copy(update={"conflicts": []})
    assert lost_over_sessions(unreplaced, editor.sessions) == Ratio(1, 2)
    # a memory that was never current on time is extraction's miss, not a loss
    helix_gone = [
        dataclasses.replace(m, current=False) if "Helix" in m.content else m for m in second.stored
    ]
    late = dataclasses.replace(second, stored=helix_gone)
    assert lost_over_sessions(unreplaced, [first, late]) == Ratio(1, 1)


def test_incognito_and_chitchat_sessions_store_nothing(runs):
    small_talk = runs[0][1]
    score = score_dialog(small_talk)
    assert small_talk.sessions[-1].stored == []
    assert score.incognito_leaks == 0
    assert score.chitchat_memories == 0
    assert score.extraction_f1.value is None  # nothing expected, nothing stored: not measurable


def test_token_traces_and_latencies_are_recorded_per_turn(runs):
    for run in runs[0]:
        assert len(run.trace.engram) == len(run.trace.full_context) == run.user_turns
        assert all(n > 0 for n in run.trace.engram)
        # the baseline grows within a session: every earlier message is resent
        assert run.trace.full_context[1] > run.trace.full_context[0]
        # ...and across sessions: the full context resends the earlier sessions too
        assert len(run.trace.thread) == run.user_turns
        assert all(f >= t for f, t in zip(run.trace.full_context, run.trace.thread, strict=True))
        if len(run.dialog.sessions) > 1 and not run.dialog.sessions[1].incognito:
            first = len(list(run.dialog.sessions[0].exchanges()))
            assert run.trace.full_context[first] > run.trace.thread[first]
        nodes = {node for node, _ in run.latencies}
        assert {"start", "respond", "consolidate"} <= nodes
        assert all(ms >= 0 for _, ms in run.latencies)


def test_suite_metrics_have_the_report_shape(runs):
    metrics = suite_metrics(runs[0])
    assert list(metrics)[: len(SUITE_METRICS)] == list(SUITE_METRICS)
    assert metrics["token_ratio_at_150"] is None  # no dialog reaches turn 150
    assert metrics["model_calls_per_turn"] == 1.0
    assert set(metrics["latency_p50_ms"]) >= {"start", "respond", "consolidate"}
    for node, p50 in metrics["latency_p50_ms"].items():
        assert p50 <= metrics["latency_p95_ms"][node]
    rows = dialog_rows(runs[0])
    assert [row["id"] for row in rows] == ["t-editor", "t-small-talk"]
    assert rows[0]["user_turns"] == 3


def test_scripted_model_fails_clearly_when_the_script_runs_out():
    model = ScriptedChatModel(replies=["only one"])
    assert model.invoke("a").content == "only one"
    with pytest.raises(ScriptExhaustedError, match="1 replies"):
        model.invoke("b")


def test_a_memory_model_that_fails_is_counted_and_named_in_the_mode_line(tmp_path):
    """Every memory-model call fails: the offline rules do the work, the report counts the
    fallbacks, and its mode line says the model's name measured the rules."""
    import asyncio

    from fakes import FailingChatModel

    from engram.evals.commands import run_mode

    dialogs = load_suite(write_suite(tmp_path))
    settings = RunSettings(embeddings=LocalEmbeddings(), memory_model=FailingChatModel())
    failed = asyncio.run(arun_suite(dialogs, settings))
    metrics = suite_metrics(failed)
    assert metrics["memory_model_fallbacks"] >= 2  # an extraction per dialog, at least
    assert metrics["memory_model_fallbacks"] == sum(
        f["stage"] in ("extract", "summarize", "merge_decision") for r in failed for f in r.failures
    )
    assert not sum(r.memory_answers for r in failed)
    mode = run_mode("fake", failed, metrics["memory_model_fallbacks"])
    assert mode == "fake (every memory-model call failed: the offline built-ins did the work)"
    assert run_mode("fake", failed, 0) == "fake"
    assert run_mode("offline", failed, 3) == "offline"
