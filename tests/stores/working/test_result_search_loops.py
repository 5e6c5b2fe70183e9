"""A sync tool call searches an offloaded result on an event loop of its own each time
(`run_sync`): an embedder whose async client is bound to the first loop must still work."""

from __future__ import annotations

import asyncio

from fakes import NGramEmbeddings

from engram.stores.working import asearch_chunks


class LoopBoundEmbeddings(NGramEmbeddings):
    """Like `OpenAIEmbeddings`: the async methods keep the loop they first ran on."""

    loop: asyncio.AbstractEventLoop | None = None

    async def aembed_query(self, text: str) -> list[float]:
        return self._bound(await super().aembed_query(text))

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._bound(await super().aembed_documents(texts))

    def _bound(self, value):
        running = asyncio.get_running_loop()
        if self.loop is not None and self.loop is not running:
            raise RuntimeError("Event loop is closed")
        self.loop = running
        return value


def test_each_sync_search_on_its_own_loop_finds_the_passage() -> None:
    chunks = ["the cache warmed up in 3 s", "error: connection pool exhausted after 30 s"]
    embeddings = LoopBoundEmbeddings()
    for key in ("first", "second"):  # a new index and a new loop each time
        [hit] = asyncio.run(
            asearch_chunks(chunks, "pool exhausted", key=key, embeddings=embeddings, limit=1)
        )
        assert hit.n == 1
