"""Editing a memory as its owner: new content or category, with the old version kept as history.

An edit is a supersede, as when the write policy meets a new value of a `key`: the old memory
gets `valid_until` and `superseded_by`, the new one lists it in `supersedes` and takes over its
importance, key and provenance (source thread and messages), with confidence 1 (its owner wrote
it); an edited procedure (`engram.stores.memory.procedures`) gets the workflow its new text
writes, its uses kept. Secrets are redacted as on every write, and the new text is registered for exact-duplicate
detection.

Example:
    >>> from langgraph.store.memory import InMemoryStore
    >>> from engram.stores.memory.long_term import LongTermMemory, MemoryCandidate
    >>> from engram.stores.steps import run_steps
    >>> store = InMemoryStore()
    >>> [r] = LongTermMemory(store).upsert("alice", [MemoryCandidate(content="I use Vim", category="preference")])
    >>> new = run_steps(store, edit_steps("alice", r.memory.id, "I use Neovim", "preference", "2026-01-01T00:00:00+00:00"))
    >>> new.content, new.supersedes == [r.memory.id]
    ('I use Neovim', True)
"""

from __future__ import annotations

from langgraph.store.base import PutOp

from engram.stores.memory.procedures import procedure_fields
from engram.stores.memory.types import Category, Memory, content_hash, memory_put
from engram.stores.memory.write.policy import get_steps
from engram.stores.namespaces import hash_namespace, memory_namespace
from engram.stores.secrets import redact
from engram.stores.steps import Steps


class EditError(ValueError):
    """The edit cannot be applied (no such current memory, or nothing left after redaction)."""


def edit_steps(
    user_id: str, memory_id: str, content: str, category: Category, now: str
) -> Steps[Memory]:
    """Replace a current memory by an edited version; returns the new memory.

    Raises:
        EditError: No current memory `memory_id`, or `content` is empty or only a secret.
    """
    namespace = memory_namespace(user_id)
    memory = yield from get_steps(namespace, memory_id)
    if memory is None:
        raise EditError(f"no memory {memory_id} for user {user_id!r}")
    if not memory.current:
        raise EditError(
            f"memory {memory_id} was replaced by {memory.superseded_by}: edit that one instead"
        )
    redacted = redact(content)
    text = redacted.text.strip()
    if redacted.only_secret or not text:
        raise EditError(f"the new text of {memory_id} is empty or only a secret: not stored")
    procedure = procedure_fields(text, memory.structured_data) if category == "skill" else {}
    new = Memory.new(
        text,
        category,
        memory.importance,
        now=now,
        supersedes=[memory.id],
        confidence=1.0,
        source_thread_id=memory.source_thread_id,
        source_message_ids=memory.source_message_ids,
        **{"key": memory.key, **procedure},
    )
    old = memory.model_copy(
        update={"valid_until": now, "superseded_by": new.id, "replaced_as": "edited",
                "updated_at": now}
    )
    # Two batches, the new version first (an interruption leaves both current, never neither);
    # langgraph's InMemoryStore also fails on two puts of one text in a batch (a category edit).
    yield [
        memory_put(namespace, new),
        PutOp(
            hash_namespace(user_id),
            content_hash(text),
            {"memory_id": new.id},
            index=False,
        ),
    ]
    yield [memory_put(namespace, old)]
    return new
