"""Every `engram` command's help: plain words, no typer type labels (`<bool>`, `<str>`), no
references to engram's internal documents; and help loads neither chromadb nor langgraph."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import click
import pytest
import typer
from typer.testing import CliRunner

from engram.graph.cli import app

TYPE_LABEL = re.compile(r"<[^>\s]+>|\{\w+\}")
"""typer's `<str>`, `<bool>`, `<list[str]>`, `<float range>`... and its `{ARG}` usage form."""
INTERNAL = re.compile(r"\bseed\s*\d|\bDESIGN\b|\bissue\s*#?\d|#\d+\b|\bsee DESIGN", re.IGNORECASE)


def command_paths() -> list[list[str]]:
    """The path of every command and group, the root included."""
    paths: list[list[str]] = []

    def walk(command: click.Command, path: list[str]) -> None:
        paths.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_every_command_is_walked() -> None:
    names = {" ".join(p) for p in command_paths()}
    assert {"", "memory", "memory list", "memory delete", "memory import", "eval locomo"} <= names
    assert len(names) >= 15


@pytest.mark.parametrize("path", command_paths(), ids=lambda p: " ".join(p) or "engram")
def test_help_is_plain_and_names_nothing_internal(path: list[str]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"], terminal_width=200)
    assert result.exit_code == 0, result.output
    text = result.output
    assert text.startswith("Usage: ")
    assert TYPE_LABEL.findall(text) == []
    assert INTERNAL.findall(text) == []


@pytest.mark.parametrize("args", [["--help"], ["memory", "--help"], ["memory", "add", "--help"]])
def test_help_loads_neither_chromadb_nor_langgraph(args: list[str]) -> None:
    script = (
        "import json, sys\n"
        "from engram.graph.cli import app\n"
        f"sys.argv = ['engram', *{args!r}]\n"
        "try:\n    app()\nexcept SystemExit:\n    pass\n"
        "heavy = ('chromadb', 'langgraph', 'langchain_core', 'numpy', 'openai', 'httpx')\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1]) == []


def test_memory_help_states_the_exit_codes() -> None:
    result = CliRunner().invoke(app, ["memory", "--help"], terminal_width=200)
    text = " ".join(result.output.split())
    assert "Exit codes: 0 done; 1 not found or nothing done" in text
    assert "2 bad input (" in text and "an empty --user" in text


def test_version_prints_the_installed_distribution_version() -> None:
    from importlib import metadata

    done = subprocess.run(
        [sys.executable, "-c", "from engram.graph.cli import main; main()", "--version"],
        check=False,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"engram {metadata.version('engram')}\n"


@pytest.mark.parametrize("group", [["memory"], ["eval"]])
def test_a_group_lists_its_commands_descriptions_whole(group: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from engram.graph.cli import main; main()", *group, "--help"],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80"},
    )
    assert done.returncode == 0, done.stderr
    listed = " ".join(done.stdout.split("Commands:")[1].split())
    assert "..." not in listed
    command = typer.main.get_command(app).commands[group[0]]
    for sub in command.commands.values():
        first_paragraph = " ".join(sub.help.split("\n\n")[0].split())
        assert f"{sub.name} {first_paragraph}" in listed
