"""`engram mcp` as MCP clients run it: a real `engram mcp --user ... --data ...` process driven
by the MCP SDK's own client, over stdio and over streamable HTTP, with the environment a client
gives a server it starts (the SDK's default: PATH, HOME, ...; plus the offline model folders the
rest of the suite uses, as a client's configuration would set them)."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, BinaryIO

import anyio
import pytest
from conftest import free_port, stop_process_group, wait_for_port
from fakes import NGramEmbeddings
from langgraph.store.memory import InMemoryStore
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.stdio import get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult
from typer.testing import CliRunner

from engram.graph.cli import app
from engram.graph.cli.mcp.server import build_server
from engram.stores.embeddings import EmbeddingModelNotFoundError
from engram.stores.memory.long_term import LongTermMemory, MemoryCandidate

ENGRAM = str(Path(sys.executable).parent / "engram")
"""The console script installed beside this Python (another on PATH may be another install)."""
MODEL_ENV = {
    name: os.environ[name] for name in ("ENGRAM_EMBEDDING_MODEL_DIR", "TIKTOKEN_CACHE_DIR")
}
"""What a client's configuration sets for an offline machine (`docs/mcp.md`)."""
USER_ENV = get_default_environment() | MODEL_ENV
"""The environment the server and the other `engram` processes run with."""
TOOLS = {"search_memories", "remember", "forget_memory", "list_memories"}


def engram(*args: str, code: int = 0) -> Any:
    """Another process on the same data: `engram ARGS --json`, parsed."""
    done = subprocess.run(
        [ENGRAM, *args, "--json"],
        env=USER_ENV,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == code, done.stderr
    return json.loads(done.stdout) if code == 0 else done.stderr


def cli_add(data: str, user: str, text: str) -> str:
    """`engram memory add` in another process; the new memory's id."""
    return engram("memory", "add", "--user", user, "--data", data, text)["memory"]["id"]


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    """The tool's structured result; the call must succeed."""
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, _text(result)
    assert json.loads(_text(result)) == result.structured_content  # the same, as text
    return result.structured_content or {}


async def refused(session: ClientSession, tool: str, **arguments: Any) -> str:
    """The text of the tool error the call must end in."""
    result = await session.call_tool(tool, arguments)
    assert result.is_error, result
    return _text(result)


def _start(args: list[str], out: BinaryIO) -> subprocess.Popen[bytes]:
    """`engram ARGS` in a process group of its own, its output in `out`."""
    return subprocess.Popen(
        [ENGRAM, *args], env=USER_ENV, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
    )


def _text(result: CallToolResult) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def test_a_client_over_stdio_shares_the_users_memories(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    server = StdioServerParameters(
        command=ENGRAM, args=["mcp", "--user", "alice", "--data", data], env=MODEL_ENV
    )
    stray: list[Exception] = []  # anything on stdout that is not the protocol

    async def on_message(message: Any) -> None:
        if isinstance(message, Exception):
            stray.append(message)

    log = tmp_path / "server.log"
    with log.open("w") as errlog, anyio.fail_after(240):
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=on_message) as session,
        ):
            init = await session.initialize()
            assert init.server_info.name == "engram" and "memory" in (init.instructions or "")
            tools = {t.name: t for t in (await session.list_tools()).tools}
            assert set(tools) == TOOLS
            for tool in tools.values():  # no way to name another user
                assert not {"user", "user_id"} & set(tool.input_schema["properties"])
                assert len(tool.description or "") > 200  # written for a model deciding
            assert tools["search_memories"].annotations.read_only_hint

            # nothing stored yet: an empty answer, not an error
            assert await call(session, "search_memories", query="editor theme") == {"memories": []}
            saved = await call(session, "remember", text="Alice prefers dark mode")
            assert saved["action"] == "created" and saved["memory"]["category"] == "preference"
            dark = saved["memory"]["id"]
            again = await call(session, "remember", text="Alice prefers dark mode")
            assert again["action"] in {"duplicate", "unchanged"} and again["memory"]["id"] == dark
            found = await call(session, "search_memories", query="editor theme", limit=3)
            assert [m["id"] for m in found["memories"]] == [dark]
            assert found["memories"][0]["score"] > 0

            # other processes on the same data: the CLI adds for alice, and for bob
            acme = cli_add(data, "alice", "Alice works at Acme as a data engineer")
            bob = cli_add(data, "bob", "Bob works at Initech as a data engineer")
            found = await call(session, "search_memories", query="data engineer employer")
            assert found["memories"][0]["id"] == acme
            listed = await call(session, "list_memories")
            assert {m["id"] for m in listed["memories"]} == {dark, acme}
            assert listed["next_offset"] is None
            everything = json.dumps(
                [
                    found,
                    listed,
                    await call(session, "search_memories", query="Bob Initech", limit=20),
                ]
            )
            assert "Bob" not in everything and "Initech" not in everything

            # the write policy: a new value of the same attribute supersedes the old one
            light = await call(session, "remember", text="Alice prefers light mode")
            assert light["action"] == "superseded"
            assert [m["id"] for m in light["superseded"]] == [dark]
            assert (await call(session, "list_memories", category="preference"))["memories"] == [
                light["memory"]
            ]
            page = await call(session, "list_memories", limit=1)
            assert len(page["memories"]) == 1 and page["next_offset"] == 1
            assert (await call(session, "list_memories", limit=1, offset=1))["next_offset"] is None
            redacted = await call(
                session, "remember", text="Alice runs staging on db1, password Secr3t!pass"
            )
            assert "db1" in redacted["memory"]["content"] and "Secr3t" not in json.dumps(redacted)

            # forget: gone from search and list, restorable from the CLI
            forgotten = await call(session, "forget_memory", id=acme)
            assert forgotten["forgotten"]["id"] == acme
            assert f"engram memory restore {acme} --user alice" in forgotten["message"]
            listed = await call(session, "list_memories")
            assert acme not in {m["id"] for m in listed["memories"]}
            found = await call(session, "search_memories", query="data engineer employer")
            assert acme not in {m["id"] for m in found["memories"]}
            shown = engram("memory", "show", acme, "--user", "alice", "--data", data)
            assert shown["forgotten"] is True

            # bad input: a tool error that says what was wrong
            assert "only whitespace" in await refused(session, "remember", text="   ")
            assert "no letters or digits" in await refused(session, "remember", text="...")
            assert "2000" in await refused(session, "remember", text="word " * 500)
            assert "only a secret" in await refused(
                session, "remember", text="my password is hunter2xyz!"
            )
            said = await refused(session, "remember", text="Alice likes tea", category="food")
            assert said == (
                'category is "food": give one of "preference", "fact", "project", "lesson", '
                '"skill", "goal", or leave it out.'
            )
            said = await refused(session, "forget_memory", id="no-such-id")
            assert "no memory has the id 'no-such-id'" in said
            assert "no memory has the id" in await refused(session, "forget_memory", id=bob)
            assert "query is empty" in await refused(session, "search_memories", query=" ")
            assert await refused(session, "search_memories", query="x", limit=0) == (
                "limit is 0: give a whole number from 1 to 20."
            )
            assert await refused(session, "list_memories", offset=-1) == (
                "offset is -1: give a whole number of at least 0."
            )

            # an argument naming another user is not in the schema, and reaches no one else
            tea = await call(session, "remember", text="Alice drinks green tea", user="bob")
            assert tea["memory"]["content"] == "Alice drinks green tea"
            bobs = engram("memory", "list", "--user", "bob", "--data", data)
            assert [m["id"] for m in bobs] == [bob]

    assert stray == []
    stderr = log.read_text()
    assert "Traceback" not in stderr
    assert "stopped serving; the store is closed" in stderr  # it left when stdin closed


async def test_a_client_over_streamable_http(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    port = free_port()
    log = tmp_path / "server.log"
    with log.open("wb") as out:
        proc = _start(
            ["mcp", "--user", "carol", "--data", data, "--transport", "http", "--port", str(port)],
            out,
        )
        try:
            wait_for_port(port, proc)
            with anyio.fail_after(120):
                async with (
                    streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write),
                    ClientSession(read, write) as session,
                ):
                    await session.initialize()
                    assert {t.name for t in (await session.list_tools()).tools} == TOOLS
                    saved = await call(session, "remember", text="Carol lives in Lisbon")
                    found = await call(session, "search_memories", query="where does Carol live")
                    assert found["memories"][0]["id"] == saved["memory"]["id"]
                    listed = await call(session, "list_memories", category="fact")
                    assert [m["id"] for m in listed["memories"]] == [saved["memory"]["id"]]
        finally:
            stop_process_group(proc)  # SIGTERM: it stops serving and closes the store
    said = log.read_text()
    assert proc.returncode == 0, said
    assert "stopped serving; the store is closed" in said and "Traceback" not in said
    assert engram("memory", "list", "--user", "carol", "--data", data)[0]["content"] == (
        "Carol lives in Lisbon"
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--user", ""], "is empty"),
        (["--data", "ftp://host/x"], "unknown URL scheme 'ftp'"),
        (["--transport", "sse"], "'sse' is not one of 'stdio', 'http'"),
        (
            ["--transport", "http", "--port", "0"],
            "'--port': Input should be greater than or equal to 1",
        ),
    ],
)
def test_bad_options_stop_it_before_it_serves(args: list[str], says: str) -> None:
    result = CliRunner().invoke(app, ["mcp", *args], input="")
    assert result.exit_code == 2
    assert says in " ".join(result.stderr.split())
    assert result.stdout == ""


def test_the_help_names_the_tools_and_loads_no_mcp() -> None:
    result = CliRunner().invoke(app, ["mcp", "--help"], terminal_width=200)
    assert "search_memories, remember, forget_memory, list_memories" in result.output
    assert "--transport stdio|http" in result.output
    script = "import sys\nfrom engram.graph.cli import app\nprint('mcp' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False
    )
    assert done.stdout.strip() == "False", done.stderr


@pytest.mark.parametrize(
    ("failure", "says"),
    [
        (
            EmbeddingModelNotFoundError(
                "all-MiniLM-L6-v2 ONNX files not found: set ENGRAM_EMBEDDING_MODEL_DIR"
            ),
            'set ENGRAM_EMBEDDING_MODEL_DIR under "env" beside "args"',  # in the client's config
        ),
        (TimeoutError("the data folder is busy"), "could not use the engram data"),
        (ZeroDivisionError("a bug"), None),  # a crash: the client learns nothing of it
    ],
)
async def test_what_the_store_raises_is_a_tool_error(failure: Exception, says: str | None) -> None:
    def embed(texts: list[str]) -> list[list[float]]:
        raise failure

    memory = LongTermMemory(InMemoryStore(index={"dims": 4, "embed": embed, "fields": ["content"]}))
    async with Client(build_server(memory, "alice")) as client:
        for tool, arguments in [
            ("search_memories", {"query": "tea"}),
            ("remember", {"text": "Alice drinks green tea"}),
        ]:
            result = await client.call_tool(tool, arguments)
            assert result.is_error
            if says is None:
                assert _text(result) == f"Error executing tool {tool}"
            else:
                assert says in _text(result)


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("remember", {}, "text is missing: give a string."),
        ("search_memories", {"query": 5}, "query is 5: give a string."),
        ("list_memories", {"limit": "many"}, 'limit is "many": give a whole number from 1 to 100.'),
        ("forget_memory", {"id": None}, "id is null: give a string."),
        (
            "search_memories",
            {"query": "tea", "limit": 21},
            "limit is 21: give a whole number from 1 to 20.",
        ),
    ],
)
async def test_wrong_arguments_are_one_plain_sentence(tool: str, arguments: dict, says: str) -> None:
    async with Client(build_server(LongTermMemory(InMemoryStore()), "alice")) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error
    assert _text(result) == says


async def test_forget_takes_the_id_prefix_the_cli_shows_and_never_another_users() -> None:
    store = InMemoryStore(index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]})
    memory = LongTermMemory(store, min_importance=0.0)
    [bobs] = await memory.aupsert("bob", [MemoryCandidate(content="Bob drinks black coffee", category="fact")])
    async with Client(build_server(memory, "alice")) as client:
        saved = await client.call_tool("remember", {"text": "Alice drinks green tea"})
        tea = saved.structured_content["memory"]["id"]
        forgotten = await client.call_tool("forget_memory", {"id": tea[:8]})
        assert forgotten.structured_content["forgotten"]["id"] == tea
        other = await client.call_tool("forget_memory", {"id": bobs.memory.id[:8]})
        assert other.is_error and "no memory has the id" in _text(other)
        firsts = {tea[0]}
        for n in itertools.count():  # until two of alice's ids start alike
            result = await client.call_tool("remember", {"text": f"Alice planted {n} tomatoes"})
            first = result.structured_content["memory"]["id"][0]
            if first in firsts:
                break
            firsts.add(first)
        ambiguous = await client.call_tool("forget_memory", {"id": first})
    assert ambiguous.is_error
    said = _text(ambiguous)
    assert f"id prefix {first!r} matches " in said and "give more of it" in said
    assert not (await memory.aget("bob", bobs.memory.id)).forgotten
