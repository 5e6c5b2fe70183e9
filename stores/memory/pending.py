"""Memories waiting for the user's confirmation (`Context.confirm_memories`).

With confirmation on, what extraction proposes is not written to the user's memories: each
candidate is kept as a pending memory under `("pending_memories", <label>)`, not indexed, so it
is never recalled, searched or embedded. The user approves it (it then goes through the write
policy as if extraction had just written it: duplicate, supersede, merge, add) or rejects it (it
is deleted and purged from the store's files, as `engram memory delete` purges a memory).

A pending memory's id derives from the user and its text, so extraction proposing the same text
again keeps one; a text that is already a memory word for word (the duplicate registry knows its
hash) is not proposed at all. Secrets are redacted and unimportant candidates dropped before
anything is kept, as the write policy would. A rejected text leaves nothing behind, not even its
hash: if the user says it again, it is proposed again.

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> pending = PendingMemories(InMemoryStore())
    >>> [waiting] = pending.propose("alice", [MemoryCandidate(content="Prefers tea",
    ...                                                      category="preference")])
    >>> [p.content for p in pending.list("alice")]
    ['Prefers tea']
    >>> pending.approve("alice", waiting.id).action, pending.list("alice")
    ('created', [])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langgraph.store.base import BaseStore, GetOp, PutOp, SearchOp
from pydantic import BaseModel, ConfigDict, Field

from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.types import (
    Category,
    MemoryCandidate,
    WriteResult,
    content_hash,
    parse_time,
    utc_now,
)
from engram.stores.memory.users import apurge_store, purge_store
from engram.stores.memory.write.policy import PolicySettings, derived_id
from engram.stores.namespaces import hash_namespace, pending_namespace
from engram.stores.steps import Steps, arun_steps, run_steps

MAX_PENDING = 500
"""Pending memories kept per user at most: above it, the oldest are dropped (a user who never
answers should not grow the store without bound)."""


class PendingMemory(BaseModel):
    """A memory extraction proposed, waiting for the user's answer."""

    model_config = ConfigDict(extra="ignore")

    id: str
    content: str
    category: Category
    importance: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    key: str | None = None
    structured_data: dict[str, Any] | None = None
    replaces: str | None = None
    source_thread_id: str | None = None
    source_message_ids: list[str] = Field(default_factory=list)
    said_at: str | None = None
    """When the user said it (`MemoryCandidate.said_at`)."""
    created_at: str

    def candidate(self) -> MemoryCandidate:
        """What the write policy receives when the user approves."""
        return MemoryCandidate(
            content=self.content,
            category=self.category,
            importance=self.importance,
            confidence=self.confidence,
            key=self.key,
            structured_data=self.structured_data,
            message_ids=self.source_message_ids or None,
            replaces=self.replaces,
            said_at=self.said_at,
        )


class PendingMemories:
    """A user's pending memories in any LangGraph `BaseStore`: propose, list, approve, reject.

    Args:
        store: The store the user's memories live in.
        memories: Writes approved memories (default: `LongTermMemory(store)`, the rules' write
            policy; pass one with a `merge_decider` to let the memory model decide).
    """

    def __init__(self, store: BaseStore, memories: LongTermMemory | None = None) -> None:
        self.store = store
        self.memories = memories or LongTermMemory(store)

    async def apropose(
        self,
        user_id: str,
        candidates: Sequence[MemoryCandidate],
        *,
        thread_id: str | None = None,
        message_ids: Sequence[str] = (),
    ) -> list[PendingMemory]:
        """Keep candidates for confirmation; returns the ones newly waiting (a candidate that is
        already pending or already a memory, only a secret, or unimportant is not)."""
        return await arun_steps(
            self.store, _propose_steps(user_id, candidates, thread_id, list(message_ids))
        )

    def propose(
        self,
        user_id: str,
        candidates: Sequence[MemoryCandidate],
        *,
        thread_id: str | None = None,
        message_ids: Sequence[str] = (),
    ) -> list[PendingMemory]:
        """Sync `apropose`."""
        return run_steps(
            self.store, _propose_steps(user_id, candidates, thread_id, list(message_ids))
        )

    async def alist(self, user_id: str) -> list[PendingMemory]:
        """The user's pending memories, oldest first."""
        return await arun_steps(self.store, _list_steps(user_id))

    def list(self, user_id: str) -> list[PendingMemory]:
        """Sync `alist`."""
        return run_steps(self.store, _list_steps(user_id))

    async def aget(self, user_id: str, pending_id: str) -> PendingMemory | None:
        """One pending memory, or None."""
        return await arun_steps(self.store, _get_steps(user_id, pending_id))

    def get(self, user_id: str, pending_id: str) -> PendingMemory | None:
        """Sync `aget`."""
        return run_steps(self.store, _get_steps(user_id, pending_id))

    async def aapprove(self, user_id: str, pending_id: str) -> WriteResult | None:
        """Write the pending memory through the write policy, then stop waiting for it; what
        the policy did, or None if there is no such pending memory. Approving twice (after a
        crash between the two steps) finds the memory already written."""
        waiting = await self.aget(user_id, pending_id)
        if waiting is None:
            return None
        [result] = await self.memories.aupsert(
            user_id, [waiting.candidate()], thread_id=waiting.source_thread_id
        )
        await self.store.abatch([PutOp(pending_namespace(user_id), pending_id, None)])
        return result

    def approve(self, user_id: str, pending_id: str) -> WriteResult | None:
        """Sync `aapprove`."""
        waiting = self.get(user_id, pending_id)
        if waiting is None:
            return None
        [result] = self.memories.upsert(
            user_id, [waiting.candidate()], thread_id=waiting.source_thread_id
        )
        self.store.batch([PutOp(pending_namespace(user_id), pending_id, None)])
        return result

    async def areject(self, user_id: str, pending_id: str) -> bool:
        """Delete the pending memory and purge its text from the store's files; False if there
        was no such pending memory."""
        if await self.aget(user_id, pending_id) is None:
            return False
        await self.store.abatch([PutOp(pending_namespace(user_id), pending_id, None)])
        await apurge_store(self.store)
        return True

    def reject(self, user_id: str, pending_id: str) -> bool:
        """Sync `areject`."""
        return self.reject_many(user_id, [pending_id]) == [pending_id]

    def reject_many(self, user_id: str, pending_ids: Sequence[str]) -> list[str]:
        """`reject` for several pending memories, purging the store's files once; the ids that
        were pending."""
        waiting = {p.id for p in self.list(user_id)}
        gone = [i for i in dict.fromkeys(pending_ids) if i in waiting]
        if gone:
            self.store.batch([PutOp(pending_namespace(user_id), i, None) for i in gone])
            purge_store(self.store)
        return gone


def _propose_steps(
    user_id: str,
    candidates: Sequence[MemoryCandidate],
    thread_id: str | None,
    message_ids: list[str],
) -> Steps[list[PendingMemory]]:
    from engram.stores.secrets import redact, redact_data

    namespace, hashes = pending_namespace(user_id), hash_namespace(user_id)
    floor = PolicySettings().min_importance
    now = utc_now().isoformat()
    waiting: dict[str, PendingMemory] = {}
    for candidate in candidates:
        if candidate.update_only:  # not a memory by itself: only the merge decider may write it
            continue
        redacted = redact(candidate.content)
        content = redacted.text.strip()
        if redacted.only_secret or not content or candidate.effective_importance() < floor:
            continue
        digest = content_hash(content)
        pending_id = derived_id(namespace, digest)
        known, queued = yield [GetOp(hashes, digest), GetOp(namespace, pending_id)]
        if known is not None or queued is not None or pending_id in waiting:
            continue
        waiting[pending_id] = PendingMemory(
            id=pending_id,
            content=content,
            category=candidate.category,
            importance=candidate.effective_importance(),
            confidence=candidate.confidence,
            key=redact(candidate.key).text if candidate.key else None,
            structured_data=redact_data(candidate.structured_data),
            replaces=redact(candidate.replaces).text if candidate.replaces else None,
            source_thread_id=thread_id,
            source_message_ids=list(candidate.message_ids or message_ids),
            said_at=candidate.said_at,
            created_at=now,
        )
    if waiting:
        yield [PutOp(namespace, p.id, p.model_dump(), index=False) for p in waiting.values()]
        everyone = yield from _list_steps(user_id)
        if len(everyone) > MAX_PENDING:
            yield [PutOp(namespace, p.id, None) for p in everyone[: len(everyone) - MAX_PENDING]]
    return list(waiting.values())


def _list_steps(user_id: str) -> Steps[list[PendingMemory]]:
    (items,) = yield [SearchOp(pending_namespace(user_id), limit=MAX_PENDING * 2)]
    found = [PendingMemory.model_validate(item.value) for item in items]
    return sorted(found, key=lambda p: (parse_time(p.created_at), p.id))


def _get_steps(user_id: str, pending_id: str) -> Steps[PendingMemory | None]:
    (item,) = yield [GetOp(pending_namespace(user_id), pending_id)]
    return PendingMemory.model_validate(item.value) if item is not None else None
