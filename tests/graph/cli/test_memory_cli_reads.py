"""`engram memory` reads that cannot answer are errors that say so, never an empty answer or an
"unknown user": "nothing is stored for user X" only when the reads succeeded and found nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from engram.graph.cli import app
from engram.stores.chroma import process_lock
from engram.stores.memory import users

runner = CliRunner()


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    for name in ("ENGRAM_CHROMA_URL", "ENGRAM_USER", "ENGRAM_MEMORY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def cli(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, ["memory", *args])
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return json.loads(result.stdout) if "--json" in args and code == 0 else result


def said(result: Any) -> str:
    """The error printed, its lines joined (the console wraps them)."""
    return " ".join(result.stderr.split())


def test_a_read_that_times_out_on_the_folder_lock_is_an_error(data, monkeypatch):
    cli("add", "--user", "bob", "Bob keeps bees on the roof")

    def held_elsewhere(self: Any) -> None:
        raise TimeoutError("another process has held the engram data folder for 300 s")

    monkeypatch.setattr(process_lock._SharedFolder, "_acquire", held_elsewhere)
    result = cli("list", "--user", "bob", "--json", code=1)
    assert "could not use the engram data (TimeoutError" in said(result)
    assert "nothing is stored" not in said(result) and result.stdout == ""


def test_memories_read_as_none_while_listed_are_read_again(data, monkeypatch):
    bees = cli("add", "--user", "bob", "Bob keeps bees on the roof", "--json")["memory"]
    real = users.readable_memories_steps
    torn = iter([True])  # the first read answers nothing, as a read of a torn file would

    def first_read_torn(user_id: str) -> Any:
        found = yield from real(user_id)
        return ([], []) if next(torn, False) else found

    monkeypatch.setattr(users, "readable_memories_steps", first_read_torn)
    assert [m["id"] for m in cli("list", "--user", "bob", "--json")] == [bees["id"]]


def test_memories_that_keep_reading_as_none_while_listed_are_an_error(data, monkeypatch):
    cli("add", "--user", "bob", "Bob keeps bees on the roof")
    real = users.readable_memories_steps

    def always_torn(user_id: str) -> Any:
        yield from real(user_id)
        return [], []

    monkeypatch.setattr(users, "readable_memories_steps", always_torn)
    for command in (["list"], ["export"]):
        result = cli(*command, "--user", "bob", code=1)
        assert "the memories of 'bob'" in said(result) and "could not be read" in said(result)
        assert "nothing is stored" not in said(result)


def test_an_unknown_user_is_still_told_so(data):
    cli("add", "--user", "bob", "Bob keeps bees on the roof")
    result = cli("list", "--user", "carol", code=1)
    assert "nothing is stored for user 'carol'" in said(result)
    assert "users with memories: bob" in said(result)
