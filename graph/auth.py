"""Authorization for engram served by a LangGraph server (`langgraph dev`, LangGraph Platform):
each signed-in user sees and changes only their own threads, runs and crons, and only the
store namespaces that name them.

LangGraph's `Auth` object answers two questions: who is asking (your `@auth.authenticate`
handler, which only you can write: it checks your tokens or cookies) and what they may do (its
`@auth.on` handlers). Without `@auth.on` handlers every signed-in user may read and change every
thread and every store item, another user's memories included. `authorize` registers the
handlers engram needs on your `Auth` object:

- **threads** (and the runs and state of a thread): a thread is created with its creator's id
  as the `owner` metadata, and every other action (read, update, delete, search, a new run) sees
  only the caller's own threads; another user's thread answers 404, as one that does not exist.
  Deleting a thread also deletes what engram kept of it in the store (its archived messages,
  offloaded tool results, background jobs and registry entry, purged from the data folder's
  files), as `engram.stores.memory.delete_thread` does; the memories extracted from it stay;
- **crons**: the same, by their `owner` metadata;
- **assistants**: anyone signed in may read and search them (the graph's own assistant has no
  owner), and create them; an assistant is changed or deleted only by whoever created it;
- **store**: engram keeps a user's data under namespaces whose second label is the user's
  (`("memories", <user>)`, `("episodes", <user>)`, ...; `engram.stores.namespaces`), so an item
  is put, read or deleted only in a namespace whose second label is the caller's; a search or a
  namespace listing with a shorter prefix is narrowed to the caller's own namespaces.

The graph itself then runs for the authenticated user (`engram.graph.run_context`: a run whose
context names another user is refused), and the memory API serves the authenticated user's
memories (`engram.graph.http.users`, with `"enable_custom_route_auth": true`).

In your auth module (langgraph.json's `"auth": {"path": "./auth.py:auth"}`):

    from langgraph_sdk import Auth

    from engram.graph.auth import authorize

    auth = authorize(Auth())

    @auth.authenticate
    async def authenticate(authorization: str | None) -> str:
        ...  # check the token; return the user's id

docs/api.md shows a whole deployment: the config, an `authenticate`, and what each user sees.
"""

from __future__ import annotations

from typing import Any

from langgraph_sdk import Auth

from engram.stores.memory.users import apurge_store, delete_thread_steps
from engram.stores.namespaces import (
    HASH_NAMESPACE,
    JOBS_NAMESPACE,
    JOURNAL_NAMESPACE,
    THREAD_NAMESPACE,
    user_id_problem,
    user_label,
)
from engram.stores.steps import arun_steps

OWNER = "owner"
"""The metadata key that records who created a thread, run, cron or assistant."""
BOOKKEEPING = (THREAD_NAMESPACE, HASH_NAMESPACE, JOBS_NAMESPACE, JOURNAL_NAMESPACE)
"""Namespace roots engram writes for itself: a client that wrote them could, say, list another
user's thread as its own so that deleting its user deleted that thread."""


def authorize(auth: Auth) -> Auth:
    """Register engram's authorization handlers on `auth` (see the module docstring); returns
    `auth`.

    Your own handlers for an action registered later replace engram's for that action (the
    most specific and most recent handler is the one LangGraph runs).
    """
    for action in ("create", "read", "update", "search", "create_run"):
        getattr(auth.on.threads, action)(_own)
    auth.on.threads.delete(_delete_thread)
    for action in ("create", "read", "update", "delete", "search"):
        getattr(auth.on.crons, action)(_own)
    auth.on.assistants.create(_own)
    auth.on.assistants.update(_own)
    auth.on.assistants.delete(_own)
    auth.on.assistants.read(_anyone)
    auth.on.assistants.search(_anyone)
    for action in ("put", "get", "delete", "search", "list_namespaces"):
        getattr(auth.on.store, action)(_own_namespaces)
    return auth


async def _own(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> Auth.types.FilterType:
    """Only the caller's own: what they create carries their id as its `owner`, and an update
    cannot give it to anyone else."""
    identity = _identity(ctx)
    if ctx.action in ("create", "create_run") or (
        ctx.action == "update" and isinstance(value.get("metadata"), dict)
    ):
        metadata = value.setdefault("metadata", {})  # in place: the server keeps this dict
        metadata[OWNER] = identity
    return {OWNER: identity}


async def _delete_thread(
    ctx: Auth.types.AuthContext, value: dict[str, Any]
) -> Auth.types.FilterType:
    """Only the caller's own threads (one, or many in a prune); engram's copies of them go
    first. They are the caller's own (namespaces that name them), so nothing of anyone else's
    is touched, whoever's thread an id turns out to be. Deleting one run of a thread is not
    deleting the thread: its copies stay."""
    only_own = await _own(ctx, value)
    if value.get("run_id") is not None:
        return only_own
    given = value.get("thread_ids") or [value.get("thread_id")]
    from langgraph_api.store import get_store  # the server's store: this runs in the server

    store = await get_store()
    deleted = 0
    for thread_id in (str(t) for t in given if t is not None):
        steps = delete_thread_steps(_identity(ctx), thread_id, registry=True)
        deleted += sum((await arun_steps(store, steps)).values())
    if deleted:
        await apurge_store(store)
    return only_own


async def _anyone(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    """Allowed to anyone signed in."""
    _identity(ctx)


async def _own_namespaces(ctx: Auth.types.AuthContext, value: dict[str, Any]) -> None:
    """Only namespaces whose second label is the caller's; a search or listing with a shorter
    prefix is narrowed to them. engram's own bookkeeping (the thread registry, the duplicate
    registry, background jobs, what maintenance changed) is read, never written, by clients."""
    label = user_label(_identity(ctx))
    namespace = tuple(value.get("namespace") or ())
    if ctx.action in ("put", "delete") and namespace[:1] and namespace[0] in BOOKKEEPING:
        raise Auth.exceptions.HTTPException(
            status_code=403,
            detail=f"namespace {list(namespace)} is engram's own bookkeeping: read it, but "
            "change memories through the memory API (/api/memories)",
        )
    if ctx.action == "list_namespaces" and len(namespace) < 2:
        value["namespace"] = (namespace[0] if namespace else "*", label)
        return
    if ctx.action == "search" and len(namespace) == 1:
        value["namespace"] = (namespace[0], label)
        return
    if len(namespace) < 2 or namespace[1] != label:
        raise Auth.exceptions.HTTPException(
            status_code=403,
            detail=(
                f"namespace {list(namespace)} is not yours: engram keeps each user's data under "
                f'namespaces whose second label is the user\'s own, e.g. ["memories", '
                f'"{label}"]'
            ),
        )


def _identity(ctx: Auth.types.AuthContext) -> str:
    identity = getattr(ctx.user, "identity", None)
    if not isinstance(identity, str) or not identity.strip():
        raise Auth.exceptions.HTTPException(
            status_code=401, detail="sign in: this deployment serves signed-in users only"
        )
    if (problem := user_id_problem(identity)) is not None:
        raise Auth.exceptions.HTTPException(
            status_code=403,
            detail=f"the authenticated identity {identity!r} {problem}, which is not a user id "
            "(never stripped, so that it is not taken for another user's): have the auth "
            "handler return the id without it",
        )
    return identity
