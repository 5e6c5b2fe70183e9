"""`engram eval` and `engram eval locomo` through typer's CliRunner, and LoCoMo graph mode."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_engram
from langchain_core.messages import AIMessage, HumanMessage
from test_eval_runner import write_suite
from typer.testing import CliRunner

from engram.evals.locomo.engine import load_locomo
from engram.evals.locomo.graph import arun_graph, session_steps
from engram.evals.report.figures import METRIC_DEFINITIONS
from engram.graph.cli import app
from engram.stores.embeddings import LocalEmbeddings

DEV = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo-dev.json"
needs_dev = pytest.mark.skipif(not DEV.is_file(), reason=f"LoCoMo dev data not at {DEV}")
LOCOMO_KEYS = {f"{m}_at_{k}" for m in ("any", "all", "frac") for k in (1, 5, 10, 25)}

runner = CliRunner()


def invoke(*args: str):
    return runner.invoke(app, ["eval", *args], catch_exceptions=False)


def test_eval_suite_writes_reports_and_strict_sets_the_exit_code(tmp_path):
    suite = write_suite(tmp_path / "suite")
    out = tmp_path / "out"
    result = invoke("--suite", str(suite), "--out", str(out), "--strict", "--jobs", "2")
    # two short dialogs never reach turn 150: token_ratio_at_150 is n/a, which never passes
    assert result.exit_code == 1, result.output
    assert "token_ratio_at_150" in result.output and "targets missed" in result.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["mode"] == "offline"
    assert report["dialogs_count"] == 2 and report["user_turns"] == 6
    assert report["targets"]["token_ratio_at_150"] == {
        "target": "<= 0.25",
        "value": None,
        "pass": False,
    }
    assert report["targets"]["secrets_stored"]["pass"] is True
    assert report["metrics"]["model_calls_per_turn"] == 1.0
    assert [d["id"] for d in report["dialogs"]] == ["t-editor", "t-small-talk"]
    assert (out / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")

    again = invoke("--suite", str(suite / "t-editor.yaml"), "--out", str(out))
    assert again.exit_code == 0, again.output  # targets missed, but not --strict
    assert again.output.startswith("engram eval: 1 dialog, 3 user turns from ")
    assert json.loads((out / "report.json").read_text())["dialogs_count"] == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--suite", "no/such/folder"], "no such file or folder"),
        (["--memory-model", "no-such-provider:model-x"], "--memory-model"),
        (["--model", "engram_no_such_module:factory"], "--model"),
    ],
)
def test_eval_setup_errors_exit_2_with_a_clear_message(tmp_path, args, message):
    result = runner.invoke(app, ["eval", *args, "--out", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert message in result.output
    assert not (tmp_path / "out").exists()


def test_eval_rejects_a_file_as_out_folder(tmp_path):
    suite = write_suite(tmp_path / "suite")
    blocker = tmp_path / "report.txt"
    blocker.write_text("x")
    result = runner.invoke(app, ["eval", "--suite", str(suite), "--out", str(blocker)])
    assert result.exit_code == 2 and "not a folder" in result.output


@needs_dev
def test_locomo_engine_on_one_conversation(tmp_path):
    out = tmp_path / "locomo"
    result = invoke(
        "locomo",
        "--data",
        str(DEV),
        "--conversations",
        "conv-26",
        "--mode",
        "engine",
        "--out",
        str(out),
    )
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["kind"] == "locomo" and report["mode"] == "engine"
    assert report["conversations"] == ["conv-26"]
    assert LOCOMO_KEYS <= set(report["metrics"])
    assert set(report["metrics"]["by_category"]) == {
        "single-hop",
        "multi-hop",
        "temporal",
        "open-domain",
    }
    for key in LOCOMO_KEYS:
        assert 0.0 <= report["metrics"][key] <= 1.0
    assert report["metrics"]["any_at_25"] >= report["metrics"]["any_at_5"]
    assert report["targets"]["any_at_10"]["value"] == report["metrics"]["any_at_10"]


@needs_dev
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--conversations", "conv-999"], "conv-999"),
        (["--mode", "fast"], "engine, graph or qa"),
        (["--mode", "engine", "--model", "openai:gpt-4o-mini"], "for --mode qa only"),
        (["--mode", "engine", "--memory-model", "openai:gpt-4o-mini"], "only applies"),
    ],
)
def test_locomo_bad_options_exit_2(tmp_path, args, message):
    result = runner.invoke(app, ["eval", "locomo", "--data", str(DEV), *args])
    assert result.exit_code == 2
    assert message in result.output


def test_locomo_missing_data_file(tmp_path):
    result = runner.invoke(app, ["eval", "locomo", "--data", str(tmp_path / "nope.json")])
    assert result.exit_code == 2 and "LoCoMo data not found" in result.output


def test_session_steps_open_with_the_assistant_and_end_on_the_user(tmp_path):
    sample = {
        "sample_id": "s-1",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bo",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Bo", "dia_id": "D1:1", "text": "Hey Ann!"},
                {"speaker": "Ann", "dia_id": "D1:2", "text": "Hi Bo, I adopted a dog."},
                {"speaker": "Bo", "dia_id": "D1:3", "text": "Wow, what breed?"},
                {"speaker": "Ann", "dia_id": "D1:4", "text": "A beagle. Gotta go!"},
            ],
        },
        "qa": [],
    }
    path = tmp_path / "one.json"
    path.write_text(json.dumps([sample]))
    conversation = load_locomo(path)[0]
    steps = session_steps(conversation, list(conversation.turns))
    assert [[m.id for m in s.messages] for s in steps] == [["D1:1", "D1:2"], ["D1:4"]]
    assert [s.reply.id if s.reply else None for s in steps] == ["D1:3", None]
    opening, user = steps[0].messages
    assert isinstance(opening, AIMessage) and isinstance(user, HumanMessage)
    assert user.name == "Ann" and user.additional_kwargs["timestamp"] == "2023-05-08T13:56:00"


@needs_dev
async def test_locomo_graph_mode_on_two_sessions(tmp_path):
    """Graph mode on conv-26's first two sessions and the questions they answer."""
    data = json.loads(DEV.read_text(encoding="utf-8"))
    sample = next(s for s in data if s["sample_id"] == "conv-26")
    conv = sample["conversation"]
    kept = {
        key: value
        for key, value in conv.items()
        if not key.startswith("session_") or key.split("_")[1] in {"1", "2"}
    }
    in_slice = {t["dia_id"] for n in (1, 2) for t in conv[f"session_{n}"]}
    questions = [
        qa
        for qa in sample["qa"]
        if qa["category"] != 5 and qa.get("evidence") and set(qa["evidence"]) <= in_slice
    ]
    path = tmp_path / "slice.json"
    path.write_text(json.dumps([{**sample, "conversation": kept, "qa": questions}]))
    turns = []
    result = await arun_graph(
        path, embeddings=LocalEmbeddings(), on_turn=lambda: turns.append(1), ks=(1, 5)
    )
    assert len(turns) == len(in_slice)
    stats = result["conversations"][0]
    assert stats["memories"] > 0 and stats["episodes"] > 0  # compaction archived messages
    metrics = result["metrics"]
    assert set(metrics) >= {"any_at_1", "frac_at_5", "any_at_default", "by_category"}
    assert metrics["any_at_5"] >= metrics["any_at_1"]
    assert metrics["any_at_5"] > 0  # the recall path found some evidence turns
    assert result["questions"]["total"] == len(questions)


def test_eval_output_to_a_pipe_is_not_wrapped(tmp_path):
    suite = write_suite(tmp_path / "suite")
    done = run_engram("eval", "--suite", str(suite), "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("engram eval: 2 dialogs") and "mode: offline, extraction:" in first
    definition = METRIC_DEFINITIONS["extraction_precision"]
    assert any(definition in line for line in done.stdout.splitlines())


@needs_dev
def test_locomo_writes_its_reports_beside_the_suites_never_over_them(tmp_path):
    suite = run_engram("eval", "--suite", str(write_suite(tmp_path / "suite")), cwd=tmp_path)
    assert suite.returncode == 0, suite.stderr
    written = (tmp_path / "eval-out" / "report.json").read_text(encoding="utf-8")

    locomo = run_engram("eval", "locomo", "--data", str(DEV), "--conversations", "conv-26",
                        cwd=tmp_path)
    assert locomo.returncode == 0, locomo.stderr
    assert json.loads((tmp_path / "eval-out" / "locomo" / "report.json").read_text())["kind"] == (
        "locomo"
    )
    assert (tmp_path / "eval-out" / "report.json").read_text(encoding="utf-8") == written
