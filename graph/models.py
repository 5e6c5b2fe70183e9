"""Chat models: loading one from a spec string, and the context windows of current ones.

`load_chat_model("openai:gpt-4o-mini")` (any `init_chat_model` spec) or
`load_chat_model("package.module:attr")` / `"path/to/file.py:attr"` (a chat model instance or a
zero-argument factory) is how Studio (`ENGRAM_MODEL`) and the CLI (`--model`) name models;
`load_chat_model_option` is the CLI's form, whose errors name the option. `local`, `local:0.5b`,
`local:1.5b` and `<file>.gguf` start a local llama.cpp server in-process
(`engram.graph.local_model`). The base URL of any OpenAI-compatible server (Ollama, vLLM,
llama-server), `http://host:port/v1`, names the server's first model, and
`http://host:port/v1#model` the named one (`base_url_chat_model`).

`context_window_for(model)` decides the token budget of a turn when `Context.context_window` is
None: the model's own LangChain profile (`max_input_tokens`) if it has one, else an Ollama
`num_ctx` setting, else this table (longest matching prefix of the model name), else 8192
(`DEFAULT_CONTEXT_WINDOW`).

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
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from langchain_core.language_models import BaseChatModel

from engram.graph.local_model import local_chat_model, parse_local_spec
from engram.nodes.failures import RECOVERABLE_ERRORS
from engram.nodes.respond import NoModelError

logger = logging.getLogger(__name__)

DEFAULT_CONTEXT_WINDOW = 8192
"""Window assumed for a model this module does not know: a small one, which most models have at
least, so that a turn for an unknown model errs on the short side."""

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
        BaseURLSpecError: The spec is a URL that names no OpenAI-compatible server.
        ValueError: The object path names something that is not a chat model.
    """
    if not spec:
        return None
    server = parse_base_url_spec(spec)
    if server is not None:
        return base_url_chat_model(*server)
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


BASE_URL_SCHEMES = ("http", "https")
"""The schemes of an OpenAI-compatible server's base URL spec."""

PLACEHOLDER_API_KEY = "unused"
"""The API key of a base URL spec without a key for it (`base_url_api_key`): local servers ignore it."""

DEFAULT_SERVED_MODEL = "default"
"""The model name asked for when the server does not list its models (llama-server ignores it)."""

MODEL_LIST_TIMEOUT = 10.0
"""Seconds to wait for a server's `GET /models` while a base URL spec loads."""

_BASE_URL_FORM = "http://host:port/v1, or http://host:port/v1#model to name the model"


class BaseURLSpecError(ValueError):
    """A model spec that is a URL but not an OpenAI-compatible server's base URL; the message
    says what was wrong and what to write."""


def parse_base_url_spec(spec: str | None) -> tuple[str, str | None] | None:
    """`(base URL, model name or None)` for an OpenAI-compatible server's base URL spec
    (`http://host:port/v1`, `https://...`, `...#model`); None for a spec that is no URL.

    Raises:
        BaseURLSpecError: A URL with no host, a scheme other than http(s), an empty model name
            after `#`, or a `.gguf` file's address.

    Example:
        >>> parse_base_url_spec("http://localhost:11434/v1#qwen2.5:1.5b")
        ('http://localhost:11434/v1', 'qwen2.5:1.5b')
        >>> parse_base_url_spec("http://127.0.0.1:8080/v1"), parse_base_url_spec("openai:gpt-4o")
        (('http://127.0.0.1:8080/v1', None), None)
    """
    if not spec or "://" not in spec:
        return None
    base_url, hash_sign, model = spec.partition("#")
    parts = urlsplit(base_url)
    if parts.scheme.lower() not in BASE_URL_SCHEMES:
        raise BaseURLSpecError(
            f"{spec!r}: an OpenAI-compatible server's base URL starts with http:// or https://, "
            f"not {parts.scheme}://; write {_BASE_URL_FORM}"
        )
    if not parts.hostname:
        raise BaseURLSpecError(f"{spec!r}: the URL names no host; write {_BASE_URL_FORM}")
    try:
        _ = parts.port  # raises on a port that is not a number
    except ValueError as exc:
        raise BaseURLSpecError(f"{spec!r}: {exc}; write {_BASE_URL_FORM}") from exc
    if parts.path.lower().endswith(".gguf"):
        raise BaseURLSpecError(
            f"{spec!r}: a .gguf file's URL is weights, not a server; download the file and give "
            "its path (my.gguf or local:/path/to/my.gguf), or write a server's base URL, "
            f"{_BASE_URL_FORM}"
        )
    if hash_sign and not model.strip():
        raise BaseURLSpecError(
            f"{spec!r}: the model name after '#' is empty; write {base_url}#<model>, or "
            f"{base_url} for the server's first model"
        )
    return base_url, (model.strip() if hash_sign else None)


def base_url_chat_model(base_url: str, model: str | None = None) -> BaseChatModel:
    """A `ChatOpenAI` on the OpenAI-compatible server at `base_url` (`http://host:port/v1`).

    Without `model`, the server's first listed model (`GET {base_url}/models`), or
    `DEFAULT_SERVED_MODEL` when it lists none. The API key is `base_url_api_key`'s. A window the listing reports (vLLM's `max_model_len`, llama.cpp's
    `n_ctx`) becomes the model's profile, so `context_window_for` budgets what the server
    accepts.
    """
    from langchain_openai import ChatOpenAI

    api_key = base_url_api_key(base_url)
    listed = _served_models(base_url, api_key)
    entry = next((m for m in listed if model is None or m["id"] == model), None)
    if model is None and entry is None:
        logger.warning("%s lists no model: asking it for %r", base_url, DEFAULT_SERVED_MODEL)
    if model is None:
        model = entry["id"] if entry else DEFAULT_SERVED_MODEL
    window = _served_window(entry)
    profile = {"max_input_tokens": window} if window else None
    return ChatOpenAI(base_url=base_url, model=model, api_key=api_key, profile=profile)


def base_url_api_key(base_url: str, env: Mapping[str, str] = os.environ) -> str:
    """The key sent to a base URL spec's server: `ENGRAM_BASE_URL_API_KEY`, else
    `OPENAI_API_KEY` when the server is the one that key is for (OpenAI's, or the host of
    `OPENAI_BASE_URL`) over https, else `PLACEHOLDER_API_KEY`: an OpenAI key is never sent to
    another server, nor in clear text.

    Example:
        >>> env = {"OPENAI_API_KEY": "sk-openai"}
        >>> base_url_api_key("https://api.openai.com/v1", env), base_url_api_key("https://gpu-box/v1", env)
        ('sk-openai', 'unused')
        >>> base_url_api_key("https://gpu-box/v1", {**env, "OPENAI_BASE_URL": "https://gpu-box/v1"})
        'sk-openai'
        >>> base_url_api_key("http://gpu-box:8000/v1", {**env, "ENGRAM_BASE_URL_API_KEY": "vllm-key"})
        'vllm-key'
    """
    if env.get("ENGRAM_BASE_URL_API_KEY"):
        return env["ENGRAM_BASE_URL_API_KEY"]
    parts = urlsplit(base_url)
    meant_for = {"api.openai.com", urlsplit(env.get("OPENAI_BASE_URL") or "").hostname}
    if env.get("OPENAI_API_KEY") and parts.scheme.lower() == "https" and parts.hostname in meant_for:
        return env["OPENAI_API_KEY"]
    return PLACEHOLDER_API_KEY


def _served_models(base_url: str, api_key: str) -> list[dict[str, Any]]:
    """The entries of the server's model list that have an id; [] when it cannot be read."""
    import httpx

    try:
        response = httpx.get(
            f"{base_url.rstrip('/')}/models",
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=MODEL_LIST_TIMEOUT,
        )
        response.raise_for_status()
        data = response.json().get("data")
    except (httpx.HTTPError, ValueError, AttributeError) as exc:
        logger.debug("cannot list the models of %s: %s", base_url, exc)
        return []
    if not isinstance(data, list):
        return []
    return [m for m in data if isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"]]


def _served_window(entry: dict[str, Any] | None) -> int | None:
    """The context window a model-list entry reports (vLLM, llama.cpp), if any."""
    if not entry:
        return None
    meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
    for value in (entry.get("max_model_len"), meta.get("n_ctx")):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


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
    except BaseURLSpecError as exc:
        reason = f"{variable}={exc}"
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
    except BaseURLSpecError as exc:
        raise ModelSpecError(f"{option} {exc}") from exc
    except LOAD_ERRORS as exc:
        raise ModelSpecError(
            f"{option} {spec!r}: cannot load this chat model ({type(exc).__name__}: {exc}). "
            "Use a provider:model spec such as openai:gpt-4o-mini (with its API key set), "
            "an OpenAI-compatible server's base URL such as http://localhost:8080/v1 (its "
            "first model; http://localhost:8080/v1#model names one), "
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
