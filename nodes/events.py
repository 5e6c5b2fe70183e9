"""The `memory.*` events on LangGraph's custom stream, for apps to follow what
engram remembers (`stream_mode="custom"`).

Every event is a dict with `event`, `user_id`, `memory_id` (what an app needs to show the memory,
or to undo its creation: `engram.stores.memory.manage.undo`), `category`, `content`, `importance` and
`key`, plus `action` and, for a superseded memory, `superseded_by`:

- `memory.created`: a new memory (a new value that supersedes an old one included, and, with
  `action` "kept", what such a change does not touch of the memory it replaces, kept current
  as a memory of its own);
- `memory.updated`: an existing memory confirmed or merged with a new statement;
- `memory.superseded`: an old value replaced by a new one (kept as history);
- `memory.forgotten` / `memory.restored`: soft-deleted (restorable) / brought back;
- `memory.pending`: extracted, waiting for the user's approval (`Context.confirm_memories`):
  `memory_id` is the pending memory's id (approve or reject it by that id), with `thread_id`,
  the conversation it came from, and `question`, a sentence an app can put to the user;
- `memory.deleted`: deleted for good (`deleted_event`): only `event`, `user_id` and `memory_id`,
  since what a person deletes should not live on in an app's event log.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from engram.stores.memory.pending import PendingMemory
from engram.stores.memory.types import Memory, WriteResult

MEMORY_CREATED = "memory.created"
MEMORY_UPDATED = "memory.updated"
MEMORY_SUPERSEDED = "memory.superseded"
MEMORY_FORGOTTEN = "memory.forgotten"
MEMORY_RESTORED = "memory.restored"
MEMORY_DELETED = "memory.deleted"
MEMORY_PENDING = "memory.pending"

QUIET_ACTIONS = ("unchanged", "dropped")
"""Write-policy outcomes that change nothing and are not announced."""

Writer = Callable[[Any], None]


def memory_event(name: str, user_id: str, memory: Memory, **extra: Any) -> dict[str, Any]:
    """One event about `memory`.

    Example:
        >>> m = Memory.new("Prefers tea", "preference", 0.9, now="2026-01-01T00:00:00+00:00")
        >>> e = memory_event(MEMORY_FORGOTTEN, "alice", m)
        >>> (e["event"], e["memory_id"] == m.id, e["content"])
        ('memory.forgotten', True, 'Prefers tea')
    """
    return {
        "event": name,
        "user_id": user_id,
        "memory_id": memory.id,
        "category": memory.category,
        "content": memory.content,
        "importance": memory.importance,
        "key": memory.key,
        **extra,
    }


def deleted_event(user_id: str, memory_id: str) -> dict[str, Any]:
    """The `memory.deleted` event: which memory of which user is gone for good, and nothing of
    what it said.

    Example:
        >>> deleted_event("alice", "3f2c9a1e")
        {'event': 'memory.deleted', 'user_id': 'alice', 'memory_id': '3f2c9a1e'}
    """
    return {"event": MEMORY_DELETED, "user_id": user_id, "memory_id": memory_id}


def announce_writes(writer: Writer, user_id: str, results: Sequence[WriteResult]) -> None:
    """`memory.created` / `memory.updated` / `memory.superseded` for what the write policy did."""
    for result in results:
        memory = result.memory
        if memory is None or result.action in QUIET_ACTIONS:
            continue
        event = MEMORY_UPDATED if result.action in ("merged", "duplicate") else MEMORY_CREATED
        writer(memory_event(event, user_id, memory, action=result.action))
        for old in result.superseded:
            writer(
                memory_event(
                    MEMORY_SUPERSEDED, user_id, old, action="superseded", superseded_by=memory.id
                )
            )
        for rest in result.kept:
            writer(memory_event(MEMORY_CREATED, user_id, rest, action="kept"))


def announce_pending(writer: Writer, user_id: str, proposed: Sequence[PendingMemory]) -> None:
    """`memory.pending` for each memory newly waiting for the user's approval.

    Example:
        >>> p = PendingMemory(id="7d1e", content="Prefers TypeScript strict mode",
        ...                   category="preference", importance=0.9, created_at="2026-01-01")
        >>> announce_pending(print, "alice", [p])  # doctest: +NORMALIZE_WHITESPACE
        {'event': 'memory.pending', 'user_id': 'alice', 'memory_id': '7d1e',
         'category': 'preference', 'content': 'Prefers TypeScript strict mode', 'importance': 0.9,
         'key': None, 'thread_id': None,
         'question': 'Should I remember this? "Prefers TypeScript strict mode"'}
    """
    for pending in proposed:
        writer({
            "event": MEMORY_PENDING,
            "user_id": user_id,
            "memory_id": pending.id,
            "category": pending.category,
            "content": pending.content,
            "importance": pending.importance,
            "key": pending.key,
            "thread_id": pending.source_thread_id,
            "question": f'Should I remember this? "{pending.content}"',
        })
