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


def test_memory_model_calls_are_told_from_the_answering_models():
    """A memory-model call (a summary here) is tagged; the answering model's call is not."""
    from langchain_core.messages import HumanMessage

    from engram.nodes.model.summarize import LLMSummarizer
    from engram.nodes.text.tokens import counter_for_model

    model = GenericFakeChatModel(messages=iter([_reply("answer", 10), _reply("a summary", 10)]))
    recorder = RunRecorder()
    config = {"callbacks": [recorder]}
    model.invoke("hello", config)

    async def summarize() -> str:
        from langchain_core.runnables.config import var_child_runnable_config

        var_child_runnable_config.set(config)  # as inside a graph node
        return await LLMSummarizer(model).asummarize(
            "", [HumanMessage("I live in Porto")], max_tokens=50, counter=counter_for_model(None)
        )

    import asyncio

    assert asyncio.run(summarize()) == "a summary"
    assert (recorder.model_calls, recorder.memory_calls, recorder.memory_answers) == (2, 1, 1)
