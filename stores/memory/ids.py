"""A memory named by its whole id or by a prefix of it, as tables and the memories page show ids
(their first 8 characters): the one memory of the user whose id starts with it. The CLI, the
memory API and the MCP server resolve ids this way. Only the user's own memories are looked at,
so a prefix never names another user's memory.

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from engram.stores.memory.long_term import LongTermMemory, MemoryCandidate
    >>> from engram.stores.steps import run_steps
    >>> store = InMemoryStore()
    >>> tea = MemoryCandidate(content="Alice drinks tea", category="fact")
    >>> [tea] = LongTermMemory(store).upsert("alice", [tea])
    >>> found = run_steps(store, memory_by_id_steps("alice", tea.memory.id[:8]))
    >>> found.id == tea.memory.id, run_steps(store, memory_by_id_steps("bob", tea.memory.id[:8]))
    (True, None)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar

from engram.stores.memory.types import Memory
from engram.stores.memory.users import memories_steps
from engram.stores.memory.write.policy import get_steps
from engram.stores.namespaces import memory_namespace
from engram.stores.steps import Steps


class _HasId(Protocol):
    @property
    def id(self) -> str: ...


Identified = TypeVar("Identified", bound=_HasId)

SHOWN_IDS = 5
"""How many of the matching ids an ambiguous prefix's error lists."""


class AmbiguousIdError(ValueError):
    """An id prefix that starts the ids of several of the user's memories."""

    def __init__(self, given: str, ids: list[str]) -> None:
        super().__init__(
            f"id prefix {given!r} matches {len(ids)} memories ({', '.join(ids[:SHOWN_IDS])}); "
            "give more of it"
        )
        self.given = given
        self.ids = ids


def memory_by_id_steps(user_id: str, given: str) -> Steps[Memory | None]:
    """The user's memory (any state) whose id is `given`, else the only one whose id starts
    with it; None when none does.

    Raises:
        AmbiguousIdError: Several of the user's memories' ids start with `given`.
    """
    memory = yield from get_steps(memory_namespace(user_id), given)
    if memory is not None or not given:
        return memory
    memories = yield from memories_steps(user_id)
    return memory_with_prefix(memories, given)


def memory_with_prefix(memories: Iterable[Identified], given: str) -> Identified | None:
    """The only one of `memories` (or of any records with an `id`, such as pending memories)
    whose id is `given` or, failing that, starts with it (not empty); None when none does.

    Raises:
        AmbiguousIdError: Several start with it.
    """
    records = list(memories)
    if exact := [m for m in records if m.id == given]:
        return exact[0]
    matches = [m for m in records if m.id.startswith(given)] if given else []
    if len(matches) > 1:
        raise AmbiguousIdError(given, [m.id for m in matches])
    return matches[0] if matches else None
