"""Tool arguments a client got wrong, said plainly: one sentence per argument naming it, what it
was and what the tool's input schema expects, instead of pydantic's text (its type names, its
error codes and a link to its docs).

Example:
    >>> from pydantic import BaseModel, Field, ValidationError
    >>> class Args(BaseModel):
    ...     limit: int = Field(ge=1, le=20)
    >>> try:
    ...     Args(limit=0)
    ... except ValidationError as exc:
    ...     print(argument_problems(exc, Args.model_json_schema()))
    limit is 0: give a whole number from 1 to 20.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

_SHOWN_CHARS = 40
"""How much of a wrong value the sentence quotes."""


def argument_problems(error: ValidationError, schema: Mapping[str, Any]) -> str:
    """A sentence per argument `error` refused, saying what `schema` (the tool's input schema)
    expects of it."""
    properties = schema.get("properties", {})
    sentences = [
        f"{name} {_given(problem)}: give {expected(properties.get(name, {}))}."
        for problem in error.errors()
        for name in [".".join(str(part) for part in problem["loc"]) or "the arguments"]
    ]
    return " ".join(dict.fromkeys(sentences))


def expected(spec: Mapping[str, Any]) -> str:
    """What an argument's JSON schema accepts, in words: "a whole number from 1 to 20", "one
    of "fact", "goal", or leave it out"."""
    kinds = spec.get("anyOf", [spec])
    optional = any(kind.get("type") == "null" for kind in kinds)
    wanted = [kind for kind in kinds if kind.get("type") != "null"]
    words = " or ".join(_kind(kind) for kind in wanted) or "a value"
    return f"{words}, or leave it out" if optional else words


def _kind(spec: Mapping[str, Any]) -> str:
    if "enum" in spec:
        return "one of " + ", ".join(_json(value) for value in spec["enum"])
    kind = spec.get("type")
    if kind == "integer":
        return "a whole number" + _range(spec)
    if kind == "number":
        return "a number" + _range(spec)
    if kind == "string":
        return "a string"
    if kind == "boolean":
        return "true or false"
    return f"a {kind}" if kind else "a value"


def _range(spec: Mapping[str, Any]) -> str:
    low, high = spec.get("minimum"), spec.get("maximum")
    if low is not None and high is not None:
        return f" from {low} to {high}"
    if low is not None:
        return f" of at least {low}"
    return f" of at most {high}" if high is not None else ""


def _given(problem: Mapping[str, Any]) -> str:
    if problem["type"] == "missing":
        return "is missing"
    shown = _json(problem.get("input"))
    return f"is {shown if len(shown) <= _SHOWN_CHARS else shown[: _SHOWN_CHARS - 3] + '...'}"


def _json(value: Any) -> str:
    """`value` as the client wrote it: JSON."""
    return json.dumps(value, ensure_ascii=False, default=str)
