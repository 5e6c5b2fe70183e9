"""Engram's per-run settings (`Context`) for agents whose context schema is not engram's own.

A `create_agent` agent has the app's `context_schema`; the middleware and the memory tools read
engram's settings from it: an engram `Context` is used as it is; any other context (a dataclass,
a pydantic model, a dict) lends the fields it shares with `Context` (`user_id`, `incognito`,
thresholds, ...) to the defaults; with none of them, `config["configurable"]["user_id"]` names
the user. The user id never comes from a model's tool arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from typing import Any

from engram.nodes.context import Context

_FIELDS = tuple(f.name for f in fields(Context))


def context_for_run(
    given: Any, defaults: Context | None = None, config: Mapping[str, Any] | None = None
) -> Context:
    """The engram settings of one run.

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
        >>> ctx = context_for_run(AppContext("alice"), Context(recall_k=3))
        >>> (ctx.user_id, ctx.recall_k)
        ('alice', 3)
        >>> context_for_run(None, config={"configurable": {"user_id": "bob"}}).user_id
        'bob'
    """
    if isinstance(given, Context):
        return given
    base = defaults if defaults is not None else Context()
    overrides = {name: value for name in _FIELDS if (value := _field(given, name)) is not None}
    if "user_id" not in overrides and config is not None:
        user_id = (config.get("configurable") or {}).get("user_id")
        if user_id is not None:
            overrides["user_id"] = user_id
    return replace(base, **overrides) if overrides else base


def _field(given: Any, name: str) -> Any:
    if given is None:
        return None
    if isinstance(given, Mapping):
        return given.get(name)
    return getattr(given, name, None)
