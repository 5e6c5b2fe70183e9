"""`engram memory` against a real embedded store (Chroma + all-MiniLM-L6-v2) in a tmp data folder."""

from __future__ import annotations

import itertools
import json
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import TESTS, run_engram
from fakes import RecordingChatModel
from langchain_core.messages import HumanMessage
from typer.testing import CliRunner

from engram.graph import Compaction, Context, compile_graph
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.graph.cli import app
from engram.stores.chroma import metadata as md
from engram.stores.chroma.store import ChromaStore, make_store
from engram.stores.lexical.index import LexicalIndex
from engram.stores.memory.long_term import LongTermMemory, Memory
from engram.stores.memory.types import INDEX_FIELDS

runner = CliRunner()
FAKES = str(TESTS / "fakes.py")


@pytest.fixture
def data(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ENGRAM_CHROMA_URL", raising=False)
    monkeypatch.delenv("ENGRAM_USER", raising=False)
    monkeypatch.delenv("ENGRAM_MEMORY_MODEL", raising=False)
    return tmp_path


def cli(*args: str, code: int = 0, input: str | None = None) -> Any:
    """Run `engram memory ...`; parse JSON output when `--json` was given."""
    result = runner.invoke(app, ["memory", *args], input=input)
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    return json.loads(result.stdout) if "--json" in args and code == 0 else result


def add(text: str, *args: str, user: str = "alice") -> dict:
    return cli("add", "--user", user, text, *args, "--json")["memory"]


def test_add_list_search_show(data):
    dark = add("Alice prefers dark mode")
    assert (dark["category"], dark["key"]) == ("preference", "preference.theme")  # guessed
    add("Alice works at Acme as a data engineer")
    add("The staging database is PostgreSQL 16", "--category", "project", "--importance", "0.6")

    listed = cli("list", "--user", "alice", "--json")
    assert {m["content"]: m["category"] for m in listed} == {
        "Alice prefers dark mode": "preference",
        "Alice works at Acme as a data engineer": "fact",
        "The staging database is PostgreSQL 16": "project",
    }
    found = cli("search", "--user", "alice", "editor theme", "--json")
    assert found[0]["content"] == "Alice prefers dark mode"
    assert found[0]["access_count"] == 0  # looking from the CLI is not a recall
    for hit in found:  # relevance (both channels fused); importance and recency only break ties
        assert 0 <= hit["relevance"] <= 1 and -1 <= hit["similarity"] <= 1
        assert hit["score"] == pytest.approx(
            hit["relevance"] + 0.05 * (0.6 * hit["importance"] + 0.4 * hit["recency"])
        )
    table = cli("list", "--user", "alice").stdout
    assert dark["id"][:8] in table and "Alice prefers dark mode" in table

    shown = cli("show", dark["id"][:6], "--user", "alice", "--json")
    assert shown["id"] == dark["id"] and shown["maintenance"] is None
    assert "preference.theme" in cli("show", dark["id"], "--user", "alice").stdout
    stats = cli("stats", "--user", "alice", "--json")
    assert stats["active"] == 3 and stats["by_category"] == {
        "fact": 1,
        "preference": 1,
        "project": 1,
    }


def test_a_user_id_or_query_that_looks_like_markup_is_shown_as_written(data):
    user, query = "[/x] [bold]y", "[red]tea[/red] :smile:"
    add("I like green tea", user=user)
    for args in (("list",), ("search", query), ("stats",), ("maintain", "--dry-run")):
        result = cli(*args, "--user", user)  # rich would fail on "[/x]" as a closing tag
        assert "[/x] [bold]y" in result.stdout
    assert "[red]tea[/red] :smile:" in cli("search", query, "--user", user).stdout


def test_add_goes_through_the_write_policy(data):
    first = cli("add", "--user", "alice", "I prefer Vue for frontends", "--json")
    second = cli("add", "--user", "alice", "I prefer React for frontends", "--json")
    assert second["action"] == "superseded" and second["superseded"] == [first["memory"]["id"]]
    again = cli("add", "--user", "alice", "I prefer React for frontends", "--json")
    assert again["action"] in ("duplicate", "unchanged")
    secret = add(
        "My API key is sk-abcdefghijklmnopqrstuvwxyz123456 for the staging box", "-c", "fact"
    )
    assert "sk-abc" not in secret["content"] and "[REDACTED]" in secret["content"]
    result = cli("add", "--user", "alice", "password: hunter2hunter2", code=2)
    assert "nothing stored" in result.stderr
    assert [m["content"] for m in cli("list", "--user", "alice", "--json", "-c", "preference")] == [
        "I prefer React for frontends"
    ]


def test_errors_are_clear_with_exit_codes(data):
    result = cli("list", "--user", "nobody", code=1)
    assert "no engram data in" in result.stderr  # nothing stored at all yet
    add("Alice prefers dark mode")
    result = cli("list", "--user", "bob", code=1)
    assert "nothing is stored for user 'bob'" in result.stderr and "alice" in result.stderr
    assert "no memory 'feedface'" in cli("show", "feedface", "--user", "alice", code=1).stderr
    assert "hobby" in cli("add", "--user", "alice", "x", "-c", "hobby", code=2).stderr
    assert "unknown category 'hobby'" in cli("list", "-u", "alice", "-c", "hobby", code=2).stderr
    assert "explicit --user" in cli("delete", "--all", "--yes", code=2).stderr
    assert "not both" in cli("delete", code=2).stderr
    assert "is only whitespace" in cli("list", "--user", "  ", code=2).stderr
    assert "CATEGORY=DAYS" in cli("maintain", "-u", "alice", "--ttl", "goal", code=2).stderr
    assert (
        "unknown category 'goals'"
        in cli("maintain", "-u", "alice", "--ttl", "goals=3", code=2).stderr
    )
    bad_model = cli("maintain", "-u", "alice", "--model", "no-such-provider:x", code=2).stderr
    assert "--model 'no-such-provider:x': cannot load this chat model" in bad_model


def test_search_finds_what_the_store_finds(data):
    """`engram memory search` (its model on one thread, weights not prepacked) returns the
    memories, order and scores that the graph's own store returns for the same search."""
    for text in (
        "Alice prefers dark mode in every editor",
        "Alice works at Acme as a data engineer",
        "The staging database is PostgreSQL 16",
        "Alice's editor is Neovim with a dark theme",
        "Alice is learning Rust on weekends",
    ):
        add(text)
    forgotten = add("Alice liked light themes years ago")
    cli("forget", forgotten["id"], "--user", "alice")
    searches = [
        (["editor theme"], {}),
        (["database", "-k", "2"], {"k": 2}),
        (["editor", "-c", "fact"], {"categories": ["fact"]}),
        (["light theme", "--forgotten"], {"include_forgotten": True}),
    ]
    from_cli = [cli("search", "--user", "alice", *args, "--json") for args, _ in searches]

    store = make_store()  # what the graph opens: its model prepacked, on every core
    try:
        memory = LongTermMemory(store)
        from_store = [
            memory.search("alice", args[0], kwargs.pop("k", 5), touch=False, **kwargs)
            for args, kwargs in searches
        ]
    finally:
        store.close()

    assert all(from_cli) and len(from_cli[1]) == 2
    assert all(m["category"] == "fact" for m in from_cli[2])
    assert forgotten["id"] in [m["id"] for m in from_cli[3]]
    assert forgotten["id"] not in [m["id"] for found in from_cli[:3] for m in found]
    for printed, scored in zip(from_cli, from_store, strict=True):
        assert [m["id"] for m in printed] == [s.memory.id for s in scored]
        for m, s in zip(printed, scored, strict=True):
            assert (m["score"], m["similarity"]) == pytest.approx((s.score, s.similarity), abs=1e-5)
            assert m["relevance"] == pytest.approx(s.relevance, abs=1e-5)


def test_search_of_a_user_without_memories_is_an_error_and_no_hit_is_not(data):
    add("Alice prefers dark mode")

    assert cli("search", "--user", "alice", "mode", "-c", "goal", "--json") == []
    result = cli("search", "--user", "bob", "dark mode", code=1)
    assert "nothing is stored for user 'bob'" in result.stderr and "alice" in result.stderr
    assert "is only whitespace" in cli("search", "--user", "  ", "mode", code=2).stderr


def test_forget_restore_delete(data):
    memory = add("Alice lives in Lisbon")
    other = add("Alice has a cat named Miso")
    cli("forget", memory["id"][:8], "--user", "alice")
    assert [m["id"] for m in cli("list", "-u", "alice", "--json")] == [other["id"]]
    assert cli("list", "-u", "alice", "--json", "--forgotten")[0]["forgotten"] is True
    restored = cli("restore", memory["id"], "-u", "alice", "--json")
    assert restored["actions"] and not restored["memory"]["forgotten"]
    assert "nothing to restore" in cli("restore", memory["id"], "-u", "alice", code=1).stdout

    aborted = cli("delete", memory["id"], "-u", "alice", input="n\n", code=1)
    assert "Aborted" in aborted.stdout + aborted.stderr
    cli("delete", memory["id"], "-u", "alice", "--yes")
    assert [m["id"] for m in cli("list", "-u", "alice", "--json", "--all")] == [other["id"]]
    assert "no memory" in cli("restore", memory["id"], "-u", "alice", code=1).stderr


def test_export_edit_import(data, tmp_path):
    dark = add("Alice prefers dark mode")
    acme = add("Alice works at Acme as a data engineer")
    out = tmp_path / "alice.md"
    cli("export", "--user", "alice", "--out", str(out))
    assert cli("export", "--user", "alice").stdout.startswith("# Memories of alice\n")
    assert "nothing to change" in cli("import", str(out), "--user", "alice").stdout

    text = out.read_text()
    text = text.replace("Alice prefers dark mode", "Alice prefers dark mode, also in the terminal")
    text = text.replace(f"- Alice works at Acme as a data engineer <!-- id:{acme['id']} -->\n", "")
    text = text.replace("## Goals\n", "## Goals\n\n- Alice plans to run a marathon in 2027\n")
    out.write_text(text)

    plan = cli("import", str(out), "--user", "alice", "--dry-run", "--json")["plan"]
    assert plan["counts"] == {"edit": 1, "forget": 1, "add": 1}
    shown = cli("import", str(out), "--user", "alice", input="n\n", code=1).stdout
    assert "~ edit" in shown and "- forget" in shown and "+ add" in shown
    assert len(cli("list", "-u", "alice", "--json")) == 2  # declined: nothing applied

    applied = cli("import", str(out), "--user", "alice", "--yes", "--json")["applied"]
    assert sorted(a["outcome"] for a in applied) == ["created", "edited", "forgotten"]
    current = {m["content"]: m for m in cli("list", "-u", "alice", "--json")}
    assert set(current) == {
        "Alice prefers dark mode, also in the terminal",
        "Alice plans to run a marathon in 2027",
    }
    assert current["Alice plans to run a marathon in 2027"]["category"] == "goal"
    assert current["Alice prefers dark mode, also in the terminal"]["supersedes"] == [dark["id"]]
    assert cli("import", str(out), "--user", "alice", "--yes", "--json")["applied"] == []
    cli("restore", acme["id"], "-u", "alice")
    assert len(cli("list", "-u", "alice", "--json")) == 3
    assert "exported for user 'alice'" in cli("import", str(out), "--user", "bob", code=2).stderr


def test_maintain_forgets_what_faded_and_restore_brings_it_back(data):
    add("Alice prefers dark mode")  # creates the store
    store = make_store()  # the CLI's data folder ($ENGRAM_DATA_DIR)
    now = datetime.now(UTC)
    old = {}
    for name, importance, days, category in [
        ("stale", 0.5, 300, "fact"),  # 0.5 e^-3 = 0.025: forgotten
        ("fading", 0.8, 150, "fact"),  # 0.8 e^-1.5 = 0.18: lowered
        ("old goal", 0.9, 200, "goal"),  # TTL 180 days: expired
    ]:
        memory = Memory.new(
            f"Alice's {name} memory",
            category,
            importance,  # type: ignore[arg-type]
            now=(now - timedelta(days=days)).isoformat(),
        )
        store.put(
            LongTermMemory.namespace("alice"), memory.id, memory.to_value(), index=INDEX_FIELDS
        )
        old[name] = memory
    for n in range(3):  # idle for 100 days, never recalled: compressible (1.0 e^-1 = 0.37)
        memory = Memory.new(
            f"Alice's old fact number {n}",
            "fact",
            1.0,
            now=(now - timedelta(days=100 + n)).isoformat(),
        )
        store.put(
            LongTermMemory.namespace("alice"), memory.id, memory.to_value(), index=INDEX_FIELDS
        )
        old[f"fact {n}"] = memory

    dry = cli("maintain", "-u", "alice", "--ttl", "goal=180", "--dry-run", "--json")
    assert dry["dry_run"] and dry["changed"] == 3
    assert len(cli("list", "-u", "alice", "--json")) == 7  # the dry run wrote nothing
    report = cli("maintain", "-u", "alice", "--ttl", "goal=180", "--json")
    assert (report["forgotten"], report["expired"]) == ([old["stale"].id], [old["old goal"].id])
    assert [x["memory_id"] for x in report["lowered"]] == [old["fading"].id]
    assert report["compression"].startswith("skipped: no memory model configured (4 memories in 1 group")
    table = cli("maintain", "-u", "alice", "--ttl", "goal=180").stdout
    assert "0 memories changed" in table  # a second run has nothing left to do

    # with a memory model, the 4 old facts (the lowered one too) are compressed, oldest first
    compressed = cli("maintain", "-u", "alice", "--model", f"{FAKES}:compression_model", "--json")
    [group] = compressed["compressed"]
    assert group["sources"] == [old[n].id for n in ("fading", "fact 2", "fact 1")]
    [new_id] = group["created"]
    assert cli("show", new_id, "-u", "alice", "--json")["supersedes"] == group["sources"]

    for name in ("stale", "fading", "old goal"):
        cli("restore", old[name].id, "-u", "alice")
    cli("restore", new_id, "-u", "alice")  # undoes the rest of the compression
    back = {m["id"]: m for m in cli("list", "-u", "alice", "--json")}
    assert {old[n].id for n in old} <= set(back) and new_id not in back
    assert back[old["fading"].id]["importance"] == 0.8
    assert [r["user_id"] for r in cli("maintain", "--all-users", "--json")] == ["alice"]


def _open_files_under(folder: Path) -> list[str]:
    """The files under `folder` this process holds open (Linux: /proc/self/fd)."""
    found = []
    for fd in Path("/proc/self/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # the listing's own descriptor is gone by now
            continue
        if target.startswith(str(folder)):
            found.append(target)
    return found


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="lists open files from /proc")
def test_commands_close_the_files_they_open(data):
    saver = ThreadedSqliteSaver.from_path(data / "checkpoints.sqlite")  # the graph's threads
    saver.setup()
    saver.conn.close()
    memory = add("Alice prefers dark mode")
    for args in (["list"], ["search", "dark mode"], ["show", memory["id"]], ["stats"]):
        cli(*args, "-u", "alice")
    cli("delete", "--all", "-u", "alice", "--yes")
    deadline = time.monotonic() + 10  # Chroma's Rust side closes its SQLite pool on its own thread
    while _open_files_under(data) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _open_files_under(data) == []  # Chroma's, the lexical index's, the checkpoints'


def _graph_turns(user: str, thread: str, texts: list[str]) -> None:
    model = RecordingChatModel(messages=(f"noted {i}" for i in itertools.count()))
    with compile_graph(model) as graph:
        config = {"configurable": {"thread_id": thread}}
        ctx = Context(
            user_id=user, compaction=Compaction(message_threshold=4, keep_recent_messages=2)
        )
        for text in texts:
            graph.invoke({"messages": [HumanMessage(text)]}, config, context=ctx)
        graph.invoke({"end_session": True}, config, context=ctx)


def _records_of(store: ChromaStore, user: str) -> list[dict[str, Any]]:
    """Every raw Chroma record whose namespace has `user` as its second label."""
    got = store.client.get_collection(store.collection_name).get(include=["metadatas"])
    return [m for m in got["metadatas"] if md.namespace_from_metadata(m)[1:2] == (user,)]


def test_delete_all_removes_everything_of_a_user_and_nothing_else(data):
    texts = [
        "I prefer dark mode in every editor.",
        "I work at Acme as a data engineer.",
        "We use PostgreSQL 16 for everything.",
        "I plan to learn Rust next year.",
        "My cat is called Miso.",
    ]
    _graph_turns("alice", "alice-1", texts)
    _graph_turns("alice", "alice-2", texts[:2])
    _graph_turns("bob", "bob-1", ["I prefer light mode.", "I live in Lisbon."])

    store = ChromaStore(path=data / "chroma")
    alice_before = _records_of(store, "alice")
    bob_before = _records_of(store, "bob")
    lexical = LexicalIndex(data / "chroma")  # the BM25 index beside Chroma's files
    alice_scopes = [s for s in lexical.scopes() if s.split("/", 1)[1].split(".")[1:2] == ["alice"]]
    bob_documents = {s: lexical.digests(s) for s in lexical.scopes() if ".bob" in s}
    assert len(alice_scopes) == 2 and bob_documents  # memories and episodes of each
    kinds = {md.namespace_from_metadata(m)[0] for m in alice_before}
    assert {"memories", "memory_hashes", "episodes", "threads"} <= kinds  # the turns made them all
    assert sorted(cli("stats", "-u", "alice", "--json")["namespaces"]) == sorted(kinds)

    report = cli("delete", "--all", "--user", "alice", "--yes", "--json")
    assert (
        sorted(report["threads"]) == ["alice-1", "alice-2"] and report["threads_not_deleted"] == []
    )
    assert sum(report["deleted"].values()) == len(alice_before)
    assert _records_of(store, "alice") == []
    assert _records_of(store, "bob") == bob_before
    assert [s for s in lexical.scopes() if s in alice_scopes] == []
    assert all(lexical.count(s) == 0 for s in alice_scopes)
    assert {s: lexical.digests(s) for s in bob_documents} == bob_documents

    saver = ThreadedSqliteSaver.from_path(data / "checkpoints.sqlite")
    for thread, present in (("alice-1", False), ("alice-2", False), ("bob-1", True)):
        found = saver.get_tuple({"configurable": {"thread_id": thread}})
        assert (found is not None) == present, thread
    assert "nothing is stored for user 'alice'" in cli("list", "-u", "alice", code=1).stderr
    assert len(cli("list", "-u", "bob", "--json")) >= 1


def said(stderr: str) -> str:
    """What a command printed on stderr, with the terminal's line wrapping undone."""
    return " ".join(stderr.split())


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "is empty"),
        ("   ", "is only whitespace"),
        (".", "has no letters or digits"),
        ("?! ...", "has no letters or digits"),
        ("x" * 2001, "is 2001 characters long, more than the 2000 a memory holds"),
    ],
    ids=["empty", "whitespace", "dot", "punctuation", "too-long"],
)
def test_add_refuses_a_memory_without_words_or_too_long(data, text, says):
    result = cli("add", "--user", "alice", text, code=2)
    assert f"nothing stored: a memory's content {says}" in said(result.stderr)
    assert "Traceback" not in said(result.stderr) and "pydantic" not in said(result.stderr)
    assert not (data / "chroma").exists() or "alice" not in cli("stats", "--json", code=0).stdout


def test_add_reads_the_memory_from_stdin(data):
    memory = cli("add", "--user", "alice", "-", "--json", input="Alice prefers dark mode\n")
    assert memory["memory"]["content"] == "Alice prefers dark mode"
    long = "Alice wrote this. " * 12_000  # 216 KB: more than an argument can carry
    assert "more than the 2000 a memory holds" in said(
        cli("add", "-u", "alice", "-", input=long, code=2).stderr
    )
    result = runner.invoke(app, ["memory", "add", "-u", "alice", "-"], input=b"caf\xe9 au lait")
    assert result.exit_code == 2 and "the memory on stdin is not UTF-8 text" in said(result.stderr)


def test_add_replaces_a_lone_surrogate_from_the_command_line(data):
    # Python decodes non-UTF-8 argv bytes to lone surrogates (surrogateescape)
    assert add("Alice likes caf\udce9 au lait")["content"] == "Alice likes caf\ufffd au lait"


def test_import_reads_utf8_with_a_bom_and_refuses_other_encodings(data, tmp_path):
    add("Alice prefers dark mode")
    bom = tmp_path / "bom.md"
    bom.write_bytes(
        "# Memories of alice\n\n## Facts\n\n- Alice lives in Lyon\n".encode("utf-8-sig")
    )
    result = cli("import", str(bom), "--user", "alice", "--yes")
    assert "not a bullet" not in said(result.stderr) and "created" in result.stdout
    latin = tmp_path / "latin.md"
    latin.write_bytes("# Memories of alice\n\n## Facts\n\n- Alice aime le café\n".encode("latin-1"))
    result = cli("import", str(latin), "--user", "alice", "--yes", code=2)
    assert f"{latin} is not UTF-8 text (byte 0xe9 at offset" in said(result.stderr)
    assert "save it as UTF-8" in said(result.stderr) and "Traceback" not in said(result.stderr)


def test_import_names_the_lines_of_memories_without_words(data, tmp_path):
    add("Alice prefers dark mode")
    out = tmp_path / "alice.md"
    cli("export", "--user", "alice", "--out", str(out))
    out.write_text(out.read_text().replace("## Goals\n", "## Goals\n\n- .\n\n- Alice runs\n"))
    line = out.read_text().splitlines().index("- .") + 1
    result = cli("import", str(out), "--user", "alice", "--yes", code=2)
    assert f"line {line}: this memory has no letters or digits" in said(result.stderr)
    assert "nothing was changed" in said(result.stderr)
    assert len(cli("list", "-u", "alice", "--json")) == 1


@pytest.mark.parametrize("url", ["ftp://h:1", "file:///tmp/x", "s3://bucket/engram", "chroma://h"])
def test_an_unknown_url_scheme_for_data_is_an_error(data, tmp_path, monkeypatch, url):
    monkeypatch.chdir(tmp_path)
    result = cli("add", "--user", "alice", "Alice prefers tea", "--data", url, code=2)
    scheme = url.split(":", 1)[0]
    assert f"unknown URL scheme '{scheme}'" in said(result.stderr) and "http://host:port" in said(
        result.stderr
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no folder named "ftp:" or so


def test_http_data_urls_still_reach_a_chroma_server(data):
    result = cli("list", "--user", "alice", "--data", "http://127.0.0.1:9", code=1)
    assert "unknown URL scheme" not in said(result.stderr) and "127.0.0.1" in said(result.stderr)


def test_a_dry_run_needs_no_model_and_no_key(data, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    add("Alice prefers dark mode")
    store = make_store()
    old = (datetime.now(UTC) - timedelta(days=120)).isoformat()
    for n in range(3):  # idle for 120 days, never recalled: compressible
        memory = Memory.new(f"Alice's old fact number {n}", "fact", 1.0, now=old)
        store.put(
            LongTermMemory.namespace("alice"), memory.id, memory.to_value(), index=INDEX_FIELDS
        )
    store.close()
    args = ("maintain", "-u", "alice", "--model", "openai:gpt-4o-mini")
    dry = cli(*args, "--dry-run", "--json")
    assert dry["compression"] == "dry run: the model was not called"
    assert len(dry["compressed"][0]["sources"]) == 3 and dry["compressed"][0]["created"] == []
    assert "cannot load this chat model" in said(cli(*args, code=2).stderr)  # a real run needs it


def test_no_embedding_model_is_a_one_line_error_and_stores_nothing(data, tmp_path, monkeypatch):
    from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

    add("Alice prefers tea")
    empty = tmp_path / "no-model"
    empty.mkdir()
    with monkeypatch.context() as nowhere:  # no model files, and chromadb's download fails
        nowhere.setenv("ENGRAM_EMBEDDING_MODEL_DIR", str(empty))
        nowhere.setattr(ONNXMiniLM_L6_V2, "DOWNLOAD_PATH", tmp_path / "no-cache")
        nowhere.setattr(ONNXMiniLM_L6_V2, "MODEL_DOWNLOAD_URL", "http://127.0.0.1:9/onnx.tar.gz")
        for args in (("search", "tea"), ("add", "Alice moved to Lisbon")):
            result = cli(*args, "--user", "alice", code=1)
            assert result.stderr.startswith("error: all-MiniLM-L6-v2 ONNX files")
            assert "ENGRAM_EMBEDDING_MODEL_DIR" in result.stderr
            assert "Traceback" not in result.stderr
    assert [m["content"] for m in cli("list", "--user", "alice", "--json")] == ["Alice prefers tea"]


def test_a_flat_does_not_replace_the_city_the_user_lives_in(data):
    city = add("I moved from Berlin to Lisbon")
    flat_text = "My wifi password is hunter2, I live in a flat with two cats"
    flat = cli("add", "--user", "alice", flat_text, "--json")
    assert flat["action"] == "created" and flat["superseded"] == []
    found = cli("search", "--user", "alice", "which city does alice live in", "--json")
    assert city["id"] in [m["id"] for m in found]



@pytest.mark.parametrize(
    ("first", "change", "untouched"),
    [
        ("I live in Lisbon and I'm vegetarian", "I moved to Porto last month", "I'm vegetarian"),
        ("我喜欢用深色主题写代码，住在上海", "Alice prefers dark mode", "住在上海"),
    ],
)
def test_a_change_retires_only_the_fact_it_changes(data, first, change, untouched):
    old = add(first)
    result = cli("add", "--user", "alice", change, "--json")
    assert result["action"] == "superseded" and result["superseded"] == [old["id"]]
    [kept] = result["kept"]
    assert kept["content"] == untouched
    assert (kept["valid_from"], kept["category"]) == (old["valid_from"], old["category"])
    current = {m["content"] for m in cli("list", "--user", "alice", "--json")}
    assert current == {untouched, result["memory"]["content"]}
    printed = cli("add", "--user", "bob", first).stdout + cli("add", "--user", "bob", change).stdout
    assert "keeps " in printed and untouched in printed


def test_undoing_a_change_brings_back_the_whole_memory_and_forgets_what_it_kept(data):
    from engram.stores.chroma.store import ChromaStore, default_index
    from engram.stores.memory.manage.undo import undo_memory

    old = add("I live in Lisbon and I'm vegetarian")
    result = cli("add", "--user", "alice", "I moved to Porto last month", "--json")
    store = ChromaStore(path=str(data / "chroma"), index=default_index())
    try:
        undone = undo_memory(store, "alice", result["memory"]["id"])
    finally:
        store.close()
    assert [m.id for m in undone.restored] == [old["id"]]
    assert [m.id for m in undone.unkept] == [result["kept"][0]["id"]]
    current = [m["content"] for m in cli("list", "--user", "alice", "--json")]
    assert current == ["I live in Lisbon and I'm vegetarian"]


def test_an_added_change_retires_the_memory_it_names_and_no_other(data):
    jira = add("Our team tracks tickets in Jira")
    editor = add("I write code in Neovim")
    result = cli("add", "--user", "alice", "we no longer use Jira, tickets are in Linear", "--json")
    assert result["action"] == "superseded"
    assert result["superseded"] == [jira["id"]]
    current = {m["id"] for m in cli("list", "--user", "alice", "--json")}
    assert current == {editor["id"], result["memory"]["id"]}
    for kept in ("what if I switched from Neovim to Zed, would it be faster?",
                 "my colleague switched from Neovim to Zed"):
        assert cli("add", "--user", "alice", kept, "--json")["superseded"] == []
    assert editor["id"] in {m["id"] for m in cli("list", "--user", "alice", "--json")}

EVERY_COMMAND = [
    ("list",),
    ("search", "tea"),
    ("show", "feedface"),
    ("stats",),
    ("add", "I like black coffee"),
    ("forget", "feedface"),
    ("restore", "feedface"),
    ("delete", "feedface", "--yes"),
    ("delete", "--all", "--yes"),
    ("maintain", "--dry-run"),
    ("export",),
    ("import", "-", "--yes"),
]


@pytest.mark.parametrize("args", EVERY_COMMAND, ids=" ".join)
def test_an_empty_user_is_refused_not_taken_for_the_default_user(data, monkeypatch, args):
    kept = add("I like green tea", user="default")
    for user_args, env in ((["--user", ""], None), (["-u", "   "], None), ([], "")):
        if env is not None:
            monkeypatch.setenv("ENGRAM_USER", env)
        result = cli(*args, *user_args, code=2, input="")
        monkeypatch.delenv("ENGRAM_USER", raising=False)
        stderr = said(result.stderr)
        assert "(--user alice, or ENGRAM_USER=alice)" in stderr, stderr
        assert "leave out both for the default user 'default'" in stderr
    assert [m["id"] for m in cli("list", "--json")] == [kept["id"]]  # the default user untouched


def test_output_says_which_memory_replaced_which_in_the_users_words(data):
    old = add("I prefer Vue for frontends")
    result = cli("add", "--user", "alice", "I prefer React for frontends")
    printed = " ".join(result.stdout.split())
    assert printed.startswith("added ") and "superseded" not in printed
    assert f"replaces {old['id']}: I prefer Vue for frontends" in printed

    stats = " ".join(cli("stats", "--user", "alice").stdout.split())
    assert "duplicate fingerprints 2" in stats and "memory_hashes" not in stats
    deleted = " ".join(cli("delete", "--all", "--user", "alice", "--yes").stdout.split())
    assert "2 memories, 2 duplicate fingerprints" in deleted and "memory_hashes" not in deleted


def test_a_memory_that_is_only_a_secret_is_bad_input(data):
    result = cli("add", "--user", "alice", "password: hunter2hunter2", code=2)
    assert "nothing stored: the text is only a secret" in said(result.stderr)
    assert "write what to remember without the secret" in said(result.stderr)


def test_an_ambiguous_id_prefix_or_a_malformed_server_url_is_bad_input(data, monkeypatch):
    firsts: set[str] = set()
    for n in itertools.count():  # until two ids start alike: at most 17 memories
        first = add(f"I planted {n} tomato seedlings today")["id"][0]
        if first in firsts:
            break
        firsts.add(first)
    result = cli("show", first, "--user", "alice", code=2)
    assert "give more of it" in said(result.stderr)
    result = cli("list", "--data", "http://", code=2)
    assert "must look like http://host:port" in said(result.stderr)


def test_what_people_stored_never_drives_the_terminal(data):
    """ESC, NUL and bidi overrides in a memory (or a user id) are printed written out."""
    user = "mallory\x1b]0;pwned\x07"
    tricky = "Alice likes \x1b[2J\x1b[31mred\x00 and \u202eevil"
    add(tricky, user=user)
    memory = add(tricky)
    # (`export` to a pipe or a file writes memory.md as stored; to a terminal, written out)
    for args in (["list", "--user", "alice"], ["list", "--user", user], ["stats"],
                 ["search", "--user", "alice", "red"], ["show", memory["id"][:8], "--user", "alice"]):
        said = cli(*args)
        printed = said.stdout + said.stderr
        assert not any(c in printed for c in "\x1b\x00\x07\u202e"), (args, printed)
        assert "\\x1b" in printed or args == ["stats"], (args, printed)


def test_counts_of_one_are_singular(data):
    added = run_engram("memory", "add", "--user", "alice", "Alice prefers dark mode")
    assert added.returncode == 0, added.stderr
    listed = run_engram("memory", "list", "--user", "alice")
    assert "1 memory of 'alice'" in listed.stdout
    maintained = run_engram("memory", "maintain", "--user", "alice")
    assert "0 memories changed" in " ".join(maintained.stdout.split())
    deleted = run_engram("memory", "delete", "--all", "--user", "alice", "--yes")
    assert deleted.returncode == 0, deleted.stderr
    printed = " ".join(deleted.stdout.split())
    assert "1 memory, 1 duplicate fingerprint;" in printed, printed
    assert "0 threads (messages and summaries)" in printed


def test_output_to_a_pipe_is_not_wrapped(data):
    text = (
        "Alice keeps her dotfiles in a private repository and syncs them to every machine "
        "she works on with a small shell script run from cron every night"
    )
    added = run_engram("memory", "add", "--user", "alice", text)
    assert added.returncode == 0, added.stderr
    listed = run_engram("memory", "list", "--user", "alice")
    assert any(text in line for line in listed.stdout.splitlines()), listed.stdout
    missing = run_engram("memory", "show", "no-such-id", "--user", "alice")
    assert missing.returncode == 1
    assert len(missing.stderr.strip().splitlines()) == 1, missing.stderr


def test_show_prints_the_history_older_and_newer_values_with_their_dates(data):
    vue = add("I prefer Vue for frontends")
    react = add("I prefer React for frontends")
    svelte = add("I prefer Svelte for frontends")
    shown = run_engram("memory", "show", react["id"][:8], "--user", "alice")
    assert shown.returncode == 0, shown.stderr
    history = shown.stdout.split("history, oldest first:")[1].strip().splitlines()
    assert [line.split()[2] for line in history] == [m["id"][:8] for m in (vue, react, svelte)]
    assert history[0].endswith(
        f"superseded {react['created_at'][:10]} {react['created_at'][11:16]} by "
        f"{react['id'][:8]}: I prefer Vue for frontends"
    )
    assert history[0].startswith(f"{vue['created_at'][:10]} {vue['created_at'][11:16]} ")
    assert history[1].endswith("I prefer React for frontends  (this memory)")
    assert f"{svelte['id'][:8]} current: I prefer Svelte for frontends" in history[2]

    as_json = cli("show", svelte["id"], "--user", "alice", "--json")
    assert [(v["id"], v["state"]) for v in as_json["history"]] == [
        (vue["id"], "superseded"),
        (react["id"], "superseded"),
        (svelte["id"], "current"),
    ]
    alone = run_engram("memory", "show", add("Alice has a cat named Miso")["id"], "--user", "alice")
    assert "history" not in alone.stdout
