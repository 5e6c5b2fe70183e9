"""Undoing maintenance and forgetting: `restore`, and the explicit, irreversible `delete`.

`restore(user, id)` brings a memory back to what it was before maintenance or `forget` changed
it, using the maintenance journal (`engram.stores.maintenance.types.JournalEntry`):

- a forgotten memory (by `forget`, low relevance, TTL or the cap) is active again;
- an importance maintenance lowered gets its old value back (unless a later write already
  changed it);
- a memory compressed into a new one is current again; when every original of a compression
  is back, the compressed memory is forgotten (it would only repeat them);
- the compressed memory itself: restoring it undoes the whole compression (its originals come
  back, it is forgotten).

A restored memory counts as confirmed by its owner (`updated_at` = now), so the next
maintenance run does not forget it again at once. A memory superseded by a newer value of its
`key` is not restored: that would make two current values of one attribute.

`delete_memory_steps` removes a memory for good, with its older versions (what it superseded),
their duplicate-registry records and journal entries. `LongTermMemory.restore` and `LongTermMemory.delete` run these steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from langgraph.store.base import GetOp, Op, PutOp

from engram.stores.memory.manage.journal import JournalEntry
from engram.stores.memory.types import Memory, memory_put
from engram.stores.memory.write.policy import delete_steps
from engram.stores.namespaces import hash_namespace, journal_namespace, memory_namespace
from engram.stores.steps import Steps


@dataclass(frozen=True)
class RestoreResult:
    """What `restore` did."""

    memory: Memory
    """The memory as stored afterwards."""
    actions: list[str] = field(default_factory=list)
    """What changed, in words; empty when nothing needed restoring."""
    also_restored: list[str] = field(default_factory=list)
    """Other memories brought back (the originals of an undone compression)."""
    reason: str = ""
    """Why nothing changed, when `actions` is empty."""

    @property
    def changed(self) -> bool:
        """Whether anything was restored."""
        return bool(self.actions)


def restore_steps(user_id: str, memory_id: str, now: str) -> Steps[RestoreResult | None]:
    """Restore one memory (see the module docstring); None if there is no such memory."""
    namespace, journal = memory_namespace(user_id), journal_namespace(user_id)
    item, entry_item = yield [GetOp(namespace, memory_id), GetOp(journal, memory_id)]
    if item is None:
        return None
    memory = Memory.from_item(item)
    entry = JournalEntry.model_validate(entry_item.value) if entry_item else None
    ops: list[Op] = []
    actions: list[str] = []
    also: list[str] = []
    if entry and entry.compressed_from and memory.current and not memory.forgotten:
        # the product of a compression: bring its originals back, retire it
        items = yield [GetOp(namespace, i) for i in entry.compressed_from]
        for original in (Memory.from_item(i) for i in items if i is not None):
            if original.superseded_by == memory.id and not original.current:
                ops.append(memory_put(namespace, _unsupersede(original, now)))
                ops.append(PutOp(journal, original.id, None))
                also.append(original.id)
        memory = memory.model_copy(update={"forgotten": True})
        entry = JournalEntry(
            forgotten_by="uncompressed", compressed_from=entry.compressed_from, at=now
        )
        actions.append(f"undid a compression: {len(also)} originals are current again")
        ops.append(memory_put(namespace, memory))
        ops.append(PutOp(journal, memory.id, entry.model_dump(mode="json"), index=False))
        yield ops
        return RestoreResult(memory, actions, also)

    if (
        entry
        and entry.compressed_into
        and not memory.current
        and memory.superseded_by == entry.compressed_into
    ):
        memory = _unsupersede(memory, now)
        actions.append(f"no longer replaced by the compressed memory {entry.compressed_into}")
        retired = yield from _retire_if_all_back(user_id, entry.compressed_into, memory.id, now)
        ops.extend(retired)
    if memory.forgotten:
        memory = memory.model_copy(update={"forgotten": False, "updated_at": now})
        why = (
            f" (forgotten by maintenance: {entry.forgotten_by})"
            if entry and entry.forgotten_by
            else ""
        )
        actions.append("no longer forgotten" + why)
    if (
        entry
        and entry.lowered_to is not None
        and entry.importance_before is not None
        and math.isclose(entry.lowered_to, memory.importance)
    ):
        actions.append(f"importance {memory.importance:.2f} -> {entry.importance_before:.2f}")
        memory = memory.model_copy(
            update={"importance": entry.importance_before, "updated_at": now}
        )
    if not actions:
        if not memory.current:
            reason = (
                f"it was replaced by a newer value ({memory.superseded_by}); restate it to make "
                "it current again"
            )
        else:
            reason = "it is current, not forgotten, and maintenance did not lower its importance"
        return RestoreResult(memory, reason=f"nothing to restore: {reason}")
    ops.append(memory_put(namespace, memory))
    if entry is not None and entry.compressed_from:  # keep the link to its originals
        kept = JournalEntry(compressed_from=entry.compressed_from, at=now)
        ops.append(PutOp(journal, memory.id, kept.model_dump(mode="json"), index=False))
    elif entry is not None:
        ops.append(PutOp(journal, memory.id, None))
    yield ops
    return RestoreResult(memory, actions, also)


def delete_memory_steps(user_id: str, memory_id: str) -> Steps[bool]:
    """Delete a memory for good, with the older versions it replaced (what it `supersedes`, and
    what those superseded, ...: they hold the same fact's earlier text), their duplicate
    records and journal entries; a newer version that replaced it stops naming it. False if
    absent."""
    namespace, journal = memory_namespace(user_id), journal_namespace(user_id)
    (item,) = yield [GetOp(namespace, memory_id)]
    if item is None:
        return False
    readable, _ = Memory.readable([item])
    if not readable:  # something else put it there: deleted as it is
        yield [PutOp(namespace, memory_id, None)]
        return True
    memory = readable[0]
    history = yield from _older_versions(namespace, memory)
    for gone in [memory, *history]:
        yield from delete_steps(namespace, hash_namespace(user_id), gone.id)
        yield [PutOp(journal, gone.id, None)]
    if memory.superseded_by is not None:
        (newer,) = yield [GetOp(namespace, memory.superseded_by)]
        if newer is not None:
            kept = Memory.from_item(newer)
            remaining = [i for i in kept.supersedes if i != memory.id]
            yield [memory_put(namespace, kept.model_copy(update={"supersedes": remaining}))]
    return True


def _older_versions(namespace: tuple[str, ...], memory: Memory) -> Steps[list[Memory]]:
    """The memories `memory` replaced, and those they replaced, ... (each one only while its
    `superseded_by` names the one that lists it)."""
    found: list[Memory] = []
    seen = {memory.id}
    newer = [memory]
    while wanted := [(n.id, i) for n in newer for i in n.supersedes if i not in seen]:
        seen.update(i for _, i in wanted)
        items = yield [GetOp(namespace, i) for _, i in wanted]
        newer = [
            older
            for (by, _), item in zip(wanted, items)
            if item is not None and (older := Memory.from_item(item)).superseded_by == by
        ]
        found.extend(newer)
    return found


def _retire_if_all_back(
    user_id: str, compressed_id: str, restoring: str, now: str
) -> Steps[list[Op]]:
    """Forget a compressed memory once all its originals are current again."""
    namespace, journal = memory_namespace(user_id), journal_namespace(user_id)
    item, entry_item = yield [GetOp(namespace, compressed_id), GetOp(journal, compressed_id)]
    if item is None or entry_item is None:
        return []
    compressed = Memory.from_item(item)
    entry = JournalEntry.model_validate(entry_item.value)
    others = [i for i in entry.compressed_from if i != restoring]
    originals = yield [GetOp(namespace, i) for i in others]
    if any(o is not None and Memory.from_item(o).superseded_by == compressed_id for o in originals):
        return []
    retired = compressed.model_copy(update={"forgotten": True})
    done = entry.model_copy(update={"forgotten_by": "uncompressed", "at": now})
    return [
        memory_put(namespace, retired),
        PutOp(journal, compressed_id, done.model_dump(mode="json"), index=False),
    ]


def _unsupersede(memory: Memory, now: str) -> Memory:
    return memory.model_copy(
        update={"valid_until": None, "superseded_by": None, "replaced_as": None, "updated_at": now}
    )


