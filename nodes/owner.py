"""Who a thread belongs to: the user of its first run, recorded in its state (`owner`).

LangGraph keys a thread's checkpoints by the thread id alone, so nothing else stops a run for
one user on another user's thread: it would read that user's messages and summary into its
prompt, archive them under its own user, and register the thread for itself. A run for anyone
but the owner is refused (`ThreadOwnerError`) before it reads or writes anything: the graph
checks on its way from START (so LangGraph never adds the refused input to the thread's
messages), the `create_agent` middleware in its first hook.

Threads that engram ran before it recorded owners have no `owner`; their `registered_user` (the
user the thread registry lists them under) stands for it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engram.stores.memory.users import thread_owner


class ThreadOwnerError(ValueError):
    """A run for one user on a thread another user started: nothing was read or written. (A
    `ValueError`, so that a LangGraph server shows its message to the client.)"""


def check_thread_owner(state: Mapping[str, Any], user_id: str, thread_id: str | None) -> None:
    """Refuse a run for `user_id` on a thread another user started.

    Example:
        >>> check_thread_owner({"owner": "alice"}, "alice", "t1")  # her own: fine
        >>> check_thread_owner({"owner": "alice"}, "bob", "t1")
        Traceback (most recent call last):
        ...
        engram.nodes.owner.ThreadOwnerError: thread 't1' belongs to another user ...

    Raises:
        ThreadOwnerError: The thread's owner is another user.
    """
    owner = thread_owner(state)
    if owner is not None and owner != user_id:
        raise ThreadOwnerError(
            f"thread {thread_id!r} belongs to another user than {user_id!r}: a thread is run "
            "only for the user who started it, so nothing was read or written; start a new "
            "thread (another thread_id) for this user"
        )


def claim(state: Mapping[str, Any], user_id: str) -> dict[str, str]:
    """The state update that records `user_id` as the owner of a thread that has none yet."""
    return {} if thread_owner(state) is not None else {"owner": user_id}
