"""Chat models: loading one from a spec string, and the context windows of current ones.

`load_chat_model("openai:gpt-4o-mini")` (any `init_chat_model` spec) or
`load_chat_model("package.module:attr")` / `"path/to/file.py:attr"` (a chat model instance or a
zero-argument factory) is how Studio (`ENGRAM_MODEL`) and the CLI (`--model`) name models;
`load_chat_model_option` is the CLI's form, whose errors name the option. `local`, `local:0.5b`,
`local:1.5b` and `<file>.gguf` start a local llama.cpp server in-process
(`engram.graph.local_model`).

`context_window_for(model)` decides the token budget of a turn when `Context.context_window` is
None: the model's own LangChain profile (`max_input_tokens`) if it has one, else an Ollama
`num_ctx` setting, else this table (longest matching prefix of the model name), else 8192
(DESIGN "Defaults", seed 002).

The table holds native windows. A local server may serve a smaller one (Ollama's default `num_ctx`
is a few thousand tokens): set `Context.context_window` to what the server really accepts.

Example:
    >>> context_window_for_name("gpt-4o-mini-2024-07-18"), context_window_for_name("my-model")
    (128000, 8192)
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import sys
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel

from engram.graph.local_model import local_chat_model, parse_local_spec
from engram.nodes.failures import RECOVERABLE_ERRORS
from engram.nodes.respond import NoModelError

logger = logging.getLogger(__name__)

DEFAULT_CONTEXT_WINDOW = 8192
"""Window assumed for a model this module does not know (seed 002)."""

CONTEXT_WINDOWS: dict[str, int] = {
    # OpenAI
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "chatgpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4": 8_192,
    "gpt-3.5-turbo": 16_385,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    "gpt-oss": 131_072,
    # Anthropic
    "claude-": 200_000,
    # Google
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2": 1_048_576,
    "gemma2": 8_192,
    "gemma-2": 8_192,
    "gemma3": 131_072,
    "gemma-3": 131_072,
    # Meta
    "llama3": 8_192,
    "llama-3": 8_192,
    "llama3.1": 131_072,
    "llama-3.1": 131_072,
    "llama3.2": 131_072,
    "llama-3.2": 131_072,
    "llama3.3": 131_072,
    "llama-3.3": 131_072,
    "llama4": 1_048_576,
    "llama-4": 1_048_576,
    # Alibaba, Mistral, DeepSeek, Microsoft
    "qwen2.5": 32_768,
    "qwen3": 40_960,
    "mistral": 32_768,
    "mistral-large": 131_072,
    "mistral-small": 32_768,
    "mixtral": 32_768,
    "deepseek-chat": 65_536,
    "deepseek-reasoner": 65_536,
    "deepseek-r1": 131_072,
    "deepseek-v3": 131_072,
    "phi3": 4_096,
    "phi4": 16_384,
}
"""Native context windows in tokens, keyed by model-name prefix (lower case)."""

_NAME_ATTRIBUTES = ("model_name", "model", "model_id")


def model_name_of(model: Any) -> str | None:
    """The model name a LangChain chat model carries (`model_name`, `model` or `model_id`)."""
    for attribute in _NAME_ATTRIBUTES:
        value = getattr(model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return None


def context_window_for(model: Any) -> int:
    """The context window to budget for a chat model object (see the module docstring)."""
    profile = getattr(model, "profile", None)
    if isinstance(profile, dict) and isinstance(profile.get("max_input_tokens"), int):
        return profile["max_input_tokens"]
    num_ctx = getattr(model, "num_ctx", None)
    if isinstance(num_ctx, int) and num_ctx > 0:
        return num_ctx
    return context_window_for_name(model_name_of(model))


def context_window_for_name(name: str | None) -> int:
    """The window of a model name by the longest matching prefix in `CONTEXT_WINDOWS`.

    Provider and organisation prefixes are ignored: `openai:gpt-4o`, `meta-llama/Llama-3.1-8B`
    and `llama3.1:8b` all resolve.
    """
    if not name:
        return DEFAULT_CONTEXT_WINDOW
    bare = name.lower().rsplit("/", 1)[-1]
    for candidate in (bare, bare.split(":", 1)[-1]):
        matches = [prefix for prefix in CONTEXT_WINDOWS if candidate.startswith(prefix)]
        if matches:
            return CONTEXT_WINDOWS[max(matches, key=len)]
    return DEFAULT_CONTEXT_WINDOW


def load_chat_model(spec: str | None) -> BaseChatModel | None:
    """The chat model an `ENGRAM_MODEL`-style spec names (see the module docstring), or None.

    Raises:
        ValueError: The object path names something that is not a chat model.
    """
    if not spec:
        return None
    if parse_local_spec(spec) is not None:
        return local_chat_model(spec)
    source, _, attribute = spec.rpartition(":")
    if source.endswith(".py") or "." in source:
        found = getattr(_load_module(source), attribute)
        model = found if isinstance(found, BaseChatModel) else found()
        if not isinstance(model, BaseChatModel):
            raise ValueError(
                f"{spec!r} is not a chat model (got {type(model).__name__}): point it "
                "at a BaseChatModel instance or a factory returning one"
            )
        return model
    from langchain.chat_models import init_chat_model

    return init_chat_model(spec)


class UnavailableChatModel(BaseChatModel):
    """Stands in for a chat model whose spec did not load (Studio's `ENGRAM_MODEL` without its
    API key, say): the graph still loads, and every call raises `NoModelError` with `reason`.

    Example:
        >>> UnavailableChatModel(reason="set OPENAI_API_KEY").invoke("hi")
        Traceback (most recent call last):
        ...
        engram.nodes.respond.NoModelError: set OPENAI_API_KEY
    """

    reason: str

    @property
    def _llm_type(self) -> str:
        return "unavailable"

    def _generate(self, *args: Any, **kwargs: Any) -> Any:
        raise NoModelError(self.reason)


def load_studio_model(variable: str) -> BaseChatModel | None:
    """The chat model the environment variable `variable` names, for a server that must load
    whatever is set: a spec that does not load gives an `UnavailableChatModel` saying why and
    what to set, so the server starts and each run says it."""
    spec = os.environ.get(variable)
    try:
        return load_chat_model(spec)
    except LOAD_ERRORS as exc:
        reason = (
            f"{variable}={spec!r} could not be loaded ({type(exc).__name__}: {exc}). Set what it "
            f"needs (OPENAI_API_KEY for openai:... models) and restart, or run offline with "
            f"{variable}=local:0.5b"
        )
        logger.error("%s", reason)
        return UnavailableChatModel(reason=reason)


class ModelSpecError(ValueError):
    """A command-line model spec names no chat model that loads; the message says what to do."""


LOAD_ERRORS: tuple[type[BaseException], ...] = (
    ImportError,  # a missing integration package or module
    AttributeError,  # module:attr naming nothing
    TypeError,  # a factory that needs arguments
    *RECOVERABLE_ERRORS,  # unknown providers, missing API keys, files, connections
)
"""What loading a chat model from a spec raises when the spec (or its setup) is wrong."""


def load_chat_model_option(spec: str | None, option: str) -> BaseChatModel | None:
    """`load_chat_model` for a command-line option such as `--model`: None without a spec.

    Raises:
        ModelSpecError: The spec does not load (the message names the option and the cause).
    """
    try:
        return load_chat_model(spec)
    except LOAD_ERRORS as exc:
        raise ModelSpecError(
            f"{option} {spec!r}: cannot load this chat model ({type(exc).__name__}: {exc}). "
            "Use a provider:model spec such as openai:gpt-4o-mini (with its API key set), "
            "local / local:0.5b / local:1.5b / a .gguf path for a local llama.cpp model, or "
            "package.module:attr / path/to/file.py:attr naming a chat model or a factory."
        ) from exc


def _load_module(source: str):
    if not source.endswith(".py"):
        return importlib.import_module(source)
    path = Path(source).resolve()
    name = f"engram_studio_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ValueError(f"cannot load {source}: no such Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module
