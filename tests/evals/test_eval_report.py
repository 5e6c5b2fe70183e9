"""Eval reports: targets (n/a never passes), report.json's shape, the self-contained HTML page."""

from __future__ import annotations

import json
import re

import pytest
from fakes import NGramEmbeddings

from engram.evals.report import (
    COUNT_METRICS,
    LOCOMO_TARGETS,
    SUITE_METRICS,
    SUITE_TARGETS,
    Target,
    all_pass,
    build_report,
    check_targets,
    write_report,
)
from engram.stores.embeddings import LocalEmbeddings


def suite_metrics(**overrides):
    metrics = {
        "extraction_precision": 0.9,
        "extraction_recall": 0.8,
        "extraction_f1": 0.85,
        "detail_retention": 0.75,
        "category_accuracy": 1.0,
        "duplicate_rate": 0.0,
        "stale_fact_rate": None,
        "stale_shown_rate": None,
        "lost_memory_rate": None,
        "probe_recall_at_5": 0.95,
        "secrets_stored": 0,
        "chitchat_memories": 2,
        "token_ratio_at_150": 0.2,
        "model_calls_per_turn": 1.0,
        "model_tokens_per_turn": 0.0,
        "memory_model_fallbacks": 0,
        "ungrounded_memories": 0,
        "recall_timeouts": 0,
        "latency_p50_ms": {"start": 12.5, "respond": 1.0},
        "latency_p95_ms": {"start": 40.0, "respond": 3.0},
    }
    return {**metrics, **overrides}


@pytest.mark.parametrize(
    ("target", "value", "passes"),
    [
        (Target("f1", ">=", 0.8), 0.8, True),
        (Target("f1", ">=", 0.8), 0.79, False),
        (Target("secrets", "<=", 0), 0, True),
        (Target("secrets", "<=", 0), 1, False),
        (Target("f1", ">=", 0.8), None, False),
        (Target("ratio", "<=", 0.25), None, False),
    ],
)
def test_target_passes_and_na_never_passes(target, value, passes):
    assert target.passes(value) is passes


def test_check_targets_gives_target_value_and_pass():
    checked = check_targets(suite_metrics(), SUITE_TARGETS)
    assert checked["extraction_f1"] == {"target": ">= 0.8", "value": 0.85, "pass": True}
    assert checked["detail_retention"]["pass"] is False
    assert checked["chitchat_memories"] == {"target": "<= 0", "value": 2, "pass": False}
    missing = check_targets({}, LOCOMO_TARGETS)
    assert missing == {
        "any_at_10": {"target": ">= 0.8", "value": None, "pass": False},
        "frac_at_10": {"target": ">= 0.7", "value": None, "pass": False},
    }


def test_build_report_shape():
    report = build_report(
        kind="suite",
        mode="offline",
        metrics=suite_metrics(),
        targets=SUITE_TARGETS,
        embeddings=LocalEmbeddings(),
        suite="evals/suites",
    )
    assert report["mode"] == "offline"
    assert set(SUITE_METRICS) <= set(report["metrics"])
    assert set(report["targets"]) == {t.metric for t in SUITE_TARGETS}
    assert report["embedder"]["class"] == "LocalEmbeddings"
    assert report["embedder"]["dims"] == 384
    assert "all-MiniLM-L6-v2" in report["embedder"]["model"]
    assert {"python", "engram", "langgraph", "chromadb"} <= set(report["versions"])
    assert report["suite"] == "evals/suites"
    assert not all_pass(report)


def test_write_report_json_and_self_contained_html(tmp_path):
    report = build_report(
        kind="suite",
        mode="offline",
        metrics=suite_metrics(),
        targets=SUITE_TARGETS,
        embeddings=NGramEmbeddings(),
    )
    json_path, html_path = write_report(report, tmp_path / "out")
    assert json.loads(json_path.read_text(encoding="utf-8")) == report
    page = html_path.read_text(encoding="utf-8")
    # self-contained: inline CSS, no scripts, no external references
    assert "<style>" in page
    assert not re.search(r"<script|<link|<img|src=|@import|url\(", page)
    assert "http://" not in page and "https://" not in page
    # a bar per scalar share (a count gets none), pass/fail per target, mode, embedder, versions
    scalar = [
        name for name, value in report["metrics"].items()
        if not isinstance(value, dict) and name not in COUNT_METRICS
    ]
    metric_rows = page.split("<h2>Metrics</h2>")[1].split("<h2>")[0]
    assert metric_rows.count('class="bar"') == len(scalar)
    assert metric_rows.count(">pass</span>") == 4
    assert metric_rows.count(">fail</span>") == 2
    assert "n/a" in metric_rows  # stale_fact_rate is None
    assert "offline" in page and "NGramEmbeddings" in page and "langgraph" in page
    assert page.count("<tr><td>start</td>") == 2  # p50 and p95 latency tables


def test_write_report_refuses_a_file_as_folder(tmp_path):
    blocker = tmp_path / "eval-out"
    blocker.write_text("not a folder")
    report = build_report(
        kind="locomo",
        mode="engine",
        metrics={"any_at_10": 0.8, "frac_at_10": 0.7, "by_category": {"temporal": {"any_at_10": 0.9}}},
        targets=LOCOMO_TARGETS,
        embeddings=NGramEmbeddings(),
    )
    with pytest.raises(NotADirectoryError, match="not a folder"):
        write_report(report, blocker)
    _, html_path = write_report(report, tmp_path / "ok")
    assert "temporal" in html_path.read_text(encoding="utf-8")
    assert all_pass(report)


def test_every_table_fits_the_page_width(tmp_path):
    # the dialog table's long column names ran past the page's right edge
    dialog = {"id": "en-card-number-conference", "user_turns": 7, "extraction_f1": 0.75}
    report = build_report(
        kind="suite",
        mode="offline",
        metrics=suite_metrics(by_category={"fact": {"recall": 0.5}}),
        targets=SUITE_TARGETS,
        embeddings=NGramEmbeddings(),
        dialogs=[dialog],
    )
    _, html_path = write_report(report, tmp_path / "out")
    page = html_path.read_text(encoding="utf-8")
    css = page.split("<style>")[1].split("</style>")[0]
    assert re.search(r"\.table\{[^}]*overflow-x:auto", css)  # a wide table scrolls in its box
    assert page.count("<table") == page.count('<div class="table"><table') == 5
    dialogs = page.split("<h2>Dialogs</h2>")[1].split("<h2>")[0]
    assert "<th>token_<wbr>ratio_<wbr>at_<wbr>150</th>" in dialogs  # a long name can wrap
