"""Offloaded tool results in a store: one head item and its text in chunks, per result.

Under `("tool_results", user, thread)` (`engram.stores.namespaces.tool_result_namespace`), a
result `R` is the head `R` (`ResultHead`: the tool, the pointer's summary and preview, lengths,
chunk count) and the chunks `R:0`, `R:1`, ... of `CHUNK_CHARS` characters each. Nothing is
embedded when a result is written (that would cost seconds per 100k characters on the tool
call's path); `engram.stores.working.search` reads the chunks when the agent searches.

A result is only ever found in its own thread's namespace, of the run's own user: an id from
another thread or user is simply not there. Deleting the thread
(`engram.stores.memory.users.delete_thread`) or the user (`delete_user`, which removes every
namespace of the user) deletes the results, purged from the store's files like any deleted text.

Functions come as store steps (`engram.stores.steps`) with async drivers.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp

from engram.stores.steps import Steps, arun_steps
from engram.stores.working.chunks import CHUNK_CHARS, KeptText, covering, split


@dataclass(frozen=True)
class ResultHead:
    """What is known of an offloaded result without reading its text."""

    id: str
    tool: str
    """The tool that returned it."""
    tool_call_id: str
    summary: str
    preview: str
    total_length: int
    """Characters the tool returned."""
    stored_length: int
    """Characters kept (`total_length`, or `MAX_KEPT_CHARS` for a larger result)."""
    chunks: int

    def to_value(self) -> dict[str, Any]:
        """The head item's value."""
        return {"kind": "head", **asdict(self), "created_at": datetime.now(UTC).isoformat()}

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> ResultHead:
        """The head of a head item's value."""
        return cls(**{name: value[name] for name in cls.__dataclass_fields__})


def head_of(result_id: str, kept: KeptText, *, tool: str, tool_call_id: str, summary: str,
            preview: str) -> ResultHead:
    """The head of a result about to be written."""
    return ResultHead(
        id=result_id,
        tool=tool,
        tool_call_id=tool_call_id,
        summary=summary,
        preview=preview,
        total_length=kept.total_length,
        stored_length=len(kept.text),
        chunks=len(split(kept.text)),
    )


# -- steps ----------------------------------------------------------------------------------------


def write_steps(namespace: tuple[str, ...], head: ResultHead, text: str) -> Steps[None]:
    """Write a result: its chunks, then its head (a result whose head is there is whole).
    `text` is a `kept_text` (cleaned and redacted): this layer never stores anything else."""
    yield [
        PutOp(namespace, f"{head.id}:{n}", {"kind": "chunk", "result_id": head.id, "n": n,
                                            "content": chunk}, index=False)
        for n, chunk in enumerate(split(text))
    ]
    yield [PutOp(namespace, head.id, head.to_value(), index=False)]


def head_steps(namespace: tuple[str, ...], result_id: str) -> Steps[ResultHead | None]:
    """The head of `result_id` in `namespace`; None when there is no such result there."""
    (item,) = yield [GetOp(namespace, result_id)]
    if item is None or item.value.get("kind") != "head":
        return None
    return ResultHead.from_value(item.value)


def range_steps(namespace: tuple[str, ...], head: ResultHead, offset: int, length: int) -> Steps[str]:
    """Characters `offset` to `offset + length` of the stored text (fewer at its end)."""
    numbers = [n for n in covering(offset, length) if n < head.chunks]
    if not numbers:
        return ""
    items = yield [GetOp(namespace, f"{head.id}:{n}") for n in numbers]
    text = "".join(item.value["content"] if item is not None else "" for item in items)
    start = offset - numbers[0] * CHUNK_CHARS
    return text[start : start + length]


def text_steps(namespace: tuple[str, ...], head: ResultHead) -> Steps[list[str]]:
    """Every chunk of the stored text, in order."""
    (found,) = yield [
        SearchOp(namespace, filter={"kind": "chunk", "result_id": head.id}, limit=head.chunks)
    ]
    chunks = [""] * head.chunks
    for item in found:
        n = item.value["n"]
        if 0 <= n < head.chunks:
            chunks[n] = item.value["content"]
    return chunks


# -- drivers --------------------------------------------------------------------------------------


async def awrite_result(store: BaseStore, namespace: tuple[str, ...], head: ResultHead,
                        text: str) -> None:
    """Write a result (`write_steps`)."""
    await arun_steps(store, write_steps(namespace, head, text))


async def ahead(store: BaseStore, namespace: tuple[str, ...], result_id: str) -> ResultHead | None:
    """A result's head; None when the namespace holds no such result."""
    return await arun_steps(store, head_steps(namespace, result_id))


def result_id_for(user_id: str, thread_id: str | None, text: str) -> str:
    """The id of a kept text in a thread: the same text in the same thread has the same id, so a
    tool that returns it again is kept once (and another thread's or user's never shares it).

    Example:
        >>> result_id_for("alice", "t1", "log") == result_id_for("alice", "t1", "log")
        True
        >>> result_id_for("alice", "t1", "log") == result_id_for("alice", "t2", "log")
        False
    """
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return str(uuid5(NAMESPACE_URL, "engram/tool-result/" + json.dumps([user_id, thread_id, digest])))


async def aread_range(store: BaseStore, namespace: tuple[str, ...], result_id: str, offset: int,
                      length: int) -> tuple[ResultHead, str] | None:
    """A result's head and characters `offset` to `offset + length`; None when the namespace
    holds no such result."""

    def steps() -> Steps[tuple[ResultHead, str] | None]:
        head = yield from head_steps(namespace, result_id)
        if head is None:
            return None
        return head, (yield from range_steps(namespace, head, offset, length))

    return await arun_steps(store, steps())


async def aread_text(store: BaseStore, namespace: tuple[str, ...],
                     result_id: str) -> tuple[ResultHead, list[str]] | None:
    """A result's head and all its chunks; None when the namespace holds no such result."""

    def steps() -> Steps[tuple[ResultHead, list[str]] | None]:
        head = yield from head_steps(namespace, result_id)
        if head is None:
            return None
        return head, (yield from text_steps(namespace, head))

    return await arun_steps(store, steps())
