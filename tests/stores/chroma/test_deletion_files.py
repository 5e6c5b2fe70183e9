"""What a person deletes is gone from every file of the data folder: the tests read raw bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import files_holding
from fakes import NGramEmbeddings
from typer.testing import CliRunner

from engram.graph.cli import app
from engram.stores.chroma.store import ChromaStore
from engram.stores.lexical.index import LexicalDocument, LexicalIndex

runner = CliRunner()


def cli(*args: str, code: int = 0) -> Any:
    result = runner.invoke(app, ["memory", *args])
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return json.loads(result.stdout) if "--json" in args and code == 0 else result


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    for name in ("ENGRAM_CHROMA_URL", "ENGRAM_USER", "ENGRAM_MEMORY_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def test_deleting_one_memory_leaves_its_text_in_no_file(data):
    gone = cli("add", "--user", "alice", "Alice keeps a pet iguana called Wobbleton", "--json")
    cli("add", "--user", "alice", "Alice studied violin with Krzanowski")
    cli("add", "--user", "bob", "Bob's parrot is called Fandangolo")
    assert files_holding(data, "Wobbleton")

    cli("delete", gone["memory"]["id"], "--user", "alice", "--yes")

    assert files_holding(data, "Wobbleton") == []
    assert files_holding(data, "Krzanowski") and files_holding(data, "Fandangolo")
    assert [m["content"] for m in cli("list", "--user", "alice", "--json")] == [
        "Alice studied violin with Krzanowski"
    ]


def test_a_purged_folder_still_works_in_a_new_process(data):
    for word in ("Wobbleton", "Quimby", "Zephyrine"):
        cli("add", "--user", "alice", f"Alice has a friend called {word}")
    cli("add", "--user", "bob", "Bob's parrot is called Fandangolo")
    cli("delete", "--all", "--user", "alice", "--yes")
    cli("add", "--user", "bob", "Bob plays the theremin")
    assert [files_holding(data, w) for w in ("Wobbleton", "Quimby", "Zephyrine")] == [[], [], []]

    # Chroma replays its log when a process opens the folder: the emptied rows must not matter
    script = (
        "import json; from engram.stores.chroma.store import ChromaStore, default_index\n"
        "from engram.stores.memory.long_term import LongTermMemory\n"
        "store = ChromaStore(path='chroma', index=default_index())\n"
        "ltm = LongTermMemory(store)\n"
        "print(json.dumps([[s.memory.content for s in ltm.search(u, 'parrot theremin friend')]"
        " for u in ('bob', 'alice')]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=data,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    bob, alice = json.loads(done.stdout.strip().splitlines()[-1])
    assert sorted(bob) == ["Bob plays the theremin", "Bob's parrot is called Fandangolo"]
    assert alice == []


def test_the_lexical_index_merges_away_deleted_terms(tmp_path):
    index = LexicalIndex(tmp_path)
    index.upsert(
        "memories/alice",
        [
            LexicalDocument("a", "Alice keeps a pet iguana called Wobbleton"),
            LexicalDocument("b", "Alice studied violin with Krzanowski"),
        ],
    )
    index.delete("memories/alice", ["a"])
    index.scrub()
    assert files_holding(tmp_path, "wobbleton") == []
    assert files_holding(tmp_path, "krzanowski")
    assert [doc_id for doc_id, _ in index.search("memories/alice", "violin")] == ["b"]
    index.close()


def test_purging_against_a_chroma_server_scrubs_what_is_local(chroma_server, tmp_path, monkeypatch):
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    store = ChromaStore.from_url(chroma_server, collection="purge-remote", index=index)
    store.put(("memories", "alice"), "m1", {"content": "Alice keeps an iguana called Wobbleton"})
    store.put(("memories", "alice"), "m2", {"content": "Alice studied violin with Krzanowski"})
    store.delete(("memories", "alice"), "m1")
    report = store.purge_deleted()
    assert (report.log_rows, report.vacuumed) == (0, False)  # the server's files are its own
    assert files_holding(tmp_path, "wobbleton") == []  # the BM25 index here
    assert files_holding(tmp_path, "krzanowski")
    assert [i.key for i in store.search(("memories", "alice"), query="violin")] == ["m2"]
    store.close()


def test_episodes_dropped_by_the_cap_leave_their_text_in_no_file(data):
    """`maintain --max-episodes` deletes the oldest archived messages for good: purged."""
    from langgraph.store.base import PutOp

    from engram.stores.chroma.store import make_store
    from engram.stores.memory.long_term import LongTermMemory

    cli("add", "--user", "alice", "Alice keeps bees")  # a known user
    store = make_store()
    namespace = LongTermMemory.episode_namespace("alice")
    store.batch([
        PutOp(namespace, "old", {"content": "user: my old locker code word is Quaffleberry",
                                 "created_at": "2026-01-01T00:00:00+00:00"}, index=["content"]),
        PutOp(namespace, "new", {"content": "user: the hive is by the shed",
                                 "created_at": "2026-02-01T00:00:00+00:00"}, index=["content"]),
    ])
    store.close()
    assert files_holding(data, "Quaffleberry")

    report = cli("maintain", "--user", "alice", "--max-episodes", "1", "--json")
    assert report["episodes_deleted"] == ["old"]
    assert files_holding(data, "Quaffleberry") == []
    assert files_holding(data, "hive is by the shed")
