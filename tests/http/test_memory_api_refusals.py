"""What the memory API refuses, and how: whose memories a request may touch (another user's id
is 404), bad input as a 4xx JSON `detail` saying what to send, and people's text never served as
HTML."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from api_client import Api, memory_api
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials, AuthenticationBackend, SimpleUser
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection
from starlette.routing import Mount
from starlette.testclient import TestClient

from engram.graph.http import USER_HEADER, create_app
from engram.graph.http.page import PAGE_FILE
from engram.graph.http.users import header_allowed_by_default

XSS = '<img src=x onerror="alert(1)"><script>alert(2)</script> prefers dark mode'


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with memory_api(tmp_path) as api:
        yield api


def refused(response, status: int, *words: str) -> str:
    """The `detail` of a refusal with `status`, checked to be JSON and to hold `words`."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    detail = response.json()["detail"]
    assert all(w in detail for w in words), detail
    return detail


# -- whose memories -------------------------------------------------------------------------------


def test_another_users_memory_is_not_found(api: Api) -> None:
    alices = api.add("Alice keeps a zebra finch")
    as_bob = {USER_HEADER: "bob"}
    path = f"/api/memories/{alices['id']}"
    refused(api.client.get(path, headers=as_bob), 404, alices["id"])
    refused(api.client.delete(path, headers=as_bob), 404)
    refused(api.client.delete(path, params={"permanent": "true"}, headers=as_bob), 404)
    refused(api.client.post(f"{path}/restore", headers=as_bob), 404)
    assert api.client.get("/api/memories", headers=as_bob).json()["total"] == 0
    found = api.client.post("/api/memories/search", json={"query": "zebra"}, headers=as_bob)
    assert found.json()["results"] == []
    assert api.client.get(path).json()["state"] == "current"  # alice's, untouched


@pytest.mark.parametrize("user", ["*", "%2A", "al"])
def test_no_user_id_is_a_wildcard_or_a_prefix(api: Api, user: str) -> None:
    api.add("Alice keeps a zebra finch")
    assert api.client.get("/api/memories", headers={USER_HEADER: user}).json()["total"] == 0


@pytest.mark.parametrize("user", ["alice%20", "%20alice", "alice%0A"])
def test_a_user_id_with_whitespace_around_it_is_refused_not_stripped(api: Api, user: str) -> None:
    api.add("Alice keeps a zebra finch")
    refused = api.client.get("/api/memories", headers={USER_HEADER: user})
    assert refused.status_code == 400
    assert "starts or ends with whitespace: send it without that whitespace" in (
        refused.json()["detail"]
    )
    added = api.client.post("/api/memories", json={"text": "x y z"}, headers={USER_HEADER: user})
    assert added.status_code == 400
    assert api.client.get("/api/memories").json()["total"] == 1  # alice's, untouched


def test_a_user_id_of_any_characters_is_sent_percent_encoded(api: Api) -> None:
    api.add("张三喜欢深色模式", user="%E5%BC%A0%E4%B8%89")
    api.add("Owner of the 50% discount code", user="50%25off@example.com")
    assert (
        api.client.get("/api/memories", headers={USER_HEADER: "%E5%BC%A0%E4%B8%89"}).json()["user"]
        == "张三"
    )
    shown = api.client.get("/api/memories/stats", headers={USER_HEADER: "50%25off@example.com"})
    assert (shown.json()["user"], shown.json()["active"]) == ("50%off@example.com", 1)
    raw = api.client.get(
        "/api/memories", headers={USER_HEADER: "张三".encode()}
    )  # as curl sends it
    assert (raw.json()["user"], raw.json()["total"]) == ("张三", 1)


@pytest.mark.parametrize(
    ("headers", "status", "words"),
    [
        ({}, 401, (USER_HEADER,)),
        ({USER_HEADER: ""}, 400, ("empty",)),
        ({USER_HEADER: "   "}, 400, ("whitespace",)),
        ({USER_HEADER: "%FF"}, 400, ("UTF-8",)),
        ({USER_HEADER: "x" * 1001}, 400, ("longer",)),
    ],
)
def test_a_request_without_a_usable_user_is_refused(tmp_path, headers, status, words) -> None:
    with memory_api(tmp_path) as api:
        del api.client.headers[USER_HEADER]  # the client's own: alice
        refused(api.client.get("/api/memories", headers=headers), status, *words)


def test_without_local_development_the_header_names_nobody(tmp_path: Path) -> None:
    with memory_api(tmp_path, user_header=False) as api:
        refused(api.client.get("/api/memories"), 401, "enable_custom_route_auth")
        refused(api.client.get("/api/memories/stats"), 401)


def test_the_header_is_accepted_by_default_only_under_langgraph_dev_without_auth(
    monkeypatch,
) -> None:
    monkeypatch.delenv("LANGGRAPH_AUTH", raising=False)
    monkeypatch.delenv("LANGSMITH_LANGGRAPH_API_VARIANT", raising=False)
    assert not header_allowed_by_default()
    monkeypatch.setenv("LANGSMITH_LANGGRAPH_API_VARIANT", "local_dev")
    assert header_allowed_by_default()
    monkeypatch.setenv("LANGGRAPH_AUTH", '{"path": "./auth.py:auth"}')
    assert not header_allowed_by_default()


class _Tokens(AuthenticationBackend):
    """`Authorization: Bearer <name>` authenticates <name>; no header, nobody."""

    async def authenticate(self, conn: HTTPConnection):
        scheme, _, name = conn.headers.get("authorization", "").partition(" ")
        return (
            (AuthCredentials(["authenticated"]), SimpleUser(name)) if scheme == "Bearer" else None
        )


def test_an_authenticated_user_sees_only_their_own_memories(api: Api) -> None:
    """Behind authentication middleware (LangGraph's with `enable_custom_route_auth`, or your
    own app's), the authenticated identity is the user; the header cannot change it."""
    alices = api.add("Alice keeps a zebra finch")
    outer = Starlette(
        routes=[Mount("/", app=create_app(api.store, user_header=False))],
        middleware=[Middleware(AuthenticationMiddleware, backend=_Tokens())],
    )
    with TestClient(outer) as client:
        as_alice = {"Authorization": "Bearer alice"}
        listed = client.get("/api/memories", headers=as_alice).json()
        assert [m["id"] for m in listed["memories"]] == [alices["id"]]
        assert (
            client.get("/api/memories", headers={"Authorization": "Bearer bob"}).json()["total"]
            == 0
        )
        refused(client.get("/api/memories", headers={**as_alice, USER_HEADER: "bob"}), 403, "alice")
        assert client.get("/api/memories", headers={**as_alice, USER_HEADER: "alice"}).is_success
        refused(client.get("/api/memories", headers={USER_HEADER: "alice"}), 401)
        spaced = {"Authorization": "Bearer alice\t"}  # an identity "alice\t", not alice
        refused(client.get("/api/memories", headers=spaced), 403, "starts or ends with whitespace")


# -- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"category": "hobby"}, ("hobby", "preference, fact")),
        ({"state": "deleted"}, ("deleted", "current, forgotten, superseded, all")),
        ({"limit": "-1"}, ("limit", "1 to 200")),
        ({"limit": "0"}, ("limit",)),
        ({"limit": "100000"}, ("limit",)),
        ({"limit": "9" * 5000}, ("limit",)),
        ({"limit": "ten"}, ("limit",)),
        ({"offset": "-5"}, ("offset", "0 to")),
        ({"offset": "1e3"}, ("offset",)),
        ({"q": "x" * 2001}, ("q",)),
    ],
)
def test_bad_list_parameters_say_what_to_send(api: Api, params, words) -> None:
    refused(api.client.get("/api/memories", params=params), 400, *words)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"text": ""}, ("empty",)),
        ({"text": "   "}, ("whitespace",)),
        ({"text": "... !!!"}, ("no letters or digits",)),
        ({"text": "x" * 2001}, ("2001 characters", "2000")),
        ({}, ("text", "Field required")),
        ({"text": 42}, ("text",)),
        ({"text": "I like tea", "category": "hobby"}, ("category",)),
        ({"text": "I like tea", "importance": 2}, ("importance",)),
        ({"text": "I like tea", "categroy": "fact"}, ("categroy", "fields: text, category")),
    ],
)
def test_a_memory_that_cannot_be_stored_is_refused(api: Api, body, words) -> None:
    refused(api.client.post("/api/memories", json=body), 400, *words)
    assert api.client.get("/api/memories", params={"state": "all"}).json()["total"] == 0


def test_a_memory_that_is_only_a_secret_is_not_stored(api: Api) -> None:
    refused(
        api.client.post("/api/memories", json={"text": "sk-proj-4fJ9kLm2Qx7vR8tYzW3nB6cD1eH5gP0s"}),
        422,
        "secret",
    )


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"query": ""}, ("query", "empty")),
        ({"query": " \n"}, ("query", "empty")),
        ({"query": "tea", "limit": 0}, ("limit",)),
        ({"query": "tea", "limit": 201}, ("limit",)),
        ({"query": "tea", "categories": ["hobby"]}, ("categories",)),
        ({"query": "tea", "state": "gone"}, ("state",)),
        ({"query": "x" * 2001}, ("query",)),
    ],
)
def test_bad_searches_say_what_to_send(api: Api, body, words) -> None:
    refused(api.client.post("/api/memories/search", json=body), 400, *words)


def test_bodies_that_are_not_small_json_objects_are_refused(api: Api) -> None:
    post = api.client.post
    refused(post("/api/memories", content=b"text=hello"), 415, "application/json")
    json_type = {"Content-Type": "application/json"}
    refused(post("/api/memories", content=b"{not json", headers=json_type), 400, "not valid JSON")
    refused(post("/api/memories", content=b"\xff\xfe\x00", headers=json_type), 400, "JSON")
    refused(post("/api/memories", json=["I like tea"]), 400, "JSON object")
    big = b'{"text": "' + b"a" * 70_000 + b'"}'
    refused(post("/api/memories", content=big, headers=json_type), 413, "bytes")
    chunked = post("/api/memories", content=iter([big[:40_000], big[40_000:]]), headers=json_type)
    refused(chunked, 413)  # no Content-Length: counted while read


def test_a_permanent_flag_must_be_true_or_false(api: Api) -> None:
    memory = api.add("Alice keeps a zebra finch")
    path = f"/api/memories/{memory['id']}"
    refused(api.client.delete(path, params={"permanent": "yes please"}), 400, "true or false")
    assert api.client.get(path).json()["state"] == "current"


# -- people's text is data, never HTML ------------------------------------------------------------


def test_text_that_looks_like_html_comes_back_as_json_or_markdown_text(api: Api) -> None:
    memory = api.add(XSS)
    assert memory["content"] == XSS
    for response in (
        api.client.get("/api/memories"),
        api.client.get(f"/api/memories/{memory['id']}"),
        api.client.post("/api/memories/search", json={"query": "dark mode"}),
    ):
        assert response.headers["content-type"] == "application/json"
        assert response.headers["x-content-type-options"] == "nosniff"
    exported = api.client.get("/api/memories/export")
    assert exported.headers["content-type"].startswith("text/markdown")
    assert exported.headers["x-content-type-options"] == "nosniff"
    assert exported.headers["content-disposition"].startswith("attachment")


def test_the_page_inserts_text_only_and_runs_only_its_own_script(api: Api) -> None:
    page = api.client.get("/memories")
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'sha256-" in policy
    assert "unsafe-inline" not in policy
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
        assert sink not in page.text, f"{PAGE_FILE} uses {sink}"


# -- what a hostile client sends ------------------------------------------------------------------


def test_a_nul_in_the_user_id_is_a_user_of_its_own(api: Api) -> None:
    api.add("Alice keeps a zebra finch")
    with_nul = {USER_HEADER: "alice%00"}
    assert api.client.get("/api/memories", headers=with_nul).json()["user"] == "alice\x00"
    assert api.client.get("/api/memories", headers=with_nul).json()["total"] == 0
    added = api.client.post("/api/memories", json={"text": "Nul likes tea"}, headers=with_nul)
    assert added.status_code == 201, added.text
    assert [m["content"] for m in api.client.get("/api/memories").json()["memories"]] == [
        "Alice keeps a zebra finch"
    ]


def test_a_deeply_nested_body_is_refused(api: Api) -> None:
    deep = api.client.post(
        "/api/memories", content=b"[" * 30_000, headers={"Content-Type": "application/json"}
    )
    refused(deep, 400, "nests")


def test_an_item_that_is_not_a_memory_is_skipped_and_reported(api: Api) -> None:
    kept = api.add("Alice keeps a zebra finch")
    api.store.put(("memories", "alice"), "junk", {"content": 42, "planted": True})
    listed = api.client.get("/api/memories").json()
    assert [m["id"] for m in listed["memories"]] == [kept["id"]]
    assert listed["unreadable"] == ["junk"]
    stats = api.client.get("/api/memories/stats").json()
    assert (stats["memories"], stats["unreadable"]) == (1, 1)
    found = api.client.post("/api/memories/search", json={"query": "zebra finch"}).json()
    assert [r["memory"]["id"] for r in found["results"]] == [kept["id"]]
    assert api.client.get("/api/memories/export").status_code == 200


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [("POST", "", {"text": "Alice keeps a canary"}), ("POST", "/{id}/restore", None),
     ("DELETE", "/{id}", None)],
)
def test_a_change_a_form_could_send_is_refused(tmp_path: Path, method, path, body) -> None:
    """Behind a cookie login, what a form on another site can send changes nothing."""
    with memory_api(tmp_path, user_header=False) as api:
        outer = Starlette(
            routes=[Mount("/", app=api.client.app)],
            middleware=[Middleware(AuthenticationMiddleware, backend=CookieSession())],
        )
        browser = TestClient(outer, cookies={"session": "alice"})
        memory = browser.post("/api/memories", json={"text": "Alice keeps a zebra finch"})
        assert memory.status_code == 201, memory.text
        target = "/api/memories" + path.format(id=memory.json()["memory"]["id"])
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        refused(browser.request(method, target, content="text=x", headers=form), 403, "Content-Type")
        as_json = {"Content-Type": "application/json"}  # what a form cannot send
        other_site = {**as_json, "Origin": "http://evil.test"}
        refused(browser.request(method, target, json=body, headers=other_site), 403, "origin")
        assert browser.get("/api/memories").json()["total"] == 1  # nothing changed
        same_site = {**as_json, "Origin": "http://testserver"}
        assert browser.request(method, target, json=body, headers=same_site).status_code < 400


class CookieSession(AuthenticationBackend):
    """A session cookie that names the user, as a browser sends it by itself."""

    async def authenticate(self, conn: HTTPConnection):
        user = conn.cookies.get("session")
        return (AuthCredentials(["authenticated"]), SimpleUser(user)) if user else None
