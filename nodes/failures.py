"""What a node may survive, and how it records it in `state["failures"]`.

Nodes never catch `Exception` wholesale (that would swallow LangGraph's interrupts); they catch
the errors below, which is what a chat model, an embedder or a store raises when it is down,
slow, or returns something unusable.
"""

from __future__ import annotations

import logging

import httpx
import openai
from chromadb.errors import ChromaError

from engram.stores.secrets import redact

logger = logging.getLogger(__name__)

RECOVERABLE_ERRORS: tuple[type[BaseException], ...] = (
    OSError,  # connection errors, requests' and aiohttp's errors
    TimeoutError,
    RuntimeError,
    ValueError,  # also pydantic's ValidationError and json's JSONDecodeError
    LookupError,
    ChromaError,
    httpx.HTTPError,
    openai.OpenAIError,
)
"""Errors of models, embedders and stores that a turn works around instead of failing."""


def record_failure(stage: str, exc: BaseException) -> dict[str, str]:
    """Log a worked-around failure and return its `state["failures"]` entry.

    Args:
        stage: Where it happened: "recall", "summarize", "archive", "extract", "store"...
        exc: The error that was caught.
    """
    # An error may quote its input (pydantic does): the entry is checkpointed, so no secrets.
    error = redact(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__).text
    logger.warning("%s failed, the turn goes on without it: %s", stage, error)
    return {"stage": stage, "error": error}
