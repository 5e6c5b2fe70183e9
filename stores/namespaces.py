"""Where engram keeps each kind of a user's data in a LangGraph store.

Every namespace is `(<kind>, <user_id>)`, so a user's data is found, counted and deleted by its
second label (`engram.stores.memory.users`). User ids are namespace labels: non-empty strings
without `.`.
"""

from __future__ import annotations

MEMORY_NAMESPACE = "memories"
"""Long-term memories: `("memories", user_id)`, one item per memory, keyed by its id."""
HASH_NAMESPACE = "memory_hashes"
"""The exact-duplicate registry: `("memory_hashes", user_id)`, keyed by a normalised text hash."""
EPISODE_NAMESPACE = "episodes"
"""Archived messages, evicted by compaction: `("episodes", user_id)`."""
JOURNAL_NAMESPACE = "memory_maintenance"
"""What maintenance changed, so that `restore` can undo it: `("memory_maintenance", user_id)`."""
THREAD_NAMESPACE = "threads"
"""The threads a user talked in: `("threads", user_id)`, keyed by thread id."""


def check_user(user_id: str) -> str:
    """`user_id` if it can be a namespace label.

    Raises:
        ValueError: It is empty, not a string, or holds a `.`.
    """
    if not isinstance(user_id, str) or not user_id or "." in user_id:
        raise ValueError(
            f"user_id must be a non-empty string without '.', since it is a LangGraph store "
            f"namespace label; got {user_id!r}. Replace dots (e.g. in e-mail addresses) first."
        )
    return user_id


def memory_namespace(user_id: str) -> tuple[str, str]:
    """`("memories", user_id)`."""
    return (MEMORY_NAMESPACE, check_user(user_id))


def hash_namespace(user_id: str) -> tuple[str, str]:
    """`("memory_hashes", user_id)`."""
    return (HASH_NAMESPACE, check_user(user_id))


def episode_namespace(user_id: str) -> tuple[str, str]:
    """`("episodes", user_id)`."""
    return (EPISODE_NAMESPACE, check_user(user_id))


def journal_namespace(user_id: str) -> tuple[str, str]:
    """`("memory_maintenance", user_id)`."""
    return (JOURNAL_NAMESPACE, check_user(user_id))


def thread_namespace(user_id: str) -> tuple[str, str]:
    """`("threads", user_id)`."""
    return (THREAD_NAMESPACE, check_user(user_id))
