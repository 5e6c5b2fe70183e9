"""Bounded memory-model calls: output limit, json_schema for OpenAI-compatible models, timeout."""

from __future__ import annotations

import asyncio
import time

import pytest
from fakes import StructuredFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from engram.nodes.model.calls import ModelOutputError, ainvoke_structured, call_timeout, limited


class Answer(BaseModel):
    text: str = Field(max_length=10)


def _openai(**kwargs) -> ChatOpenAI:
    return ChatOpenAI(base_url="http://127.0.0.1:9/v1", api_key="-", model="m", **kwargs)


def test_openai_compatible_models_get_an_output_limit_and_others_are_left_alone():
    assert limited(_openai(), 64).kwargs == {"max_tokens": 64}
    fake = StructuredFakeChatModel()
    assert limited(fake, 64) is fake


def test_the_call_timeout_is_the_models_own_when_it_has_one():
    assert call_timeout(_openai(timeout=7)) == 7.0
    assert call_timeout(_openai()) == 120.0
    assert call_timeout(StructuredFakeChatModel()) == 120.0


async def test_a_slow_call_times_out_instead_of_holding_the_node():
    async def slow(_):
        await asyncio.sleep(5)
        return Answer(text="late")

    began = time.perf_counter()
    with pytest.raises(TimeoutError):
        await ainvoke_structured(RunnableLambda(slow), Answer, [HumanMessage("hi")], timeout=0.2)
    assert time.perf_counter() - began < 2


async def test_an_answer_cut_at_the_output_limit_is_retried_once_then_rejected():
    calls = []

    def cut(messages):
        calls.append(messages)
        raw = AIMessage('{"text": "aaaa', response_metadata={"finish_reason": "length"})
        return {"raw": raw, "parsed": None, "parsing_error": None}

    with pytest.raises(ModelOutputError, match="cut off at the output limit"):
        await ainvoke_structured(RunnableLambda(cut), Answer, [HumanMessage("hi")])
    assert len(calls) == 2
    assert calls[1][-2].content == '{"text": "aaaa' and "shorter" in calls[1][-1].content
