"""`engram memory export --learnings` and `engram memory import learnings.md`, as the docs show
them, on an embedded data folder."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from engram.graph.cli import app as cli_app
from engram.stores.chroma.store import ChromaStore, default_index
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.procedures import Procedure
from engram.stores.memory.types import MemoryCandidate


def _procedure(task: str, *calls: str) -> MemoryCandidate:
    p = Procedure(task, calls)
    return MemoryCandidate(content=p.content, category="skill", key=p.key,
                           structured_data=p.data())


def test_learnings_are_exported_edited_and_imported(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ENGRAM_CHROMA_URL", raising=False)
    with ChromaStore(path=tmp_path / "chroma", index=default_index()) as store:
        ltm = LongTermMemory(store)
        ltm.upsert("alice", [MemoryCandidate(content="I prefer dark mode", category="preference")])
        ltm.upsert("alice", [_procedure("Fix the cart outage now", "fetch_logs()", "restart()")],
                   message_ids=["a"])
        ltm.upsert("alice", [_procedure("Fix the cart outage", "fetch_logs()", "restart()")],
                   message_ids=["b"])
    runner = CliRunner()

    def cli(*args: str, code: int = 0):
        result = runner.invoke(cli_app, ["memory", *args])
        assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
        return result

    file = tmp_path / "learnings.md"
    cli("export", "--user", "alice", "--learnings", "--out", str(file))
    text = file.read_text()
    assert "## Fix the cart outage <!-- id:" in text and "Worked 2 times." in text
    assert "dark mode" not in text
    assert "nothing to change" in cli("import", str(file), "--user", "alice").stdout

    file.write_text(text.replace("2. restart()", "2. restart()\n3. check_health()")
                    + "\n## Rotate the logs\n\n1. compress_logs(days=7)\n2. upload()\n")
    plan = json.loads(cli("import", str(file), "--user", "alice", "--dry-run", "--json").stdout)
    assert sorted(c["action"] for c in plan["plan"]["changes"]) == ["add", "edit"]
    cli("import", str(file), "--user", "alice", "--yes")

    listed = json.loads(cli("list", "--user", "alice", "--category", "skill", "--json").stdout)
    contents = sorted(m["content"] for m in listed)
    assert contents == [
        ("Steps that worked for: Fix the cart outage\n1. fetch_logs()\n2. restart()\n"
        "3. check_health()"),
        "Steps that worked for: Rotate the logs\n1. compress_logs(days=7)\n2. upload()",
    ]
    edited = next(m for m in listed if "cart" in m["content"])
    assert edited["structured_data"]["uses"] == 2
    assert [s["tool"] for s in edited["structured_data"]["workflow"]] == [
        "fetch_logs", "restart", "check_health"
    ]
    # the preference is memory.md's, and a learnings.md is refused as JSON
    assert "dark mode" in cli("list", "--user", "alice").stdout
    assert "--learnings writes Markdown" in cli(
        "export", "--user", "alice", "--learnings", "--json", code=2
    ).stderr
