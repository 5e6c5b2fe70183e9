"""A memory's history: the older values it replaced (`supersedes`, and what they replaced in
turn), the memory, and the newer values that replaced it (`superseded_by`), oldest first. A
compressed memory's history holds every memory compressed into it.

Example:
    >>> from engram.stores.memory.types import Memory
    >>> dark = Memory.new("Alice prefers dark mode", "preference", 0.9, now="2026-05-30T09:00:00")
    >>> light = Memory.new("Alice prefers light mode", "preference", 0.9, now="2026-06-01T12:00:00")
    >>> dark = dark.model_copy(update={"superseded_by": light.id, "valid_until": light.created_at})
    >>> light = light.model_copy(update={"supersedes": [dark.id]})
    >>> [m.content for m in version_history(dark, [dark, light])]
    ['Alice prefers dark mode', 'Alice prefers light mode']
"""

from __future__ import annotations

from collections.abc import Iterable

from engram.stores.memory.types import Memory, parse_time


def version_history(memory: Memory, memories: Iterable[Memory]) -> list[Memory]:
    """`memory` and every version before and after it among `memories` (the user's, in any
    state), oldest first; `[memory]` when nothing replaced it and it replaced nothing."""
    by_id = {m.id: m for m in memories}
    by_id[memory.id] = memory
    versions = {m.id: m for m in (*_older(memory, by_id), memory, *_newer(memory, by_id))}
    return sorted(versions.values(), key=lambda m: parse_time(m.created_at))


def _older(memory: Memory, by_id: dict[str, Memory]) -> list[Memory]:
    found: dict[str, Memory] = {}
    waiting = list(memory.supersedes)
    while waiting:
        older = by_id.get(waiting.pop())
        if older is not None and older.id not in found and older.id != memory.id:
            found[older.id] = older
            waiting.extend(older.supersedes)
    return list(found.values())


def _newer(memory: Memory, by_id: dict[str, Memory]) -> list[Memory]:
    found: dict[str, Memory] = {}
    newer = by_id.get(memory.superseded_by or "")
    while newer is not None and newer.id not in found and newer.id != memory.id:
        found[newer.id] = newer
        newer = by_id.get(newer.superseded_by or "")
    return list(found.values())
