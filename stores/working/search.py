"""Search inside one offloaded result: BM25 and embedding similarity over its chunks, fused.

Both channels are built when the agent first searches a result, not when it is written (the
tool call's path stays short), and kept for the next searches in a small in-process cache:

- lexical: a BM25 index of every chunk (`LexicalIndex` in memory: stemming, CJK bigrams);
- dense: the store's embedder on the first `MAX_DENSE_CHUNKS` chunks (the chunks after them
  are found by their words only); no embedder (a store without an index), no dense channel.
  The embedder's sync methods run on a worker thread: a sync tool call runs this on a loop of
  its own, and an async client (`OpenAIEmbeddings`) would stay bound to that closed loop.

The two rankings are fused by relative score fusion, as recall fuses them
(`engram.stores.lexical.fusion`).
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from langchain_core.embeddings import Embeddings

from engram.stores.lexical.fusion import relative_score_fusion
from engram.stores.lexical.index import LexicalDocument, LexicalIndex
from engram.stores.working.chunks import CHUNK_CHARS

MAX_DENSE_CHUNKS = 200
"""Chunks of a result that get embeddings (200k characters); the local embedder takes a few
seconds for them, once per result and process."""
CACHED_RESULTS = 4
"""Results whose indexes stay in memory between searches."""
_SCOPE = "chunks"


@dataclass(frozen=True)
class ChunkHit:
    """One chunk that matches a query."""

    n: int
    """The chunk's number; it starts at character `offset`."""
    offset: int
    text: str
    relevance: float
    """The fused score, 0 to 1 (the best chunk of the channel that found it scores 1)."""


@dataclass
class _Indexes:
    lexical: LexicalIndex
    vectors: np.ndarray | None


async def asearch_chunks(
    chunks: Sequence[str],
    query: str,
    *,
    key: Hashable,
    embeddings: Embeddings | None,
    limit: int = 5,
) -> list[ChunkHit]:
    """The `limit` chunks that best match `query`, best first.

    Args:
        chunks: The result's text, in order (`CHUNK_CHARS` characters each).
        query: What to look for.
        key: Names the result in the cache (its id: a result's text never changes).
        embeddings: The dense channel's embedder; None searches by words only.
        limit: How many chunks at most.
    """
    indexes = await _indexes(key, chunks, embeddings)
    lexical = await asyncio.to_thread(indexes.lexical.search, _SCOPE, query, limit=len(chunks))
    dense: list[tuple[str, float]] = []
    if indexes.vectors is not None and embeddings is not None and query.strip():
        embedded_query = await asyncio.to_thread(embeddings.embed_query, query)
        vector = _unit(np.asarray([embedded_query], dtype=np.float32))[0]
        scores = indexes.vectors @ vector
        dense = sorted(((str(n), float(s)) for n, s in enumerate(scores)), key=lambda p: -p[1])
    fused = relative_score_fusion(lexical, dense)
    return [
        ChunkHit(n=int(n), offset=int(n) * CHUNK_CHARS, text=chunks[int(n)], relevance=score)
        for n, score in fused[:limit]
    ]


async def _indexes(key: Hashable, chunks: Sequence[str], embeddings: Embeddings | None) -> _Indexes:
    cache_key = (key, id(embeddings))
    with _LOCK:
        if (found := _CACHE.get(cache_key)) is not None:
            _CACHE.move_to_end(cache_key)
            return found
    lexical = await asyncio.to_thread(_lexical_index, chunks)
    vectors = None
    if embeddings is not None:
        embedded = await asyncio.to_thread(
            embeddings.embed_documents, list(chunks[:MAX_DENSE_CHUNKS])
        )
        vectors = _unit(np.asarray(embedded, dtype=np.float32))
    indexes = _Indexes(lexical, vectors)
    with _LOCK:
        _CACHE[cache_key] = indexes
        while len(_CACHE) > CACHED_RESULTS:
            _CACHE.popitem(last=False)  # not closed here: a search may still hold it (in memory)
    return indexes


def _lexical_index(chunks: Sequence[str]) -> LexicalIndex:
    index = LexicalIndex()
    index.upsert(_SCOPE, [LexicalDocument(str(n), text) for n, text in enumerate(chunks)])
    return index


def _unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms == 0, 1.0, norms)


_LOCK = threading.Lock()
_CACHE: OrderedDict[tuple[Hashable, int], _Indexes] = OrderedDict()
