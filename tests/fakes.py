"""Test doubles shared by the whole suite: deterministic embeddings and recording chat models.

Nothing here is random: the same text always gets the same vector, and texts that share
character n-grams get similar vectors, so similarity in tests means something.
"""

from __future__ import annotations

import math
import zlib
from collections import Counter
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import BaseMessage


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


class RecordingChatModel(GenericFakeChatModel):
    """A `GenericFakeChatModel` that records the messages of every call in `calls`."""

    calls: list[list[BaseMessage]] = []

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls = []

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any):  # type: ignore[override]
        self.calls.append(list(messages))
        return super()._generate(messages, *args, **kwargs)
