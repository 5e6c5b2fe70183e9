"""What a node may survive, and how it records it in `state["failures"]`.

Nodes never catch `Exception` wholesale (that would swallow LangGraph's interrupts); they catch
the errors below, which is what a chat model, an embedder or a store raises when it is down,
slow, or returns something unusable.
"""

from __future__ import annotations

import logging
import threading
import warnings

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

MODEL_STAGES = frozenset({"summarize", "extract", "merge_decision"})
"""Stages that are memory-model calls: when one fails, the offline built-ins do the work (a
summary that fails evicts nothing until the next try)."""


class MemoryModelFallbackWarning(UserWarning):
    """A memory-model call failed and engram fell back to its offline built-ins."""


def record_failure(stage: str, exc: BaseException) -> dict[str, str]:
    """Log a worked-around failure and return its `state["failures"]` entry.

    Args:
        stage: Where it happened: "recall", "summarize", "archive", "extract", "store"...
        exc: The error that was caught.
    """
    # An error may quote its input (pydantic does): the entry is checkpointed, so no secrets.
    error = redact(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__).text
    logger.warning("%s failed, the turn goes on without it: %s", stage, error)
    if stage in MODEL_STAGES:
        _warn_once(stage, error)
    return {"stage": stage, "error": error}


def _warn_once(stage: str, error: str) -> None:
    """A `MemoryModelFallbackWarning` the first time `stage` falls back in this process."""
    with _WARNED_LOCK:
        if stage in _WARNED:
            return
        _WARNED.add(stage)
    warnings.warn(
        f"the memory model's {stage} call failed ({error[:300]}), so engram's offline built-ins "
        "did this work. Check that the model's server answers (its base URL, API key and "
        "timeout; for a small local model raise ENGRAM_LOCAL_TIMEOUT). Every fallback is "
        "listed in the graph state's 'failures' and counted in eval reports; this warning is "
        "shown once per process.",
        MemoryModelFallbackWarning,
        stacklevel=3,
    )


_WARNED: set[str] = set()
_WARNED_LOCK = threading.Lock()
