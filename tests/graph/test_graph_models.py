"""Context windows: model profiles, Ollama's num_ctx, the table of current models, the default.
Base URL specs of OpenAI-compatible servers: parsing, clear errors, and a real server answering.
"""

from __future__ import annotations

import re

import pytest
from conftest import free_port
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_openai import ChatOpenAI

from engram.graph.local_model import local_chat_model
from engram.graph.models import (
    DEFAULT_CONTEXT_WINDOW,
    DEFAULT_SERVED_MODEL,
    PLACEHOLDER_API_KEY,
    BaseURLSpecError,
    ModelSpecError,
    UnavailableChatModel,
    context_window_for,
    context_window_for_name,
    load_chat_model,
    load_chat_model_option,
    load_studio_model,
    model_name_of,
    parse_base_url_spec,
)


@pytest.mark.parametrize(
    ("name", "window"),
    [
        ("gpt-4o-mini-2024-07-18", 128_000),
        ("gpt-4o", 128_000),
        ("gpt-4-0613", 8_192),
        ("gpt-4.1-nano", 1_047_576),
        ("o3-mini", 200_000),
        ("o4-mini", 200_000),
        ("claude-sonnet-4-5-20250929", 200_000),
        ("llama3.1:8b", 131_072),
        ("meta-llama/Llama-3.1-8B-Instruct", 131_072),
        ("Qwen/Qwen2.5-7B-Instruct", 32_768),
        ("ollama:qwen3:8b", 40_960),
        ("my-finetune", DEFAULT_CONTEXT_WINDOW),
        (None, DEFAULT_CONTEXT_WINDOW),
    ],
)
def test_windows_by_longest_prefix(name: str | None, window: int) -> None:
    assert context_window_for_name(name) == window


def test_a_chat_model_object_names_its_model() -> None:
    openai = ChatOpenAI(model="gpt-4o-mini", api_key="unused")
    local = ChatOpenAI(model="llama3.1:8b", api_key="unused", base_url="http://127.0.0.1:11434/v1")
    assert model_name_of(openai) == "gpt-4o-mini"
    assert context_window_for(openai) == 128_000  # from its LangChain profile
    assert context_window_for(local) == 131_072  # no profile: the table
    assert model_name_of(GenericFakeChatModel(messages=iter(()))) is None
    assert context_window_for(GenericFakeChatModel(messages=iter(()))) == DEFAULT_CONTEXT_WINDOW


def test_an_ollama_num_ctx_setting_wins_over_the_table() -> None:
    class OllamaLike(GenericFakeChatModel):
        model: str = "llama3.1"
        num_ctx: int = 4096

    assert context_window_for(OllamaLike(messages=iter(()))) == 4096


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("http://localhost:11434/v1", ("http://localhost:11434/v1", None)),
        ("https://llm.example.com/v1/", ("https://llm.example.com/v1/", None)),
        ("HTTP://127.0.0.1:8080/v1#qwen2.5:1.5b", ("HTTP://127.0.0.1:8080/v1", "qwen2.5:1.5b")),
        ("http://[::1]:8000/v1#org/model-7b", ("http://[::1]:8000/v1", "org/model-7b")),
        ("openai:gpt-4o-mini", None),
        ("local:0.5b", None),
        ("my_pkg.models:chat", None),
        (None, None),
    ],
)
def test_base_url_specs_are_recognised(spec: str | None, parsed: tuple | None) -> None:
    assert parse_base_url_spec(spec) == parsed


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("http:///v1", r"the URL names no host; write http://host:port/v1"),
        ("http://:8080/v1", r"names no host; write http://host:port/v1, or .*#model"),
        ("ftp://host/v1", r"starts with http:// or https://, not ftp://; write http://host:port"),
        ("file:///srv/model", r"not file://; write http://host:port/v1"),
        ("http://host:port/v1", r"Port could not .*; write http://host"),
        (
            "http://localhost:8080/v1#",
            (
                r"the model name after '#' is empty; write http://localhost:8080/v1#<model>, "
                r"or http://localhost:8080/v1 for the server's first model"
            ),
        ),
        ("http://localhost:8080/v1#  ", r"model name after '#' is empty"),
        ("https://huggingface.co/Qwen/x/resolve/main/q.gguf", r"download the file and give its"),
    ],
)
def test_a_bad_base_url_says_what_was_wrong_and_what_to_write(spec: str, message: str) -> None:
    with pytest.raises(BaseURLSpecError, match=message):
        load_chat_model(spec)
    with pytest.raises(ModelSpecError, match=rf"^--judge {re.escape(repr(spec))}: .*{message}"):
        load_chat_model_option(spec, "--judge")


def test_studio_loads_a_bad_base_url_as_an_unavailable_model(monkeypatch) -> None:
    monkeypatch.setenv("ENGRAM_MODEL", "ftp://host/v1")
    model = load_studio_model("ENGRAM_MODEL")
    assert isinstance(model, UnavailableChatModel)
    assert model.reason.startswith("ENGRAM_MODEL='ftp://host/v1': an OpenAI-compatible server")


def test_a_server_that_lists_no_model_is_asked_for_the_default(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    base_url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens: the listing fails
    model = load_chat_model(base_url)
    assert isinstance(model, ChatOpenAI)
    assert (model.openai_api_base, model.model_name) == (base_url, DEFAULT_SERVED_MODEL)
    assert model.openai_api_key.get_secret_value() == PLACEHOLDER_API_KEY
    assert context_window_for(model) == DEFAULT_CONTEXT_WINDOW
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    named = load_chat_model(f"{base_url}#llama3.1:8b")
    assert (model_name_of(named), context_window_for(named)) == ("llama3.1:8b", 131_072)
    assert named.openai_api_key.get_secret_value() == PLACEHOLDER_API_KEY  # not over http
    monkeypatch.setenv("ENGRAM_BASE_URL_API_KEY", "sk-server")
    keyed = load_chat_model(f"{base_url}#llama3.1:8b")
    assert keyed.openai_api_key.get_secret_value() == "sk-server"


@pytest.mark.model
def test_a_base_url_spec_reaches_a_real_server(monkeypatch) -> None:
    """llama.cpp's OpenAI-compatible server, started in this process: the bare base URL takes
    the model it lists (and the window it serves), `#name` names one."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    base_url = local_chat_model("local:0.5b", threads=1, timeout=900).openai_api_base
    listed = load_chat_model_option(base_url, "--model")
    assert model_name_of(listed).endswith("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
    assert context_window_for(listed) == 8192  # the server's n_ctx, not the model's native 32k
    named = load_chat_model_option(f"{base_url}#qwen2.5-coder", "--judge")
    assert model_name_of(named) == "qwen2.5-coder"
    question = "What is the capital of France? Answer in one word."
    for model in (listed, named):
        answer = model.invoke(question, max_tokens=8, temperature=0.0, timeout=900)
        assert "paris" in answer.text.lower(), answer
