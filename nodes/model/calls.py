"""Bounded calls to the memory model: an output limit, a timeout, and one corrective retry.

Every model call engram makes for itself (summaries, extraction, compression) goes through here,
so that a small local model cannot run away (a JSON string repeated until the context is full)
and a slow one cannot hold a node for minutes:

- `limited(model, max_tokens)` binds an output limit to the calls of an OpenAI-compatible model;
- `structured(model, schema, max_tokens=...)` asks for structured output with the method that
  enforces the schema on OpenAI-compatible servers (`json_schema`: llama.cpp turns it into a
  grammar, so `maxLength`/`maxItems` bound the output); other chat models use their default;
- `ainvoke_structured(...)` runs it with a timeout; when the answer does not parse (or was cut at
  the output limit) it asks once more, showing the model its answer and the error, and then
  raises `ModelOutputError`. Callers fall back to the offline implementation for that input;
- `BoundedCall` puts the three together: the one building block of the compressor, the merge
  decider and the model extractors.

Every call goes through the model's sync API (`invoke`) on one of engram's call threads
(`acall_sync`), whatever loop or thread awaits it. A model's async HTTP client is bound to the
event loop it first ran on (langchain-openai shares one per base URL between model objects), so
engram never touches it: the answering model and the memory model can be one object, used by
the app on its own loop, by a sync `invoke` and by background work at once.

Example:
    >>> ModelOutputError("the answer was cut at 512 tokens").args[0]
    'the answer was cut at 512 tokens'
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from typing import Any, Generic, TypeVar

import openai
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import Runnable
from langgraph.constants import TAG_NOSTREAM
from pydantic import BaseModel

from engram.nodes.prompts import STRUCTURED_RETRY_PROMPT

CALL_TIMEOUT = 120.0
"""Seconds one memory-model call may take before it is abandoned, for a model that sets no
timeout of its own (see `call_timeout`)."""
RETRIES = 1
"""Corrective retries after an answer that does not parse."""
MAX_ECHO_CHARS = 1500
"""How much of an unusable answer is shown back to the model on the retry."""
CALL_THREADS = 4
"""Memory-model calls that may wait for an answer at once in one process; more queue."""

MEMORY_CALL_TAG = "engram:memory-model"
"""Tags every memory-model call (with LangGraph's no-stream tag), so a callback handler can tell
them from the answering model's calls."""
MEMORY_CALL_TAGS = [TAG_NOSTREAM, MEMORY_CALL_TAG]

LOCAL_MODEL_METADATA = "engram_local_model"
"""The metadata key `local_chat_model` sets on its models (the spec): engram's own small local
models, which review the rules' candidates rather than write memories."""

Schema = TypeVar("Schema", bound=BaseModel)
T = TypeVar("T")


class ModelOutputError(ValueError):
    """The memory model's answer was unusable (did not parse, was cut off) after the retry."""


def call_timeout(model: BaseChatModel) -> float:
    """Seconds per call: the model's own request timeout when it has a number (`ChatOpenAI(
    timeout=...)`; a local model sets it in `local_chat_model`), else `CALL_TIMEOUT`."""
    configured = getattr(model, "request_timeout", None)
    if isinstance(configured, int | float) and not isinstance(configured, bool) and configured > 0:
        return float(configured)
    return CALL_TIMEOUT


def limited(model: BaseChatModel, max_tokens: int) -> BaseChatModel:
    """`model` with an output limit on every call, for OpenAI-compatible models (a copy with
    `max_tokens` set, sharing the model's HTTP clients; a `bind` would be lost by
    `with_structured_output`, leaving the answering model's own limit); other models are
    returned as they are (callers still time out and truncate)."""
    if not _speaks_openai(model):
        return model
    return model.model_copy(update={"max_tokens": max_tokens})


def structured(model: BaseChatModel, schema: type[BaseModel], *, max_tokens: int,
               run_name: str) -> Runnable:
    """`schema`-shaped output from `model`, at most `max_tokens` tokens, never streamed.

    OpenAI-compatible models get `method="json_schema"` (function calling fails on llama.cpp's
    server, and JSON mode does not enforce enums or lengths); the answer comes back with its raw
    message so that a failed parse can be shown to the model.
    """
    if _speaks_openai(model):
        runnable = limited(model, max_tokens).with_structured_output(
            schema, method="json_schema", include_raw=True
        )
    else:
        runnable = model.with_structured_output(schema)
    return runnable.with_config(tags=MEMORY_CALL_TAGS, run_name=run_name)


async def ainvoke_structured(
    runnable: Runnable,
    schema: type[Schema],
    messages: Sequence[BaseMessage],
    *,
    timeout: float = CALL_TIMEOUT,
    retries: int = RETRIES,
) -> Schema:
    """Call `runnable` (from `structured`) and return the parsed `schema` object.

    Raises:
        ModelOutputError: The answer did not parse, also after `retries` corrective retries.
        TimeoutError: One call took longer than `timeout` seconds.
    """
    attempt = list(messages)
    for remaining in range(retries, -1, -1):
        try:
            result = await acall_sync(runnable.invoke, attempt, timeout=timeout)
            parsed, raw_text, error = _unpack(result, schema)
        except (ValueError, openai.LengthFinishReasonError) as exc:
            parsed, raw_text, error = None, "", _describe(exc)
        if parsed is not None:
            return parsed
        if remaining == 0:
            raise ModelOutputError(f"unusable answer from the memory model: {error}")
        attempt = [
            *messages,
            AIMessage(raw_text[:MAX_ECHO_CHARS] or "(no usable answer)"),
            HumanMessage(STRUCTURED_RETRY_PROMPT.format(error=error)),
        ]
    raise AssertionError("unreachable")  # pragma: no cover


async def acall_sync(
    call: Callable[[Any], T], arg: Any, *, timeout: float = CALL_TIMEOUT
) -> T:
    """`call(arg)` on one of engram's call threads, awaited from any loop (module docstring).

    The caller's context variables go along (the run's config, so its callbacks and tracing).
    A call that times out is abandoned: its thread ends when the model's own request does.

    Raises:
        TimeoutError: No answer within `timeout` seconds.

    Example:
        >>> asyncio.run(acall_sync(str.upper, "remember"))
        'REMEMBER'
    """
    context = contextvars.copy_context()
    future = _call_threads().submit(context.run, call, arg)
    return await asyncio.wait_for(asyncio.wrap_future(future), timeout)


class BoundedCall(Generic[Schema]):
    """A structured memory-model call: `schema`-shaped, at most `max_tokens` tokens, timed out,
    and retried once on an answer that does not parse.

    Args:
        model: The memory model; it must support `with_structured_output`.
        schema: The pydantic model of the answer; its docstring is what the model is asked.
        max_tokens: Output limit per call.
        run_name: The call's name in traces.
        timeout: Seconds per call (default: `call_timeout(model)`).
    """

    def __init__(
        self,
        model: BaseChatModel,
        schema: type[Schema],
        *,
        max_tokens: int,
        run_name: str,
        timeout: float | None = None,
    ) -> None:
        self.schema = schema
        self.runnable = structured(model, schema, max_tokens=max_tokens, run_name=run_name)
        self.timeout = timeout if timeout is not None else call_timeout(model)

    async def ainvoke(self, messages: Sequence[BaseMessage]) -> Schema:
        """The parsed answer to `messages`.

        Raises:
            ModelOutputError: The answer did not parse, also after the corrective retry.
            TimeoutError: One call took longer than the timeout.
        """
        return await ainvoke_structured(self.runnable, self.schema, messages, timeout=self.timeout)


def _unpack(result: Any, schema: type[Schema]) -> tuple[Schema | None, str, str]:
    """(parsed object or None, the raw answer's text, the error) of one structured answer."""
    raw_text = ""
    if isinstance(result, dict) and {"raw", "parsed"} <= result.keys():
        raw = result["raw"]
        raw_text = raw.text if isinstance(raw, BaseMessage) else ""
        finish = raw.response_metadata.get("finish_reason") if isinstance(raw, BaseMessage) else None
        if finish == "length":
            return None, raw_text, "the answer was cut off at the output limit: answer shorter"
        if result.get("parsing_error") is not None:
            return None, raw_text, _describe(result["parsing_error"])
        result = result["parsed"]
    if isinstance(result, dict):
        try:
            return schema.model_validate(result), raw_text, ""
        except ValueError as exc:
            return None, raw_text, _describe(exc)
    if isinstance(result, schema):
        return result, raw_text, ""
    return None, raw_text, f"expected {schema.__name__}, got {type(result).__name__}"


def _speaks_openai(model: BaseChatModel) -> bool:
    """An OpenAI-compatible chat model (`ChatOpenAI` and its subclasses, any `base_url`)."""
    return any(cls.__name__ == "BaseChatOpenAI" for cls in type(model).__mro__)


def _describe(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:500]}" if text else type(exc).__name__


@cache
def _call_threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(CALL_THREADS, thread_name_prefix="engram-model-call")
