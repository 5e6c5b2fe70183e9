"""The memory API as `langgraph dev` serves it beside the graph (langgraph.json's `"http"`), in a
user's environment (`langgraph_dev`): over HTTP, with `X-Engram-User`, seeing what `engram memory
...` and a conversation in the graph write to the same data folder from other processes, and the
curl examples of docs/api.md running as written."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest
from langgraph_dev import REPO, LangGraphDev, langgraph_dev
from langgraph_sdk import get_client

from engram.graph.http import USER_HEADER
from engram.stores.chroma.store import ChromaStore, default_index
from engram.stores.memory.pending import PendingMemories
from engram.stores.memory.types import MemoryCandidate

pytestmark = pytest.mark.server

DOCS = REPO / "docs" / "api.md"
DOCS_URL = "http://localhost:2024"
DOCS_ID = "3f2c9a1e-8d36-482e-aae4-93a6d76d2f0d"
DOCS_PENDING_IDS = ("9b0e4c2d-6a71-5f3e-8c55-2d1f7a9e4b60", "5c8d2e7f-0b14-5a96-9d3e-7f21c4a8b053")
"""The example pending ids: the first is approved, the second dismissed."""
"""The memory id the docs' examples use; the test puts a real one in its place."""
ENGRAM = "from engram.graph.cli import main; main()"  # the `engram` console script


@pytest.fixture(scope="module")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LangGraphDev]:
    with langgraph_dev(tmp_path_factory.mktemp("engram-data")) as dev:
        yield dev


def engram(dev: LangGraphDev, *args: str) -> str:
    """`engram ...` in another process on the server's data folder; its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", ENGRAM, *args],
        env=dev.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_server_starts_without_a_traceback(dev: LangGraphDev) -> None:
    """A newcomer's first look at `langgraph dev` is its log: Starlette reads each route's
    docstring as YAML for the API schema, and one that did not parse printed a traceback."""
    log = (dev.data / "langgraph-dev.log").read_text()
    assert "Traceback" not in log and "Unable to parse docstring" not in log, log[-3000:]


def test_the_api_serves_what_other_processes_write_and_they_see_its_changes(
    dev: LangGraphDev,
) -> None:
    with httpx.Client(base_url=dev.url, headers={USER_HEADER: "alice"}, timeout=60) as api:
        dark = api.post("/api/memories", json={"text": "Alice prefers dark mode"})
        assert dark.status_code == 201, dark.text
        engram(dev, "memory", "add", "--user", "alice", "Alice works at Acme as a data engineer")
        listed = api.get("/api/memories").json()
        assert {m["content"] for m in listed["memories"]} == {
            "Alice prefers dark mode",
            "Alice works at Acme as a data engineer",
        }
        acme = next(m for m in listed["memories"] if "Acme" in m["content"])

        assert api.delete(f"/api/memories/{acme['id']}").json()["state"] == "forgotten"
        in_cli = json.loads(engram(dev, "memory", "list", "--user", "alice", "--json", "--all"))
        assert {m["id"]: m["forgotten"] for m in in_cli} == {
            dark.json()["memory"]["id"]: False,
            acme["id"]: True,
        }
        found = api.post("/api/memories/search", json={"query": "editor colour theme"}).json()
        assert found["results"][0]["memory"]["content"] == "Alice prefers dark mode"
        assert api.get("/api/memories/stats").json()["forgotten"] == 1
        assert "Alice prefers dark mode" in api.get("/api/memories/export").text

        as_bob = {USER_HEADER: "bob"}
        assert api.get(f"/api/memories/{acme['id']}", headers=as_bob).status_code == 404
        nobody = httpx.get(f"{dev.url}/api/memories", timeout=60)
        assert nobody.status_code == 401 and USER_HEADER in nobody.json()["detail"]
        page = httpx.get(f"{dev.url}/memories", timeout=60)
        assert (
            page.status_code == 200
            and "script-src 'sha256-" in page.headers["content-security-policy"]
        )


async def test_a_conversation_in_the_graph_shows_up_in_the_api(dev: LangGraphDev) -> None:
    graph = get_client(url=dev.url)
    thread = await graph.threads.create()
    context = {"user_id": "carol"}
    said = "I prefer answers in Portuguese."
    await graph.runs.wait(
        thread["thread_id"],
        "engram",
        input={"messages": [{"role": "user", "content": said}]},
        context=context,
    )
    await graph.runs.wait(
        thread["thread_id"], "engram", input={"end_session": True}, context=context
    )
    async with httpx.AsyncClient(base_url=dev.url, headers={USER_HEADER: "carol"}) as api:
        listed = (await api.get("/api/memories", timeout=60)).json()
    assert [(m["content"], m["source_thread_id"]) for m in listed["memories"]] == [
        (said, thread["thread_id"])
    ]


@pytest.mark.skipif(shutil.which("curl") is None, reason="the docs' examples use curl")
def test_the_curl_examples_of_the_docs_run_as_written(dev: LangGraphDev) -> None:
    """Every ```bash block of docs/api.md that calls the server, in order, with the server's
    URL for `localhost:2024` and a real memory id for the example one; a curl answered with an
    error status fails."""
    fenced = re.findall(r"^```bash\n(.*?)^```", DOCS.read_text(), re.DOTALL | re.MULTILINE)
    blocks = [b for b in fenced if DOCS_URL in b]
    assert len(blocks) >= 3
    with httpx.Client(base_url=dev.url, headers={USER_HEADER: "alice"}, timeout=60) as api:
        added = api.post("/api/memories", json={"text": "Alice prefers dark mode"}).json()
    waiting = _pending(dev, "Alice's sister lives in Porto", "Alice keeps her bike downstairs")
    for block in blocks:
        script = block.replace(DOCS_URL, dev.url).replace(DOCS_ID, added["memory"]["id"])
        for example, real in zip(DOCS_PENDING_IDS, waiting):
            script = script.replace(example, real)
        done = subprocess.run(
            [
                "bash",
                "-euo",
                "pipefail",
                "-c",
                'curl() { command curl --fail-with-body "$@"; }\n' + script,
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=dev.data,
        )
        assert done.returncode == 0, f"{block}\n{done.stdout}\n{done.stderr}"
    with httpx.Client(base_url=dev.url, headers={USER_HEADER: "alice"}, timeout=60) as api:
        assert api.get("/api/memories/pending").json()["pending"] == []
        assert "Alice's sister lives in Porto" in [
            m["content"] for m in api.get("/api/memories").json()["memories"]
        ]


def _pending(dev: LangGraphDev, *texts: str) -> list[str]:
    """Memories waiting for alice's approval, proposed from this process on the server's data
    folder, as the graph in confirmation mode would; their ids."""
    with ChromaStore(path=dev.data / "chroma", index=default_index()) as store:
        proposed = PendingMemories(store).propose(
            "alice", [MemoryCandidate(content=text, category="fact") for text in texts]
        )
    return [p.id for p in proposed]
