"""How the memory API answers: JSON that a browser never reads as HTML, and errors as
`{"detail": "<what was wrong and what to do>"}` with a 4xx or 503 status.

Each endpoint is wrapped by `answers_json`, which turns an `ApiError` (bad input, no such memory,
no user) into its JSON answer, and a store that cannot answer (the data folder's lock timing out,
the embedding model missing) into a 503 that says what to do. The app adds no exception handlers
of its own: under `langgraph dev` it becomes the server's app, and handlers would apply to the
server's routes too.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from engram.stores.embeddings import EmbeddingModelNotFoundError

logger = logging.getLogger(__name__)

PRIVATE_HEADERS = {"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff"}
"""Sent with every answer: a person's memories are not cached, and no browser guesses that a
JSON or Markdown answer holding their text is HTML."""

Endpoint = Callable[[Request], Awaitable[Response]]


class ApiError(Exception):
    """A request the API refuses; `detail` says what was wrong and what to do.

    Args:
        status: The HTTP status (400 bad input, 401 no user, 403 another user, 404 not found,
            413 too large, 415 not JSON, 422 nothing to store).
        detail: One or two sentences for the person or program that sent the request.
    """

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail


def json_answer(data: Any, status: int = 200) -> JSONResponse:
    """`data` as JSON (UTF-8, not ASCII-escaped), with `PRIVATE_HEADERS`."""
    return JSONResponse(data, status_code=status, headers=PRIVATE_HEADERS)


def answers_json(endpoint: Endpoint) -> Endpoint:
    """`endpoint`, answering its `ApiError`s and what a store that cannot answer raises as JSON."""

    @functools.wraps(endpoint)
    async def answer(request: Request) -> Response:
        try:
            return await endpoint(request)
        except ApiError as exc:
            return json_answer({"detail": exc.detail}, exc.status)
        except EmbeddingModelNotFoundError as exc:
            logger.warning("memory API: %s", exc)
            return json_answer({"detail": str(exc)}, 503)
        except TimeoutError as exc:
            logger.warning("memory API: %s", exc)
            detail = f"the engram data could not be used ({exc}); nothing was changed: try again"
            return json_answer({"detail": detail}, 503)

    # Starlette's schema generator reads an endpoint's docstring as YAML (a colon in prose made
    # `langgraph dev` print a traceback); the docstring stays on `answer.__wrapped__`
    answer.__doc__ = None
    return answer
