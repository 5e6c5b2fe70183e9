"""Where engram keeps each kind of a user's data in a LangGraph store, and how a user id becomes
a namespace label.

Every namespace is `(<kind>, <label>)`, where `<label>` is `user_label(user_id)`, so a user's
data is found, counted and deleted by its second label (`engram.stores.memory.users`).

Any non-empty string is a user id (e-mail addresses, `*`, `/`, spaces, CJK, control
characters, ...), except one made only of whitespace or starting or ending with whitespace
(`user_id_problem`): `"alice "` would be another user than `"alice"`, by accident, and
stripping it would make two ids one user, so it is refused. Four characters cannot appear in a label as
they are: `.` and NUL (LangGraph forbids them in labels), `*` (a wildcard when namespaces are
listed) and `%` (the escape character itself). `user_label` writes each of them as `%` and its
two hex digits (`%2E`, `%00`, `%2A`, `%25`), the way URLs do, and leaves every other character
alone: `"alice"` stays `"alice"`, `"alice@example.com"` becomes
`"alice@example%2Ecom"`, `"*"` becomes `"%2A"`. The mapping is reversible (`user_of_label`), and
no two ids share a label. User-facing output (stats, export, the CLI) shows the id, never the
label.

Ids that engram accepted before (non-empty, without `.`) keep their label unless they hold `*`
or `%`; stores written then are relabelled once when `ChromaStore` opens them
(`engram.stores.chroma.relabel`).
"""

from __future__ import annotations

import re

MEMORY_NAMESPACE = "memories"
"""Long-term memories: `("memories", label)`, one item per memory, keyed by its id."""
HASH_NAMESPACE = "memory_hashes"
"""The exact-duplicate registry: `("memory_hashes", label)`, keyed by a normalised text hash."""
EPISODE_NAMESPACE = "episodes"
"""Archived messages, evicted by compaction: `("episodes", label)`."""
JOURNAL_NAMESPACE = "memory_maintenance"
"""What maintenance changed, so that `restore` can undo it: `("memory_maintenance", label)`."""
THREAD_NAMESPACE = "threads"
"""The threads a user talked in: `("threads", label)`, keyed by thread id."""
JOBS_NAMESPACE = "memory_jobs"
"""Background memory-model work not yet applied to its thread: `("memory_jobs", label)`, keyed
by job id (`engram.stores.memory.jobs`)."""
PENDING_NAMESPACE = "pending_memories"
"""Memories waiting for the user's confirmation (`Context.confirm_memories`):
`("pending_memories", label)`, keyed by id, not indexed (`engram.stores.memory.pending`)."""
TOOL_RESULT_NAMESPACE = "tool_results"
"""A thread's working memory, the tool results offloaded out of its context:
`("tool_results", label, thread label)` (`engram.stores.working`), deleted with the thread or
the user."""
USER_ROOTS = (
    MEMORY_NAMESPACE,
    PENDING_NAMESPACE,
    HASH_NAMESPACE,
    EPISODE_NAMESPACE,
    JOURNAL_NAMESPACE,
    THREAD_NAMESPACE,
    JOBS_NAMESPACE,
    TOOL_RESULT_NAMESPACE,
)
"""Every namespace root engram keys by user."""

ESCAPED = {"%": "%25", ".": "%2E", "*": "%2A", "\x00": "%00"}
"""The characters a label cannot hold as they are, and how `user_label` writes them."""
_ESCAPE = re.compile("[%.*\x00]")
_UNESCAPE = re.compile("%(25|2E|2A|00)")
_UNESCAPED = {code[1:]: char for char, code in ESCAPED.items()}


def user_id_problem(user_id: object) -> str | None:
    """What keeps `user_id` from being a user id, said after the id ("is only whitespace"), or
    None when it is one: any string but an empty one, one made only of whitespace, or one
    starting or ending with whitespace. Every way a user id comes in (the CLI's `--user`, the
    `X-Engram-User` header, `Context.user_id`, the store) asks this one function.

    Example:
        >>> user_id_problem("alice"), user_id_problem("a b"), user_id_problem("alice ")
        (None, None, 'starts or ends with whitespace')
    """
    if not isinstance(user_id, str):
        return "is not a string"
    if not user_id.strip():
        return "is empty" if not user_id else "is only whitespace"
    if user_id != user_id.strip():
        return "starts or ends with whitespace"
    return None


def check_user(user_id: str) -> str:
    """`user_id` if it can be a user id (`user_id_problem`).

    Raises:
        ValueError: It is not a string, is empty or only whitespace, or starts or ends with
            whitespace.
    """
    problem = user_id_problem(user_id)
    if problem is not None:
        raise ValueError(
            f"user_id must be a non-empty string without whitespace at its start or end (any "
            f"other characters), got {user_id!r}, which {problem}: pass the id your app knows "
            "the person by, such as an e-mail address"
        )
    return user_id


def user_label(user_id: str) -> str:
    """The namespace label of a user id: the id, with `%`, `.`, `*` and NUL escaped.

    Example:
        >>> user_label("alice"), user_label("alice@example.com"), user_label("*")
        ('alice', 'alice@example%2Ecom', '%2A')
        >>> user_label("alice" + chr(0))
        'alice%00'


    Raises:
        ValueError: `user_id` is not a non-empty string.
    """
    return _ESCAPE.sub(lambda m: ESCAPED[m.group()], check_user(user_id))


def user_of_label(label: str) -> str | None:
    """The user id whose label this is; None if `user_label` never writes it (an old label).

    Example:
        >>> user_of_label("alice@example%2Ecom"), user_of_label("*")
        ('alice@example.com', None)
    """
    if not label or "*" in label or "." in label:
        return None
    user_id = _UNESCAPE.sub(lambda m: _UNESCAPED[m.group(1)], label)
    if user_id_problem(user_id) is not None:  # written before such ids were refused
        return None
    return user_id if user_label(user_id) == label else None


def memory_namespace(user_id: str) -> tuple[str, str]:
    """`("memories", user_label(user_id))`."""
    return (MEMORY_NAMESPACE, user_label(user_id))


def pending_namespace(user_id: str) -> tuple[str, str]:
    """`("pending_memories", user_label(user_id))`."""
    return (PENDING_NAMESPACE, user_label(user_id))


def hash_namespace(user_id: str) -> tuple[str, str]:
    """`("memory_hashes", user_label(user_id))`."""
    return (HASH_NAMESPACE, user_label(user_id))


def episode_namespace(user_id: str) -> tuple[str, str]:
    """`("episodes", user_label(user_id))`."""
    return (EPISODE_NAMESPACE, user_label(user_id))


def journal_namespace(user_id: str) -> tuple[str, str]:
    """`("memory_maintenance", user_label(user_id))`."""
    return (JOURNAL_NAMESPACE, user_label(user_id))


def thread_namespace(user_id: str) -> tuple[str, str]:
    """`("threads", user_label(user_id))`."""
    return (THREAD_NAMESPACE, user_label(user_id))


def tool_result_namespace(user_id: str, thread_id: str) -> tuple[str, str, str]:
    """`("tool_results", user_label(user_id), user_label(thread_id))`: a thread id is written
    as a label the way a user id is (`%`, `.` and `*` escaped).

    Example:
        >>> tool_result_namespace("alice", "support.1")
        ('tool_results', 'alice', 'support%2E1')
    """
    return (TOOL_RESULT_NAMESPACE, user_label(user_id), user_label(thread_id))
