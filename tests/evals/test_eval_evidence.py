"""The report's evidence per dialog: missed, unmatched, failed probes; definitions; no count bars."""

from __future__ import annotations

import yaml
from test_eval_runner import EDITOR

from engram.evals.dialogs.evidence import dialog_evidence
from engram.evals.dialogs.metrics import StoredMemory
from engram.evals.dialogs.runner import DialogRun, ProbeRun, SessionRun
from engram.evals.dialogs.suite import load_dialog
from engram.evals.report import METRIC_DEFINITIONS, SUITE_METRICS
from engram.evals.report.html import render_html


def _run(tmp_path) -> DialogRun:
    path = tmp_path / "editor.yaml"
    path.write_text(yaml.safe_dump(EDITOR), encoding="utf-8")
    run = DialogRun(load_dialog(path))
    vim = StoredMemory("I prefer Vim over Emacs for everything.", "preference", True, "s1")
    noise = StoredMemory("The user said hello", "fact", True, "s1")
    run.sessions = [
        SessionRun("s1", [vim], [ProbeRun("editor-1", [vim.content], [])]),
        SessionRun("s2", [vim, noise], [ProbeRun("editor-2", [vim.content, noise.content], [])]),
    ]
    return run


def test_evidence_names_the_missed_the_unmatched_and_the_failed_probes(tmp_path):
    evidence = dialog_evidence(_run(tmp_path))
    assert [e["id"] for e in evidence["missed"]] == ["helix"]
    assert evidence["missed"][0]["details"] == ["Helix"]
    assert [s["content"] for s in evidence["unmatched"]] == ["The user said hello"]
    [probe] = evidence["failed_probes"]
    assert probe["probe"] == "editor-2" and probe["missing"] == ["helix"]
    assert probe["recalled"] == ["I prefer Vim over Emacs for everything.", "The user said hello"]


def test_the_html_shows_evidence_definitions_and_no_bar_for_counts(tmp_path):
    run = _run(tmp_path)
    report = {
        "kind": "suite",
        "mode": "offline",
        "metrics": {"extraction_f1": 0.5, "stored_memories": 11},
        "targets": {},
        "dialogs": [{"id": "t-editor", "evidence": dialog_evidence(run)}],
    }
    html = render_html(report)
    assert "The user said hello" in html and "missing: helix" in html
    assert "1 missed, 1 unmatched, 1 failed probes" in html
    assert METRIC_DEFINITIONS["extraction_f1"] in html
    stored_row = html[html.index("<td>stored_memories"):]
    stored_row = stored_row[: stored_row.index("</tr>")]
    assert 'class="bar"' not in stored_row  # a count is a number, not a full bar
    f1_row = html[html.index("<td>extraction_f1"):]
    assert 'style="width:50.0%"' in f1_row[: f1_row.index("</tr>")]


def test_every_suite_metric_has_a_definition():
    assert set(SUITE_METRICS) <= set(METRIC_DEFINITIONS)
