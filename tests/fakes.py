"""Test doubles shared by the whole suite: deterministic embeddings and recording chat models.

Nothing here is random: the same text always gets the same vector, and texts that share
character n-grams get similar vectors, so similarity in tests means something.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import re
import zlib
from collections import Counter
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import RunnableLambda
from langgraph.store.memory import InMemoryStore


class NGramEmbeddings(Embeddings):
    """Hashed character n-gram counts, L2-normalised.

    Texts sharing many n-grams have a high cosine similarity; unrelated texts a low one.

    Example:
        >>> e = NGramEmbeddings()
        >>> a, b, c = e.embed_documents(["dark mode editor", "dark mode theme", "tax return"])
        >>> sum(x * y for x, y in zip(a, b)) > sum(x * y for x, y in zip(a, c))
        True
    """

    def __init__(self, dims: int = 256, n: int = 3) -> None:
        self.dims = dims
        self.n = n
        self.calls: list[list[str]] = []

    def _vector(self, text: str) -> list[float]:
        padded = f" {text.lower()} "
        grams = Counter(padded[i : i + self.n] for i in range(max(1, len(padded) - self.n + 1)))
        vec = [0.0] * self.dims
        for gram, count in grams.items():
            vec[zlib.crc32(gram.encode()) % self.dims] += count
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        self.calls.append([text])
        return self._vector(text)


class TopicEmbeddings(Embeddings):
    """A toy embedder that knows synonyms: each topic is one dimension, and a text's vector counts
    the words of each topic it uses (plus a small constant, so no vector is zero). Texts on the
    same topic are similar even without a shared word; an identifier means nothing to it.

    Example:
        >>> e = TopicEmbeddings({"cat": ["cat", "kitty", "feline"]})
        >>> a, b = e.embed_documents(["my kitty", "a feline friend"])
        >>> round(sum(x * y for x, y in zip(a, b)), 2)
        1.0
    """

    def __init__(self, topics: dict[str, list[str]]) -> None:
        self.topics = list(topics.values())

    def _vector(self, text: str) -> list[float]:
        words = re.findall(r"[a-z]+", text.lower())
        vec = [0.05] + [float(sum(w in topic for w in words)) for topic in self.topics]
        norm = math.sqrt(sum(v * v for v in vec))
        return [v / norm for v in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


class RecordingChatModel(GenericFakeChatModel):
    """A `GenericFakeChatModel` that records the messages of every call in `calls`."""

    calls: list[list[BaseMessage]] = []

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls = []

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any):  # type: ignore[override]
        self.calls.append(list(messages))
        return super()._generate(messages, *args, **kwargs)


class StructuredFakeChatModel(RecordingChatModel):
    """A recording fake chat model whose `with_structured_output(schema)` gives canned answers.

    Each entry of `structured_responses` answers one structured call, in order: a dict is
    validated against the schema (one that does not fit raises pydantic's `ValidationError`, as a
    real tool-call parser does), an exception instance is raised (a model or network failure),
    anything else (a pydantic object, None for "no tool call") is returned as is.
    `structured_calls` records `(schema, messages)` per call.

    Example:
        >>> from pydantic import BaseModel
        >>> class Answer(BaseModel):
        ...     text: str
        >>> model = StructuredFakeChatModel(structured_responses=[{"text": "hi"}])
        >>> model.with_structured_output(Answer).invoke("hello")
        Answer(text='hi')
    """

    structured_responses: list[Any] = []
    structured_calls: list[tuple[Any, list[BaseMessage]]] = []

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("messages", iter(()))
        super().__init__(**kwargs)
        self.structured_responses = list(self.structured_responses)
        self.structured_calls = []

    def with_structured_output(self, schema: Any, **kwargs: Any) -> RunnableLambda:  # type: ignore[override]
        def answer(model_input: Any) -> Any:
            messages = self._convert_input(model_input).to_messages()
            self.structured_calls.append((schema, messages))
            if not self.structured_responses:
                raise AssertionError("StructuredFakeChatModel: no canned structured response left")
            response = self.structured_responses.pop(0)
            if isinstance(response, BaseException):
                raise response
            if isinstance(response, dict):
                return schema.model_validate(response)
            return response

        return RunnableLambda(answer)


class FailingChatModel(RecordingChatModel):
    """A chat model that is down: every call, structured output included, raises
    `RuntimeError(error)` (plain calls are recorded first)."""

    error: str = "model unavailable"

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("messages", iter(()))
        super().__init__(**kwargs)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any):  # type: ignore[override]
        self.calls.append(list(messages))
        raise RuntimeError(self.error)

    def with_structured_output(self, schema: Any, **kwargs: Any) -> RunnableLambda:  # type: ignore[override]
        def fail(model_input: Any) -> Any:
            raise RuntimeError(self.error)

        return RunnableLambda(fail)


class FailingEmbeddings(NGramEmbeddings):
    """`NGramEmbeddings` that raise `RuntimeError` while `failing` is True (an embedder outage)."""

    def __init__(self, failing: bool = True) -> None:
        super().__init__()
        self.failing = failing

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if self.failing:
            raise RuntimeError("embedder unavailable")
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        if self.failing:
            raise RuntimeError("embedder unavailable")
        return super().embed_query(text)


class SlowEmbeddings(NGramEmbeddings):
    """`NGramEmbeddings` whose async query embedding first sleeps `delay` seconds."""

    def __init__(self, delay: float) -> None:
        super().__init__()
        self.delay = delay

    async def aembed_query(self, text: str) -> list[float]:
        await asyncio.sleep(self.delay)
        return self.embed_query(text)


class FailingStore(InMemoryStore):
    """An `InMemoryStore` whose every operation raises `OSError` while `failing` is True."""

    failing: bool = True

    def batch(self, ops: Any) -> list[Any]:
        if self.failing:
            raise OSError("store unavailable")
        return super().batch(ops)

    async def abatch(self, ops: Any) -> list[Any]:
        if self.failing:
            raise OSError("store unavailable")
        return await super().abatch(ops)


def studio_chat_model() -> RecordingChatModel:
    """The answering model `langgraph dev` loads in the Studio test (`ENGRAM_MODEL=tests/fakes.py:studio_chat_model`)."""
    return RecordingChatModel(messages=itertools.cycle(["Noted, thanks for telling me."]))


def studio_agent_model() -> ToolCallingChatModel:
    """The model of the `create_agent` agent the deployment test serves: every turn searches
    the user's memories (`search_memory`), then answers."""
    search = {"name": "search_memory", "args": {"query": "what do I eat"}, "id": "search-1"}
    return ToolCallingChatModel(
        messages=itertools.cycle([AIMessage("", tool_calls=[search]), AIMessage("Found it.")])
    )


def compression_model() -> StructuredFakeChatModel:
    """A memory model for `engram memory maintain --model tests/fakes.py:compression_model`:
    it compresses the first three memories it is shown into one."""
    answer = {"content": "Compressed: the first three memories", "importance": 0.7,
              "replaces": [1, 2, 3]}
    return StructuredFakeChatModel(structured_responses=[{"memories": [answer]}])


class ToolCallingChatModel(RecordingChatModel):
    """A `RecordingChatModel` that accepts tools (`bind_tools` returns itself), so scripted
    replies may call them (`AIMessage(tool_calls=[...])`)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ToolCallingChatModel:  # type: ignore[override]
        return self


class GatedMemoryModel(StructuredFakeChatModel):
    """A slow memory model, deterministically: every call (summary or structured) waits until
    `gate` is set (at most `wait` seconds, then it raises `TimeoutError` like a model call that
    timed out); `entered` is set when the first call is waiting. Summaries answer
    "SUMMARY n"; structured calls answer from `structured_responses`, then `{"memories": []}`."""

    gate: Any = None
    entered: Any = None
    wait: float = 60.0

    def __init__(self, **kwargs: Any) -> None:
        import threading

        kwargs.setdefault("messages", (f"SUMMARY {i}" for i in itertools.count(1)))
        super().__init__(**kwargs)
        self.gate = threading.Event()
        self.entered = threading.Event()

    def _pass(self) -> None:
        self.entered.set()
        if not self.gate.wait(self.wait):
            raise TimeoutError("memory model: no answer in time")

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any):  # type: ignore[override]
        self._pass()
        return super()._generate(messages, *args, **kwargs)

    def with_structured_output(self, schema: Any, **kwargs: Any) -> RunnableLambda:  # type: ignore[override]
        inner = super().with_structured_output(schema, **kwargs)

        def answer(model_input: Any) -> Any:
            self._pass()
            if not self.structured_responses:
                self.structured_responses.append({"memories": []})
            return inner.invoke(model_input)

        return RunnableLambda(answer)


class FunctionChatModel(RecordingChatModel):
    """A recording fake chat model that answers any number of calls, each with
    `reply(messages)`: what it says depends on what it was sent.

    Example:
        >>> model = FunctionChatModel(reply=lambda messages: messages[-1].content.upper())
        >>> model.invoke("hello").content
        'HELLO'
    """

    reply: Any = None

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("messages", iter(()))
        super().__init__(**kwargs)

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any):  # type: ignore[override]
        self.calls.append(list(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.reply(messages)))])
