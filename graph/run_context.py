"""Engram's per-run settings (`Context`) for agents whose context schema is not engram's own.

A `create_agent` agent has the app's `context_schema`; the middleware and the memory tools read
engram's settings from it: an engram `Context` is used as it is; any other context (a dataclass,
a pydantic model, a dict) lends the fields it shares with `Context` (`user_id`, `incognito`,
`recall`, ...) to the defaults; with none of them, `config["configurable"]["user_id"]` names
the user. The user id never comes from a model's tool arguments.

Under authentication (a LangGraph server with an auth handler, which puts the authenticated
user's identity in the run's config as `langgraph_auth_user_id`), the run acts for that
identity: a context naming no user (or `"default"`) gets it, and one naming anyone else is
refused with `UserMismatchError` before the run reads or writes anything. Without
authentication the context names the user freely: that mode is for trusted callers (your own
app's code), never for requests that a person controls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engram.nodes.context import DEFAULT_USER, Context

AUTH_USER_KEY = "langgraph_auth_user_id"
"""Where a LangGraph server puts the authenticated user's identity in a run's `configurable`
(clients cannot set it: the server strips it from what they send)."""

_FIELDS = tuple(Context.model_fields)


class UserMismatchError(ValueError):
    """A run names another user than the one its request authenticated: nothing was read or
    written. (A `ValueError`, so that a LangGraph server shows its message to the client.)"""


def context_for_run(
    given: Any, defaults: Context | None = None, config: Mapping[str, Any] | None = None
) -> Context:
    """The engram settings of one run, for its authenticated user when there is one.

    Args:
        given: The run's context (`runtime.context`): a `Context`, another object or mapping
            with some of `Context`'s fields, or None.
        defaults: Settings for the fields `given` does not have (default: `Context()`).
        config: The run's config, whose `configurable.user_id` is the user when `given`
            names none.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass
        ... class AppContext:
        ...     user_id: str
        ...     plan: str = "free"
        >>> ctx = context_for_run(AppContext("alice"), Context(recall={"k": 3}))
        >>> (ctx.user_id, ctx.recall.k)
        ('alice', 3)
        >>> context_for_run(None, config={"configurable": {"user_id": "bob"}}).user_id
        'bob'
        >>> signed_in = {"configurable": {AUTH_USER_KEY: "carol"}}
        >>> context_for_run(Context(), config=signed_in).user_id
        'carol'
        >>> context_for_run(Context(user_id="alice"), config=signed_in)
        Traceback (most recent call last):
        ...
        engram.graph.run_context.UserMismatchError: this run is authenticated as 'carol' ...

    Raises:
        UserMismatchError: The run is authenticated and its context names another user.
    """
    return _for_authenticated_user(_settings(given, defaults, config), config)


def authenticated_user(config: Mapping[str, Any] | None) -> str | None:
    """The identity the run's request authenticated (`AUTH_USER_KEY`); None without one.

    Example:
        >>> authenticated_user({"configurable": {AUTH_USER_KEY: "alice"}})
        'alice'
        >>> authenticated_user({"configurable": {AUTH_USER_KEY: ""}}) is None  # auth off
        True
    """
    identity = ((config or {}).get("configurable") or {}).get(AUTH_USER_KEY)
    return identity if isinstance(identity, str) and identity.strip() else None


def _settings(given: Any, defaults: Context | None, config: Mapping[str, Any] | None) -> Context:
    if isinstance(given, Context):
        return given
    base = defaults if defaults is not None else Context()
    overrides = {name: value for name in _FIELDS if (value := _field(given, name)) is not None}
    if "user_id" not in overrides and config is not None:
        user_id = (config.get("configurable") or {}).get("user_id")
        if user_id is not None:
            overrides["user_id"] = user_id
    return base.replace(**overrides) if overrides else base


def _for_authenticated_user(ctx: Context, config: Mapping[str, Any] | None) -> Context:
    identity = authenticated_user(config)
    if identity is None or ctx.user_id == identity:
        return ctx
    if ctx.user_id == DEFAULT_USER:
        return ctx.replace(user_id=identity)
    raise UserMismatchError(
        f"this run is authenticated as {identity!r} but its context names user "
        f"{ctx.user_id!r}: a run reads and writes only the memories of the user who signed in, "
        f"so nothing was done; leave user_id out of the context (or set it to {identity!r})"
    )


def _field(given: Any, name: str) -> Any:
    if given is None:
        return None
    if isinstance(given, Mapping):
        return given.get(name)
    return getattr(given, name, None)
