"""A memory's history: the older values it replaced (`supersedes`, and what they replaced in
turn), the memory, and the newer values that replaced it (`superseded_by`), oldest first. A
compressed memory's history holds every memory compressed into it.

A turn's recall shows a memory that matched but was replaced as history, never alone:
`current_versions_steps` puts the current version in its place, with the replaced one (only
what the change replaced of it) as its earlier value.

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

from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime

from langgraph.store.base import GetOp

from engram.stores.memory.clauses import clauses
from engram.stores.memory.types import Memory, ScoredMemory, normalize_text, parse_time
from engram.stores.steps import Steps

MAX_HOPS = 8
"""Rounds of reads `current_versions_steps` makes to follow replacements: a matched memory
replaced more times than this (and whose current version did not match) is left out."""
MAX_EARLIER = 2
"""Replaced values shown under a current memory at most (the latest)."""


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


def current_versions_steps(
    namespace: tuple[str, ...], ranked: Sequence[ScoredMemory], k: int
) -> Steps[list[ScoredMemory]]:
    """The `k` best of `ranked` with each replaced memory (`superseded_by`) folded into the
    current version of it: that version takes the replaced one's place (or keeps its own, if
    higher). A memory a later statement changed (`replaced_as` "changed") is that version's
    history, in its `earlier` (at most `MAX_EARLIER`, the latest, oldest first); one the person
    edited or maintenance compressed is not: the current version alone stands for it. A
    replaced memory whose current version was forgotten or deleted, or is out of reach, is left
    out, and so is a memory retired with nothing replacing it. Of a memory whose untouched
    clauses were kept as a memory of their own (`kept_as`), `earlier` shows only the clauses the
    change replaced.

    Example:
        >>> from langgraph.store.memory import InMemoryStore
        >>> from engram.stores.memory.types import memory_put
        >>> from engram.stores.steps import run_steps
        >>> lisbon = Memory.new("I live in Lisbon", "fact", 0.8, now="2026-01-05T10:00:00")
        >>> porto = Memory.new("I moved to Porto", "fact", 0.8, now="2026-03-01T10:00:00")
        >>> lisbon = lisbon.model_copy(update={"superseded_by": porto.id,
        ...                                    "valid_until": porto.created_at})
        >>> store = InMemoryStore()
        >>> store.batch([memory_put(("memories", "u"), m) for m in (lisbon, porto)])
        [None, None]
        >>> found = run_steps(store, current_versions_steps(
        ...     ("memories", "u"), [ScoredMemory(lisbon, 0.9, 0.9, 1.0)], k=5))
        >>> [(s.memory.content, [e.content for e in s.earlier]) for s in found]
        [('I moved to Porto', ['I live in Lisbon'])]
    """
    known: dict[str, Memory | None] = {s.memory.id: s.memory for s in ranked}
    wanted = {i for s in ranked for i in (s.memory.superseded_by, s.memory.kept_as) if i}
    for _ in range(MAX_HOPS):
        missing = sorted(wanted - known.keys())
        if not missing:
            break
        found = yield [GetOp(namespace, i) for i in missing]
        fetched, _ = Memory.readable(item for item in found if item is not None)
        known.update((m.id, m) for m in fetched)
        known.update((i, None) for i in missing if i not in known)  # deleted
        wanted = {m.superseded_by for m in fetched if m.superseded_by}
    order: dict[str, ScoredMemory] = {}
    for scored in ranked:
        current = _current(scored.memory, known)
        if current is None:
            continue
        shown = order.get(current.id) or replace(scored, memory=current, earlier=())
        if scored.memory.id != current.id and scored.memory.replaced_as in (None, "changed"):
            older = _replaced_part(scored.memory, known)
            shown = replace(shown, earlier=_by_date([*shown.earlier, older])[-MAX_EARLIER:])
        order[current.id] = shown
    return list(order.values())[:k]


def _current(memory: Memory, known: dict[str, Memory | None]) -> Memory | None:
    """The end of `memory`'s chain of replacements when it is current; None when it was
    forgotten, deleted, retired with nothing replacing it, or not reached."""
    seen: set[str] = set()
    while memory.superseded_by and memory.id not in seen:
        seen.add(memory.id)
        newer = known.get(memory.superseded_by)
        if newer is None:
            return None
        memory = newer
    return memory if memory.current and not memory.forgotten else None


def _replaced_part(memory: Memory, known: dict[str, Memory | None]) -> Memory:
    """`memory` as its history shows it: without the clauses kept as a memory of their own."""
    kept = known.get(memory.kept_as or "")
    if kept is None:
        return memory
    held = normalize_text(kept.content)
    changed = [c for c in clauses(memory.content) if normalize_text(c) not in held]
    return memory.model_copy(update={"content": "; ".join(changed)}) if changed else memory


def _by_date(memories: Iterable[Memory]) -> tuple[Memory, ...]:
    """Oldest first; a memory whose date cannot be read counts as the oldest."""
    unique = {m.id: m for m in memories}

    def said(memory: Memory) -> datetime:
        try:
            return parse_time(memory.valid_from)
        except (TypeError, ValueError):
            return datetime.min.replace(tzinfo=UTC)

    return tuple(sorted(unique.values(), key=said))
