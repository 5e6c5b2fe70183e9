"""Which memories a model writes rest on the user's words (`engram.nodes.extract.grounding`)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from engram.nodes.extract.grounding import grounded, split_grounded
from engram.stores.memory.types import MemoryCandidate


def _memory(content: str, category: str = "fact", **more) -> MemoryCandidate:
    return MemoryCandidate(content=content, category=category, **more)


@pytest.mark.parametrize(
    ("user", "memory"),
    [
        ("im in München since march", "The user lives in Munchen"),  # accents folded
        ("my daughter Zoe starts school", "The user's daughter Zoë starts school"),
        ("we run postgres 15 on the big box", "The user runs PostgreSQL 15"),  # the number
        ("我住上海 爱喝绿茶", "用户住在上海，喜欢喝绿茶"),
        ("儿子十四了 上初二", "用户的儿子十四岁，上初二"),
    ],
)
def test_a_memory_in_other_words_that_keeps_a_word_of_the_user_is_grounded(user, memory) -> None:
    assert grounded(_memory(memory), [HumanMessage(user), AIMessage("Noted!")])


@pytest.mark.parametrize(
    ("user", "assistant", "memory"),
    [
        ("thanks, save that", "Sure.", "Este é o que você gostaria de salvar"),
        ("in paris for 3 days next week", "See the Louvre, Orsay and Sainte-Chapelle.",
         "The user will visit the Louvre, Orsay and Sainte-Chapelle"),
        ("ok", "Use ruff with line-length 100 and the black profile.",
         "The user formats with ruff, line-length 100, black profile"),
    ],
)
def test_a_memory_of_words_the_user_never_said_is_not(user, assistant, memory) -> None:
    assert not grounded(_memory(memory), [HumanMessage(user), AIMessage(assistant)])


def test_a_lesson_may_rest_on_the_assistants_words_the_user_confirmed() -> None:
    said = [AIMessage("Set HTTP_PROXY in the docker daemon.json"), HumanMessage("that worked!")]
    assert grounded(_memory("Setting HTTP_PROXY in daemon.json fixed docker pulls", "lesson"), said)
    assert not grounded(_memory("The user sets HTTP_PROXY in daemon.json", "preference"), said)


def test_a_paraphrase_with_no_word_of_the_user_is_dropped_as_the_docs_say() -> None:
    said = [HumanMessage("i don't eat meat"), AIMessage("Got it.")]
    assert not grounded(_memory("The user is vegetarian", "preference"), said)


def test_only_what_the_model_wrote_is_checked() -> None:
    said = [HumanMessage("thanks"), AIMessage("You're welcome.")]
    rules = _memory("Este é o que você gostaria de salvar")
    model = _memory("Este é o que você gostaria de salvar", written_by_model=True)
    assert split_grounded([rules, model], said) == ([rules], [model])
