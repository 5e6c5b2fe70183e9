"""engram deployed for many users as docs/api.md's "Serving many users" shows it: `langgraph dev`
with the documented langgraph.json and auth.py (the graph, the ChromaStore factory, the memory
API and page) plus a `create_agent` agent with engram's middleware and memory tools, as an app
serves one. Two users sign in, alice and bob, and bob tries every way into alice's memories and
threads: a run naming her, her thread, the store API, the memory API, Studio's login header
without credentials, forms and fetches from another origin in Chromium. Afterwards nothing of
alice's reached bob, nothing of hers changed, and what she deleted is in no file of the data
folder.
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import files_holding, free_port
from langgraph_dev import REPO, LangGraphDev, langgraph_dev

pytestmark = pytest.mark.server

DOCS = REPO / "docs" / "api.md"
ALICE = {"Authorization": "Bearer token-alice"}
BOB = {"Authorization": "Bearer token-bob"}
CHROMIUM = Path("/usr/bin/chromium")
AGENT = REPO / "tests" / "http" / "deployed_agent.py"


def documented_files() -> tuple[dict[str, Any], str]:
    """langgraph.json and auth.py as the "Serving many users" section of docs/api.md shows
    them."""
    section = DOCS.read_text().split("## Serving many users", 1)[1].split("\n## ", 1)[0]
    config = re.search(r"```json\n(.*?)```", section, re.S).group(1)
    auth = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    return json.loads(config), auth


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LangGraphDev]:
    """The documented deployment in a folder of its own: the repository's files by their
    absolute paths (the documented `./` is the repository, where the server runs), auth.py
    beside the config, and the agent as a second graph."""
    folder = tmp_path_factory.mktemp("deployment")
    config, auth = documented_files()
    (folder / "auth.py").write_text(auth)

    def in_repo(path: str) -> str:
        return str(REPO / path[2:]) if path.startswith("./") else path

    config["dependencies"] = [str(REPO)]
    config["auth"]["path"] = config["auth"]["path"].replace("./", f"{folder}/", 1)
    config["graphs"] = {name: in_repo(path) for name, path in config["graphs"].items()}
    config["graphs"]["agent"] = f"{AGENT}:agent"
    config["store"]["path"] = in_repo(config["store"]["path"])
    config["http"]["app"] = in_repo(config["http"]["app"])
    (folder / "langgraph.json").write_text(json.dumps(config))
    data = folder / "data"
    data.mkdir()
    agent_model = {"ENGRAM_AGENT_MODEL": "tests/fakes.py:studio_agent_model"}
    with langgraph_dev(data, config=folder / "langgraph.json", graph_env=agent_model) as dev:
        yield dev


@pytest.fixture(scope="module")
def client(deployment: LangGraphDev) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=deployment.url, timeout=120) as client:
        yield client


def run(
    client: httpx.Client,
    who: dict[str, str],
    thread_id: str,
    input: dict[str, Any],
    *,
    graph: str = "engram",
    **extra: Any,
) -> httpx.Response:
    """One run on a thread, waited for."""
    return client.post(
        f"/threads/{thread_id}/runs/wait",
        headers=who,
        json={"assistant_id": graph, "input": input, **extra},
    )


def say(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}]}


def new_thread(client: httpx.Client, who: dict[str, str]) -> str:
    answer = client.post("/threads", headers=who, json={})
    assert answer.status_code == 200, answer.text
    return answer.json()["thread_id"]


@pytest.fixture(scope="module")
def alice_thread(client: httpx.Client) -> str:
    """alice's conversation: two memories written by the graph, her session archived."""
    thread = new_thread(client, ALICE)
    said = run(client, ALICE, thread, say("I'm vegetarian and I live in Lisbon."))
    assert said.status_code == 200 and "__error__" not in said.json(), said.text
    assert run(client, ALICE, thread, {"end_session": True}).status_code == 200
    return thread


def alices_data(client: httpx.Client, thread: str) -> dict[str, Any]:
    """Everything of alice's that bob must neither see nor change, as alice reads it."""
    memories = client.get("/api/memories", params={"state": "all"}, headers=ALICE).json()
    stores = {
        root: client.post(
            "/store/items/search", headers=ALICE, json={"namespace_prefix": [root, "alice"]}
        ).json()["items"]
        for root in ("memories", "episodes", "threads")
    }
    state = client.get(f"/threads/{thread}/state", headers=ALICE).json()
    return {"memories": memories, "store": stores, "messages": state["values"]["messages"]}


def test_a_request_without_credentials_reaches_nothing(client: httpx.Client) -> None:
    studio_login = {"x-auth-scheme": "langsmith"}  # Studio's header: no credentials of ours
    for headers in ({}, studio_login, {"Authorization": "Bearer token-mallory"}):
        assert client.post("/threads", headers=headers, json={}).status_code == 401
        assert client.post("/threads/search", headers=headers, json={}).status_code == 401
        search = {"namespace_prefix": ["memories", "alice"]}
        assert client.post("/store/items/search", headers=headers, json=search).status_code == 401
        assert client.get("/api/memories", headers=headers).status_code == 401


def test_bob_reaches_nothing_of_alices(client: httpx.Client, alice_thread: str) -> None:
    before = alices_data(client, alice_thread)
    assert {m["content"] for m in before["memories"]["memories"]} >= {"I live in Lisbon."}
    assert before["store"]["episodes"]  # her session is archived
    bob_thread = new_thread(client, BOB)

    # a run naming alice: refused, with why, before it reads or writes anything
    for naming_alice in ({"context": {"user_id": "alice"}},
                         {"config": {"configurable": {"user_id": "alice"}}}):
        for graph in ("engram", "agent"):
            refused = run(client, BOB, bob_thread, say("What do I eat?"), graph=graph,
                          **naming_alice)
            error = refused.json()["__error__"]
            assert error["error"] == "UserMismatchError", refused.text
            assert "authenticated as 'bob'" in error["message"]

    # alice's thread: as if it did not exist
    assert run(client, BOB, alice_thread, say("hi")).status_code == 404
    assert run(client, BOB, alice_thread, say("hi"), graph="agent").status_code == 404
    assert client.get(f"/threads/{alice_thread}", headers=BOB).status_code == 404
    assert client.get(f"/threads/{alice_thread}/state", headers=BOB).status_code == 404
    assert client.post(f"/threads/{alice_thread}/history", headers=BOB, json={}).status_code == 404
    patched = client.patch(f"/threads/{alice_thread}", headers=BOB, json={"metadata": {"x": 1}})
    assert patched.status_code == 404
    assert client.delete(f"/threads/{alice_thread}", headers=BOB).status_code == 404
    listed = client.post("/threads/search", headers=BOB, json={"limit": 100}).json()
    assert bob_thread in {t["thread_id"] for t in listed}
    assert {t["metadata"]["owner"] for t in listed} == {"bob"}

    # bob's own runs: his user, his memories only (the agent's memory tool searches them)
    answer = run(client, BOB, bob_thread, say("I keep bees on my roof."))
    assert "__error__" not in answer.json(), answer.text
    agent = run(client, BOB, new_thread(client, BOB), say("What do I eat?"), graph="agent")
    tool_said = [m["content"] for m in agent.json()["messages"] if m["type"] == "tool"]
    assert tool_said and not any("Lisbon" in said or "vegetarian" in said for said in tool_said)

    # the store API: only namespaces that name bob
    def store(method: str, path: str, **kwargs: Any) -> httpx.Response:
        return client.request(method, f"/store{path}", headers=BOB, **kwargs)

    alices = ["memories", "alice"]
    memory_id = before["store"]["memories"][0]["key"]
    assert store("POST", "/items/search", json={"namespace_prefix": alices}).status_code == 403
    assert store("POST", "/items/search", json={"namespace_prefix": []}).status_code == 403
    narrowed = store("POST", "/items/search", json={"namespace_prefix": ["memories"]}).json()
    assert all(i["namespace"][1] == "bob" for i in narrowed["items"])
    assert all(ns[1] == "bob" for ns in store("POST", "/namespaces", json={}).json()["namespaces"])
    planted = {"namespace": alices, "key": "x", "value": {"content": "I work at Mallory Corp"}}
    assert store("PUT", "/items", json=planted).status_code == 403
    assert store("GET", "/items", params={"namespace": "memories.alice", "key": memory_id}
                 ).status_code == 403
    assert store("DELETE", "/items", json={"namespace": alices, "key": memory_id}
                 ).status_code == 403
    wildcard = store("POST", "/namespaces", json={"prefix": ["memories", "*"]})
    assert wildcard.status_code == 403
    # his own thread registry would make alice's thread his to delete with his user
    registry = {"namespace": ["threads", "bob"], "key": alice_thread, "value": {"thread_id": "x"}}
    assert store("PUT", "/items", json=registry).status_code == 403
    # his own thread cannot be handed to alice's thread list
    handed = client.patch(f"/threads/{bob_thread}", headers=BOB,
                          json={"metadata": {"owner": "alice"}})
    assert handed.status_code == 200 and handed.json()["metadata"]["owner"] == "bob"

    # the memory API: his own memories; naming alice is refused
    named = client.get("/api/memories", headers={**BOB, "X-Engram-User": "alice"})
    assert named.status_code == 403
    bobs = client.get("/api/memories", params={"state": "all"}, headers=BOB).json()
    assert bobs["user"] == "bob"
    bobs_episodes = store("POST", "/items/search", json={"namespace_prefix": ["episodes", "bob"],
                                                         "limit": 100}).json()["items"]
    everything_of_bob = json.dumps([bobs, bobs_episodes, agent.json(), answer.json()])
    assert "Lisbon" not in everything_of_bob and "vegetarian" not in everything_of_bob

    assert alices_data(client, alice_thread) == before


def test_pages_of_another_origin_change_and_read_nothing(
    deployment: LangGraphDev, client: httpx.Client, alice_thread: str
) -> None:
    """alice is signed in with a session cookie; a page on another origin of the same site
    (another port of 127.0.0.1: same-site, so the cookie goes with its requests) submits
    forms and calls fetch."""
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian's chromium package)")
    from playwright.sync_api import sync_playwright

    lisbon = next(
        m for m in client.get("/api/memories", headers=ALICE).json()["memories"]
        if "Lisbon" in m["content"]
    )
    assert client.delete(f"/api/memories/{lisbon['id']}", headers=ALICE).status_code == 200
    before = alices_data(client, alice_thread)
    with _page_server(_attack_page(deployment.url, lisbon["id"])) as attacker:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
            try:
                context = browser.new_context()
                context.add_cookies([{"name": "session", "value": "token-alice",
                                      "url": deployment.url, "sameSite": "Lax"}])
                page = context.new_page()
                page.goto(f"{attacker}/fetches")
                page.wait_for_function("document.title.startsWith('done')", timeout=60_000)
                fetched = json.loads(page.title().removeprefix("done "))
                for form in ("restore", "add", "run"):
                    page.goto(f"{attacker}/{form}")
                    page.wait_for_load_state("load")
                    assert "Lisbon" not in page.content() and "created" not in page.content()
            finally:
                browser.close()
    assert fetched == {"read": "refused", "search": "refused", "restore": "refused"}
    assert alices_data(client, alice_thread) == before  # still forgotten, nothing added
    threads = client.post("/threads/search", headers=ALICE, json={"limit": 100}).json()
    assert not any("Mallory" in json.dumps(t.get("values")) for t in threads)
    assert client.post(f"/api/memories/{lisbon['id']}/restore", headers=ALICE).status_code == 200


def test_bad_input_is_refused_with_what_was_wrong(client: httpx.Client) -> None:
    nested = client.post("/api/memories", headers={**ALICE, "Content-Type": "application/json"},
                         content=b"[" * 30_000)
    assert nested.status_code == 400 and "nests" in nested.json()["detail"]
    cookie = {"Cookie": "session=token-alice"}  # what a browser adds by itself
    cross_site = {**cookie, "Sec-Fetch-Site": "cross-site"}
    refused = client.post("/runs/wait", headers=cross_site, json={"assistant_id": "engram"})
    assert refused.status_code == 403  # the documented authenticate: not from its own pages
    # behind it, the memory API refuses on its own what a form could send
    own_page = {**cookie, "Sec-Fetch-Site": "same-origin"}
    as_form = client.post("/api/memories", headers=own_page, data={"text": "planted by a form"})
    assert as_form.status_code == 403 and "Content-Type" in as_form.json()["detail"]
    elsewhere = {**own_page, "Origin": "http://evil.test"}
    from_elsewhere = client.post("/api/memories", headers=elsewhere, json={"text": "planted"})
    assert from_elsewhere.status_code == 403 and "origin" in from_elsewhere.json()["detail"]
    # the app's own front end, which langgraph.json's "cors" allows, may
    app_page = {**cookie, "Origin": "https://app.example.com"}
    added = client.post("/api/memories", headers=app_page, json={"text": "Alice grows figs"})
    assert added.status_code == 201, added.text


def test_what_alice_deletes_is_in_no_file(
    deployment: LangGraphDev, client: httpx.Client
) -> None:
    chroma = deployment.data / "chroma"

    # a thread: its archived messages go with it (the offline rules keep no memory of this);
    # deleting one of its runs leaves them
    thread = new_thread(client, ALICE)
    assert run(client, ALICE, thread, say("ha, the zyxquorble meme again")).status_code == 200
    assert run(client, ALICE, thread, {"end_session": True}).status_code == 200
    assert files_holding(chroma, "zyxquorble")
    [first_run, *_] = client.get(f"/threads/{thread}/runs", headers=ALICE).json()
    gone_run = client.delete(f"/threads/{thread}/runs/{first_run['run_id']}", headers=ALICE)
    assert gone_run.status_code in (200, 202, 204), gone_run.text
    assert files_holding(chroma, "zyxquorble")
    assert client.delete(f"/threads/{thread}", headers=ALICE).status_code in (200, 204)
    assert client.get(f"/threads/{thread}", headers=ALICE).status_code == 404
    assert files_holding(chroma, "zyxquorble") == []

    # a plain store delete
    note = {"namespace": ["notes", "alice"], "key": "n1", "value": {"content": "vortiplex note"}}
    assert client.put("/store/items", headers=ALICE, json=note).status_code == 204
    gone = client.request("DELETE", "/store/items", headers=ALICE,
                          json={"namespace": ["notes", "alice"], "key": "n1"})
    assert gone.status_code == 204 and files_holding(chroma, "vortiplex") == []

    # a memory and the older value it replaced
    for tea in ("jasminquux", "oolongquux"):
        added = client.post("/api/memories", headers=ALICE,
                            json={"text": f"My favourite tea is {tea}", "key": "preference.tea"})
        assert added.status_code == 201, added.text
    latest = added.json()
    assert latest["action"] == "superseded"
    deleted = client.delete(f"/api/memories/{latest['memory']['id']}",
                            params={"permanent": "true"}, headers=ALICE)
    assert deleted.status_code == 200
    assert files_holding(chroma, "jasminquux") == files_holding(chroma, "oolongquux") == []
    shown = client.get("/api/memories", params={"state": "all", "q": "tea"}, headers=ALICE)
    assert shown.json()["memories"] == []


# -- the attacker's pages -------------------------------------------------------------------------


def _attack_page(target: str, memory_id: str) -> dict[str, str]:
    """Pages another origin serves: two forms that submit themselves, and fetches with the
    browser's cookies that write what they could do into the title."""
    fetches = f"""<script>
    async function attempt(url, options) {{
      try {{ const r = await fetch(url, {{credentials: "include", ...options}});
             return "answered " + r.status + " " + (await r.text()).slice(0, 80); }}
      catch (e) {{ return "refused"; }}
    }}
    (async () => {{
      const json = {{"Content-Type": "application/json"}};
      const result = {{
        read: await attempt("{target}/api/memories"),
        search: await attempt("{target}/store/items/search", {{method: "POST", headers: json,
                               body: JSON.stringify({{namespace_prefix: ["memories", "alice"]}})}}),
        restore: await attempt("{target}/api/memories/{memory_id}/restore",
                               {{method: "POST", headers: json}}),
      }};
      document.title = "done " + JSON.stringify(result);
    }})();
    </script>"""

    def form(action: str, json_object: dict[str, Any]) -> str:
        """A text/plain form whose body (`name=value`) is `json_object` with one more field."""
        name, value = json.dumps(json_object)[:-1] + ', "x": "', '"}'
        return (f'<form method="post" action="{target}{action}" enctype="text/plain">'
                f'<input name="{html.escape(name)}" value="{html.escape(value)}"></form>'
                "<script>document.forms[0].submit()</script>")

    said = {"messages": [{"role": "user", "content": "I work at Mallory Corp"}]}
    return {
        "/fetches": fetches,
        "/restore": form(f"/api/memories/{memory_id}/restore", {}),
        "/add": form("/api/memories", {"text": "planted by a form"}),
        "/run": form("/runs/wait", {"assistant_id": "engram", "input": said}),
    }


class _Pages(BaseHTTPRequestHandler):
    pages: dict[str, str] = {}

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        body = self.pages.get(self.path, "").encode()
        self.send_response(200 if body else 404)
        self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def _page_server(pages: dict[str, str]) -> Iterator[str]:
    """An HTTP server on another port of 127.0.0.1 serving `pages`; yields its URL."""
    handler = type("Pages", (_Pages,), {"pages": pages})
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
