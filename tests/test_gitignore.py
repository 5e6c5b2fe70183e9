"""What the commands write in the folder they run in is ignored by git: the default data folder,
the eval reports (`engram eval`, `engram eval locomo`, `engram eval longmemeval`) and the
output folders the docs' examples pass to `--out`."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from engram.graph.cli.eval import DEFAULT_OUT, LOCOMO_OUT, LONGMEMEVAL_OUT

ROOT = Path(__file__).resolve().parents[1]
EVAL_OUT = re.compile(r"^engram eval\b.*?--out (\S+)", re.MULTILINE)
"""An `engram eval` command in the docs (its first line) and the folder it passes to `--out`."""


def documented_out_folders() -> set[str]:
    """The `--out` folders of the `engram eval` examples in the docs, continued lines joined."""
    found: set[str] = set()
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = page.read_text(encoding="utf-8").replace("\\\n", " ")
        found |= {m.group(1) for m in EVAL_OUT.finditer(text) if not m.group(1).startswith("<")}
    return found


def written_by_default() -> set[str]:
    return {str(DEFAULT_OUT), str(LOCOMO_OUT), str(LONGMEMEVAL_OUT), ".engram"}


@pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout"
)
@pytest.mark.parametrize("folder", sorted(written_by_default() | documented_out_folders()))
def test_a_folder_the_commands_write_is_ignored(folder: str) -> None:
    done = subprocess.run(
        ["git", "check-ignore", "--no-index", "-q", f"{folder}/report.json"],
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, f"{folder}/ is not in .gitignore"


def test_the_docs_examples_are_found() -> None:
    assert "qa-out" in documented_out_folders()
