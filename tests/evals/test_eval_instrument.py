"""`RunRecorder` counts the model calls and the tokens the models report."""

from __future__ import annotations

from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from engram.evals.instrument import RunRecorder


def _reply(text: str, tokens: int | None) -> AIMessage:
    if tokens is None:
        return AIMessage(text)
    usage = {"input_tokens": tokens - 3, "output_tokens": 3, "total_tokens": tokens}
    return AIMessage(text, usage_metadata=usage)


def test_tokens_reported_by_the_model_are_added_up():
    model = GenericFakeChatModel(messages=iter([_reply("a", 40), _reply("b", 2), _reply("c", None)]))
    recorder = RunRecorder()
    for question in ("one", "two", "three"):
        model.invoke(question, config={"callbacks": [recorder]})
    assert recorder.model_calls == 3
    assert recorder.model_tokens == 42  # the third reply reports no usage: it adds nothing


async def test_async_calls_are_counted_too():
    model = GenericFakeChatModel(messages=iter([_reply("a", 17)]))
    recorder = RunRecorder()
    await model.ainvoke("one", config={"callbacks": [recorder]})
    assert (recorder.model_calls, recorder.model_tokens) == (1, 17)
