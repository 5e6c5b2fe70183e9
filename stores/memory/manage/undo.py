"""Undo a memory's creation, as an app offers it beside a notice such as "added to memory: ...
[view] [undo]".

The memory is forgotten, so undo is itself reversible (`LongTermMemory.restore` brings it back);
when it was a new value of an attribute, the values it superseded become current again, and
what it had kept of them as memories of their own (`Memory.kept_as`) is forgotten, so the user
is left with what they had before it was written. (Restoring such an undone value leaves
the older one current too; stating the value again supersedes it once more.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from langgraph.store.base import BaseStore, GetOp

from engram.stores.memory.types import Memory, memory_put, utc_now
from engram.stores.memory.write.policy import get_steps
from engram.stores.namespaces import memory_namespace
from engram.stores.steps import Steps, arun_steps, run_steps


@dataclass(frozen=True)
class UndoResult:
    """What `undo_memory` did."""

    memory: Memory
    """The undone memory, now forgotten."""
    restored: list[Memory] = field(default_factory=list)
    """Older values it had superseded, current again."""
    unkept: list[Memory] = field(default_factory=list)
    """What it had kept of them as memories of their own, now forgotten (the restored ones
    hold it again)."""


async def aundo_memory(store: BaseStore, user_id: str, memory_id: str) -> UndoResult | None:
    """Undo the creation of a memory (see the module docstring); None if there is no such memory.

    Example:
        >>> import asyncio
        >>> from langgraph.store.memory import InMemoryStore
        >>> from engram.stores.memory.long_term import LongTermMemory, MemoryCandidate
        >>> store = InMemoryStore()
        >>> ltm = LongTermMemory(store)
        >>> old, new = (MemoryCandidate(content=f"I use {e}", category="preference",
        ...             key="preference.editor") for e in ("vim", "emacs"))
        >>> _ = ltm.upsert("alice", [old])
        >>> [created] = ltm.upsert("alice", [new])
        >>> undone = asyncio.run(aundo_memory(store, "alice", created.memory.id))
        >>> undone.memory.forgotten, [m.content for m in undone.restored]
        (True, ['I use vim'])
    """
    return await arun_steps(store, undo_steps(user_id, memory_id, utc_now().isoformat()))


def undo_memory(store: BaseStore, user_id: str, memory_id: str) -> UndoResult | None:
    """Sync `aundo_memory`."""
    return run_steps(store, undo_steps(user_id, memory_id, utc_now().isoformat()))


def undo_steps(user_id: str, memory_id: str, now: str) -> Steps[UndoResult | None]:
    """The store steps of an undo."""
    namespace = memory_namespace(user_id)
    memory = yield from get_steps(namespace, memory_id)
    if memory is None:
        return None
    older = yield [GetOp(namespace, i) for i in memory.supersedes]
    replaced = [
        old
        for old in (Memory.from_item(item) for item in older if item is not None)
        if old.superseded_by == memory.id
    ]
    kept = yield [GetOp(namespace, old.kept_as) for old in replaced if old.kept_as]
    restored = [
        old.model_copy(
            update={"valid_until": None, "superseded_by": None, "replaced_as": None,
                    "kept_as": None, "updated_at": now}
        )
        for old in replaced
    ]
    unkept = [
        Memory.from_item(item).model_copy(update={"forgotten": True, "updated_at": now})
        for item in kept
        if item is not None and not item.value.get("forgotten")
    ]
    undone = memory.model_copy(update={"forgotten": True, "updated_at": now})
    yield [memory_put(namespace, m) for m in [undone, *restored, *unkept]]
    return UndoResult(undone, restored, unkept)
