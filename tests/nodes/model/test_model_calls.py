"""Bounded memory-model calls: output limit, json_schema for OpenAI-compatible models, timeout."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest
from fakes import StructuredFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableLambda
from langchain_openai import ChatOpenAI
from pydantic import BaseModel, Field

from engram.nodes.model.calls import (
    BoundedCall,
    ModelOutputError,
    ainvoke_structured,
    call_timeout,
    limited,
)


class Answer(BaseModel):
    text: str = Field(max_length=10)


def _openai(**kwargs) -> ChatOpenAI:
    return ChatOpenAI(base_url="http://127.0.0.1:9/v1", api_key="-", model="m", **kwargs)


def test_openai_compatible_models_get_an_output_limit_and_others_are_left_alone():
    assert limited(_openai(), 64).max_tokens == 64
    fake = StructuredFakeChatModel()
    assert limited(fake, 64) is fake


def test_a_structured_call_sends_its_own_output_limit_not_the_answering_models():
    """One model object answers (short replies) and writes memory: the memory call's limit wins."""
    sent = []

    def handler(request: httpx.Request) -> httpx.Response:
        sent.append(json.loads(request.content))
        answer = {"role": "assistant", "content": '{"text": "ok"}'}
        return httpx.Response(200, json={
            "id": "1", "object": "chat.completion", "created": 0, "model": "m",
            "choices": [{"index": 0, "message": answer, "finish_reason": "stop"}],
        })

    model = _openai(max_tokens=32, http_client=httpx.Client(transport=httpx.MockTransport(handler)))
    call = BoundedCall(model, Answer, max_tokens=300, run_name="test")
    assert asyncio.run(call.ainvoke([HumanMessage("hi")])) == Answer(text="ok")
    assert [body.get("max_completion_tokens", body.get("max_tokens")) for body in sent] == [300]
    assert model.max_tokens == 32  # the answering model is left as it was


def test_the_call_timeout_is_the_models_own_when_it_has_one():
    assert call_timeout(_openai(timeout=7)) == 7.0
    assert call_timeout(_openai()) == 120.0
    assert call_timeout(StructuredFakeChatModel()) == 120.0


async def test_a_slow_call_times_out_instead_of_holding_the_node():
    def slow(_):  # memory-model calls go through the sync API, on engram's call threads
        time.sleep(3)
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
