"""Offloaded tool results in a store (`engram.stores.working`): what is kept of a result, its
chunks read back by offset, searched by words and meaning, and deleted with its thread or its
user; on langgraph's InMemoryStore and on ChromaStore."""

from __future__ import annotations

from fakes import NGramEmbeddings
from langgraph.store.base import BaseStore

from engram.stores.memory.users import adelete_thread, adelete_user
from engram.stores.namespaces import tool_result_namespace
from engram.stores.working import (
    CHUNK_CHARS,
    MAX_KEPT_CHARS,
    aread_range,
    aread_text,
    asearch_chunks,
    awrite_result,
    head_of,
    kept_text,
    looks_binary,
)

TEXT = "".join(f"line {i:05d} status ok\n" for i in range(400))  # 8,400 characters
NEEDLE = "the connection pool was exhausted after 30 seconds"


async def _write(store: BaseStore, user: str, thread: str, result_id: str, raw: str) -> None:
    kept = kept_text(raw)
    head = head_of(result_id, kept, tool="logs", tool_call_id="c1", summary="s", preview="p")
    await awrite_result(store, tool_result_namespace(user, thread), head, kept.text)


def test_kept_text_is_printable_redacted_and_bounded() -> None:
    binary = bytes(range(256)).decode("latin-1") * 40
    kept = kept_text(binary)
    assert "\x00" not in kept.text and looks_binary(kept.text)
    assert not looks_binary(TEXT)

    secret = kept_text("config dump\nAWS key AKIAIOSFODNN7EXAMPLE\npassword: hunter22\n")
    assert "AKIAIOSFODNN7EXAMPLE" not in secret.text and "hunter22" not in secret.text
    assert secret.redacted == 2

    huge = kept_text("x" * (MAX_KEPT_CHARS + 5))
    assert len(huge.text) == MAX_KEPT_CHARS and huge.total_length == MAX_KEPT_CHARS + 5
    assert huge.truncated


async def test_a_result_is_read_back_by_offset_across_chunks(store: BaseStore) -> None:
    await _write(store, "alice", "t1", "r1", TEXT)
    namespace = tool_result_namespace("alice", "t1")
    offset = CHUNK_CHARS - 10
    head, part = await aread_range(store, namespace, "r1", offset, 1500)
    assert part == TEXT[offset : offset + 1500]
    assert (head.total_length, head.stored_length, head.chunks) == (len(TEXT), len(TEXT), 9)
    _, end = await aread_range(store, namespace, "r1", len(TEXT) - 5, 100)
    assert end == TEXT[-5:]
    _, chunks = await aread_text(store, namespace, "r1")
    assert "".join(chunks) == TEXT


async def test_a_result_is_only_found_in_its_own_thread_of_its_own_user(store: BaseStore) -> None:
    await _write(store, "alice", "t1", "r1", TEXT)
    assert await aread_range(store, tool_result_namespace("alice", "t2"), "r1", 0, 10) is None
    assert await aread_range(store, tool_result_namespace("bob", "t1"), "r1", 0, 10) is None
    # a chunk's key is not a result's id
    assert await aread_range(store, tool_result_namespace("alice", "t1"), "r1:0", 0, 10) is None


async def test_search_finds_a_passage_by_its_words_and_by_its_meaning() -> None:
    text = TEXT[:4000] + NEEDLE + TEXT[4000:]
    chunks = [text[i : i + CHUNK_CHARS] for i in range(0, len(text), CHUNK_CHARS)]
    embeddings = NGramEmbeddings()
    [hit] = await asearch_chunks(chunks, "pool exhausted", key="s1", embeddings=embeddings,
                                 limit=1)
    assert NEEDLE in hit.text or NEEDLE[:20] in hit.text
    assert hit.offset == 4000
    # words the passage does not use, found by the n-gram embedding ("exhaust" ~ "exhausted")
    [dense] = await asearch_chunks(chunks, "exhaustion", key="s1", embeddings=embeddings, limit=1)
    assert dense.n == 4
    # no embedder: words only
    [lexical] = await asearch_chunks(chunks, "connection pool", key="s2", embeddings=None, limit=1)
    assert lexical.n == 4


async def test_deleting_the_thread_or_the_user_deletes_its_results(store: BaseStore) -> None:
    await _write(store, "alice", "t1", "r1", TEXT)
    await _write(store, "alice", "t2", "r2", TEXT)
    await _write(store, "bob", "t1", "r3", TEXT)

    assert await adelete_thread(store, "alice", "t1") == {"tool_results": 10}  # 9 chunks, head
    assert await aread_range(store, tool_result_namespace("alice", "t1"), "r1", 0, 10) is None
    assert await aread_range(store, tool_result_namespace("alice", "t2"), "r2", 0, 10)

    report = await adelete_user(store, "alice")
    assert report.deleted["tool_results"] == 10
    assert await aread_range(store, tool_result_namespace("alice", "t2"), "r2", 0, 10) is None
    assert await aread_range(store, tool_result_namespace("bob", "t1"), "r3", 0, 10)
