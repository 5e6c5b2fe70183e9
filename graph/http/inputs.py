"""What the memory API accepts: JSON bodies (`NewMemory`, `SearchRequest`) and query parameters,
checked before anything touches the store; anything else is an `ApiError` saying what to send.
"""

from __future__ import annotations

import json
from typing import Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from starlette.datastructures import QueryParams
from starlette.requests import Request

from engram.graph.http.errors import ApiError
from engram.stores.memory.categories import CATEGORIES, Category
from engram.stores.memory.content import MAX_CONTENT_CHARS

State = Literal["current", "forgotten", "superseded", "all"]
"""Which memories a list or search shows: current (recalled), forgotten (soft-deleted,
restorable), superseded (history) or all of them."""
STATES: tuple[str, ...] = get_args(State)
MAX_BODY_BYTES = 64 * 1024
"""The largest JSON body accepted; a memory holds at most 2,000 characters."""
MAX_LIMIT = 200
"""The most memories one page or search answers."""
MAX_OFFSET = 1_000_000
MAX_QUERY_CHARS = MAX_CONTENT_CHARS
DEFAULT_LIMIT = 50

M = TypeVar("M", bound=BaseModel)


class NewMemory(BaseModel):
    """A memory a person adds ("remember this"); it goes through the write policy."""

    model_config = ConfigDict(extra="forbid", strict=True)

    text: str
    """The memory, kept verbatim (at most 2,000 characters, with words in it)."""
    category: Category | None = None
    """None: guessed by the offline rules ("I prefer ..." is a preference), else `fact`."""
    importance: float | None = Field(default=None, ge=0.0, le=1.0)
    """0-1; None: the category's default."""
    key: str | None = Field(default=None, max_length=200)
    """An attribute slug (`preference.editor`): a later value with the same key supersedes."""


class SearchRequest(BaseModel):
    """A search ranked by relevance, nothing below the floor (not counted as a recall)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    query: str = Field(max_length=MAX_QUERY_CHARS)
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT)
    categories: list[Category] | None = None
    state: State = "current"

    @field_validator("query")
    @classmethod
    def _words(cls, query: str) -> str:
        if not query.strip():
            raise ValueError("the query is empty: write what to look for")
        return query


async def json_body(request: Request, model: type[M]) -> M:
    """The request's JSON object as `model`.

    Raises:
        ApiError: The body is not `application/json` (415), larger than `MAX_BODY_BYTES` (413),
            not a JSON object (nested too deeply to read included), or not what `model`
            accepts (400).
    """
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != "application/json":
        raise ApiError(
            415,
            f"the body must be JSON: send it with Content-Type: application/json (got "
            f"{media_type or 'no Content-Type'})",
        )
    data = await _bounded_body(request)
    try:
        value = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"the body is not valid JSON ({exc}): send a JSON object") from None
    except RecursionError:
        raise ApiError(
            400, "the body nests arrays or objects too deeply to read: send a flat JSON object"
        ) from None
    if not isinstance(value, dict):
        raise ApiError(400, f"the body must be a JSON object, got {type(value).__name__}")
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        raise ApiError(400, validation_detail(exc, model)) from None


def validation_detail(
    exc: ValidationError, model: type[BaseModel] | None = None, *, where: bool = True
) -> str:
    """What pydantic refused, one clause per error (each after its field, unless not `where`),
    then the fields `model` accepts."""
    clauses = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        clauses.append(f"{field}: {message}" if field and where else message)
    fields = f" (fields: {', '.join(model.model_fields)})" if model is not None else ""
    return "; ".join(clauses) + fields


def paging(params: QueryParams) -> tuple[int, int]:
    """`limit` (1 to `MAX_LIMIT`, default `DEFAULT_LIMIT`) and `offset` (0 or more).

    Raises:
        ApiError: Either is not a whole number in its range (400).
    """
    return (
        _whole_number(params, "limit", DEFAULT_LIMIT, 1, MAX_LIMIT),
        _whole_number(params, "offset", 0, 0, MAX_OFFSET),
    )


def categories(params: QueryParams) -> list[Category]:
    """The `category` parameters (repeatable); none means every category.

    Raises:
        ApiError: An unknown category (400).
    """
    found = params.getlist("category")
    for value in found:
        if value not in CATEGORIES:
            raise ApiError(400, f"unknown category {value!r}: use one of {', '.join(CATEGORIES)}")
    return found  # type: ignore[return-value]


def state(params: QueryParams) -> State:
    """The `state` parameter (default `current`).

    Raises:
        ApiError: Not one of `STATES` (400).
    """
    value = params.get("state", "current")
    if value not in STATES:
        raise ApiError(400, f"unknown state {value!r}: use one of {', '.join(STATES)}")
    return value  # type: ignore[return-value]


def text_filter(params: QueryParams) -> str:
    """The `q` parameter: text the listed memories must contain (any case); empty for all.

    Raises:
        ApiError: Longer than `MAX_QUERY_CHARS` (400).
    """
    value = params.get("q", "").strip()
    if len(value) > MAX_QUERY_CHARS:
        raise ApiError(400, f"q is {len(value)} characters; at most {MAX_QUERY_CHARS}")
    return value


def flag(params: QueryParams, name: str) -> bool:
    """A true/false parameter (absent: false).

    Raises:
        ApiError: Any other value (400).
    """
    value = params.get(name, "false").lower()
    if value not in ("true", "false", "1", "0"):
        raise ApiError(400, f"{name} must be true or false, got {params.get(name)!r}")
    return value in ("true", "1")


async def _bounded_body(request: Request) -> bytes:
    too_large = ApiError(
        413,
        f"the body is larger than {MAX_BODY_BYTES} bytes; a memory holds at most "
        f"{MAX_CONTENT_CHARS} characters",
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise too_large
    data = bytearray()
    async for chunk in request.stream():
        data += chunk
        if len(data) > MAX_BODY_BYTES:
            raise too_large
    return bytes(data)


def _whole_number(params: QueryParams, name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    digits = raw.strip()
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 9) or not (
        low <= int(digits) <= high
    ):
        raise ApiError(400, f"{name} must be a whole number from {low} to {high}, got {raw!r}")
    return int(digits)
