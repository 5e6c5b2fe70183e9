"""`engram eval locomo --mode qa` end to end with the real local model (Qwen2.5-Coder-0.5B) as
answerer and judge, on a slice of the LoCoMo dev file: conv-26's first two sessions and three
questions they answer (the slice is written to a temporary folder, never to the repository).

What is asserted is the path, not the model's skill: every answer was given and judged, the
judge's replies were read as verdicts, and the report holds what a person needs to audit them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from engram.graph.cli import app

pytestmark = pytest.mark.model

DEV = Path(__file__).resolve().parents[4] / "shared" / "data" / "locomo" / "locomo-dev.json"
QUESTIONS = 3


def write_slice(folder: Path) -> Path:
    """conv-26 cut to sessions 1-2 and the first questions of categories 1-4 they answer."""
    sample = next(
        s for s in json.loads(DEV.read_text(encoding="utf-8")) if s["sample_id"] == "conv-26"
    )
    conversation = {
        key: value
        for key, value in sample["conversation"].items()
        if not key.startswith("session_") or key.split("_")[1] in {"1", "2"}
    }
    said = {t["dia_id"] for n in (1, 2) for t in conversation[f"session_{n}"]}
    questions = [
        qa for qa in sample["qa"]
        if qa["category"] != 5 and qa.get("evidence") and set(qa["evidence"]) <= said
    ][:QUESTIONS]
    path = folder / "conv-26-slice.json"
    path.write_text(
        json.dumps([{**sample, "conversation": conversation, "qa": questions}]), encoding="utf-8"
    )
    return path


@pytest.mark.skipif(not DEV.is_file(), reason=f"LoCoMo dev data not at {DEV}")
def test_locomo_qa_with_the_local_model_as_answerer_and_judge(tmp_path, monkeypatch):
    monkeypatch.setenv("ENGRAM_LOCAL_TIMEOUT", "900")  # CI machines are shared
    out = tmp_path / "out"
    result = CliRunner().invoke(app, [
        "eval", "locomo", "--mode", "qa", "--data", str(write_slice(tmp_path)),
        "--model", "local:0.5b", "--judge", "local:0.5b", "--baselines", "no-memory",
        "--out", str(out),
    ], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))

    assert report["models"] == {
        "answer": "local:0.5b", "judge": "local:0.5b", "memory": "offline built-ins"
    }
    assert not report["failures"]
    assert report["questions"]["total"] == QUESTIONS and report["questions"]["unanswered"] == 0
    assert list(report["systems"]) == ["engram", "no-memory"]
    for figures in report["systems"].values():
        assert figures["answers"] == figures["judged"] == QUESTIONS
        assert figures["j_ci95"][0] <= figures["j"] <= figures["j_ci95"][1]
        assert figures["prompt_tokens"] > 0 and figures["answer_latency_p95_ms"] > 0
    assert report["systems"]["engram"]["prompt_tokens"] > report["systems"]["no-memory"]["prompt_tokens"]
    verdicts = [a for row in report["answers"] for a in row["systems"].values()]
    assert len(verdicts) == 2 * QUESTIONS
    assert all(a["answer"] and a["judge_reply"] for a in verdicts)
    # the judge's replies were read as CORRECT or WRONG (a reply saying neither is None)
    assert all(a["correct"] is not None for a in verdicts), [a["judge_reply"] for a in verdicts]
    assert all("<user_memory>" in row["systems"]["engram"]["context"] for row in report["answers"])
