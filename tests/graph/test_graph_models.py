"""Context windows: model profiles, Ollama's num_ctx, the table of current models, the default."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_openai import ChatOpenAI

from engram.graph.models import (
    DEFAULT_CONTEXT_WINDOW,
    context_window_for,
    context_window_for_name,
    model_name_of,
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
