"""engram's authorization handlers (`engram.graph.auth.authorize`) as LangGraph calls them: each
resource and action with a signed-in user. The whole deployment, served: test_deployment_auth."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from langgraph_sdk import Auth
from starlette.authentication import SimpleUser

from engram.graph.auth import OWNER, authorize

AUTH = authorize(Auth())


def handle(user: Any, resource: str, action: str, value: dict[str, Any]) -> Any:
    """What LangGraph does with an event: the most specific handler, awaited."""
    handler = AUTH._handlers[(resource, action)][-1]
    ctx = Auth.types.AuthContext(permissions=[], user=user, resource=resource, action=action)
    return asyncio.run(handler(ctx, value))


ALICE = SimpleUser("alice")


@pytest.mark.parametrize("action", ["create", "create_run"])
def test_what_a_user_creates_is_theirs(action: str) -> None:
    value: dict[str, Any] = {"metadata": {"topic": "cooking"}}
    assert handle(ALICE, "threads", action, value) == {OWNER: "alice"}
    assert value["metadata"] == {"topic": "cooking", OWNER: "alice"}
    given = {"metadata": {OWNER: "bob"}}  # a client cannot give the thread to someone else
    handle(ALICE, "threads", action, given)
    assert given["metadata"][OWNER] == "alice"


@pytest.mark.parametrize(("resource", "action"), [
    ("threads", "read"), ("threads", "update"), ("threads", "search"),
    ("crons", "read"), ("crons", "delete"), ("assistants", "update"), ("assistants", "delete"),
])
def test_everything_else_sees_only_their_own(resource: str, action: str) -> None:
    assert handle(ALICE, resource, action, {}) == {OWNER: "alice"}


def test_assistants_are_read_by_anyone_signed_in() -> None:
    assert handle(ALICE, "assistants", "read", {}) is None
    assert handle(ALICE, "assistants", "search", {}) is None


@pytest.mark.parametrize(("action", "namespace"), [
    ("put", ("memories", "bob")),
    ("get", ("memories", "bob")),
    ("delete", ("episodes", "bob")),
    ("search", ("memories", "bob")),
    ("search", ()),
    ("list_namespaces", ("memories", "*")),  # a wildcard is not the user's label
    ("put", ("memories",)),
    ("put", ("alice",)),  # langgraph's own examples put the user first: engram puts it second
    ("get", ("memories", "alice@example.com")),  # a label is never an id with a `.`
])
def test_a_namespace_that_does_not_name_the_user_is_refused(action, namespace) -> None:
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        handle(ALICE, "store", action, {"namespace": namespace})
    assert refused.value.status_code == 403 and '"memories", "alice"' in refused.value.detail


@pytest.mark.parametrize(("action", "given", "narrowed"), [
    ("search", ("memories",), ("memories", "alice")),
    ("list_namespaces", ("episodes",), ("episodes", "alice")),
    ("list_namespaces", None, ("*", "alice")),
])
def test_a_short_prefix_is_narrowed_to_the_users_own(action, given, narrowed) -> None:
    value = {"namespace": given}
    handle(ALICE, "store", action, value)
    assert value["namespace"] == narrowed


def test_the_user_id_is_labelled_as_engram_labels_it() -> None:
    email = SimpleUser("alice@example.com")
    handle(email, "store", "put", {"namespace": ("memories", "alice@example%2Ecom", "x")})
    studio = Auth.types.StudioUser("langgraph-studio-user", is_authenticated=True)
    with pytest.raises(Auth.exceptions.HTTPException):  # Studio's login is a user of its own
        handle(studio, "store", "search", {"namespace": ("memories", "alice")})


def test_a_request_without_an_identity_is_refused() -> None:
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        handle(SimpleUser(""), "threads", "read", {})
    assert refused.value.status_code == 401


def test_an_identity_with_whitespace_around_it_is_refused_not_stripped() -> None:
    with pytest.raises(Auth.exceptions.HTTPException) as refused:
        handle(SimpleUser("alice "), "store", "search", {"namespace": ("memories", "alice")})
    assert refused.value.status_code == 403
    assert "'alice ' starts or ends with whitespace" in refused.value.detail
