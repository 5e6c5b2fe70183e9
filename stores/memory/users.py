"""Everything engram keeps about one user, as a whole: where it lives, stats, and deletion.

engram's namespaces put the user's label second (`engram.stores.namespaces.user_label`: the id,
with `%`, `.` and `*` escaped): `("memories", U)` (long-term memories),
`("memory_hashes", U)` (the exact-duplicate registry), `("episodes", U)` (archived messages),
`("memory_maintenance", U)` (what maintenance changed, so `restore` can undo it) and
`("threads", U)`, the thread registry: `consolidate` records each thread a user talks in (key:
the thread id), so that deleting the user can also delete those threads' checkpoints (messages
and running summary) from the checkpointer.

`delete_user` removes every namespace whose second label is the user id (the ones above and any
an app adds with the same convention), after deleting the registered threads from the
checkpointer it is given. Namespaces are matched label by label, so user `"al"` never touches
`"alice"`'s data, and since no label is `*`, no user id acts as a wildcard.

`delete_thread` removes one thread of one user: its checkpoints, and in the store its offloaded
tool results (`("tool_results", U, thread)`), the episodes archived from it (the items of
`("episodes", U)` whose `thread_id` is the thread), its background job entries (the items of
`("memory_jobs", U)` whose `thread_id` is the thread) and, when the checkpoints went too, its
entry in the thread registry. Another user's thread with the same id is not touched. Memories
extracted from the thread (and pending ones) are the user's long-term memory: they stay.

Functions come as store steps (`engram.stores.steps`); `adelete_user` / `delete_user` and
`adelete_thread` / `delete_thread` are the drivers that also reach the checkpointer. Deleting
leaves nothing behind in files engram can reach: a store that keeps files is purged afterwards
(`ChromaStore.purge_deleted`: Chroma's log, free pages and vector files, the BM25 index), and a
SQLite checkpointer deletes securely (`PRAGMA secure_delete`) and empties its write-ahead log.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from engram.stores.memory.jobs import is_abandoned, job_namespace, thread_deleted_op
from engram.stores.memory.types import Memory
from engram.stores.namespaces import (
    MEMORY_NAMESPACE,
    THREAD_NAMESPACE,
    episode_namespace,
    memory_namespace,
    thread_namespace,
    tool_result_namespace,
    user_label,
    user_of_label,
)
from engram.stores.steps import Steps, arun_steps, run_steps

if TYPE_CHECKING:
    from langgraph.checkpoint.base import BaseCheckpointSaver

_NO_LOCK = contextlib.nullcontext()
PAGE = 100_000
"""Items read or deleted per store call when walking a whole namespace. Large: a plain search
costs `ChromaStore` a read of the namespace's metadata whatever the page size (it reads them a
page of its own at a time), so one call that takes a whole namespace is the fastest, and what
walks one (a listing, an export) holds all of it anyway."""


def register_thread_op(user_id: str, thread_id: str, now: str) -> PutOp:
    """The write that records `thread_id` as one of `user_id`'s threads (not indexed)."""
    return PutOp(
        thread_namespace(user_id),
        thread_id,
        {"thread_id": thread_id, "registered_at": now},
        index=False,
    )


def thread_owner(values: Mapping[str, Any]) -> str | None:
    """The user a thread belongs to, from its state (a checkpoint's channel values): `owner`,
    the user of its first run; for a thread run before engram recorded owners, the user its
    registry entry is under (`registered_user`). None for a thread no run has claimed."""
    return values.get("owner") or values.get("registered_user")


@dataclass(frozen=True)
class UserStats:
    """What engram holds about one user."""

    user_id: str
    memories: int
    """Memories in any state."""
    active: int
    """Current and not forgotten: what recall sees."""
    superseded: int
    """Replaced by a newer value or compressed (history)."""
    forgotten: int
    """Soft-deleted (restorable)."""
    by_category: dict[str, int]
    """Active memories per category."""
    mean_importance: float | None
    """Of the active memories (None when there is none)."""
    never_recalled: int
    """Active memories never recalled (`access_count` 0)."""
    oldest: str | None
    """`created_at` of the oldest active memory."""
    newest: str | None
    """`created_at` of the newest active memory."""
    namespaces: dict[str, int] = field(default_factory=dict)
    """Items per namespace root (`memories`, `episodes`, `threads`, ...)."""
    unreadable: int = 0
    """Items of the memory namespace that are not memories (put there by something other
    than engram), left out of every other count."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return asdict(self)


@dataclass(frozen=True)
class DeleteReport:
    """What `delete_user` removed."""

    user_id: str
    deleted: dict[str, int]
    """Items removed per namespace root (`memories`, `memory_hashes`, `episodes`, ...)."""
    threads: list[str]
    """Threads whose checkpoints were deleted from the checkpointer."""
    threads_not_deleted: list[str]
    """Registered threads left in the checkpointer because none was given."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return asdict(self)


# -- steps ----------------------------------------------------------------------------------------


def items_steps(
    namespace: tuple[str, ...], filter: dict[str, Any] | None = None
) -> Steps[list[Item]]:
    """Every item of exactly `namespace` (not of namespaces below it) whose value matches
    `filter` (all of them without one), newest first."""
    items: list[Item] = []
    offset = 0
    while True:
        (page,) = yield [SearchOp(namespace, filter=filter, limit=PAGE, offset=offset)]
        items.extend(i for i in page if tuple(i.namespace) == tuple(namespace))
        if len(page) < PAGE:
            return items
        offset += PAGE


def memories_steps(user_id: str) -> Steps[list[Memory]]:
    """All of a user's memories, in any state (current, superseded, forgotten); an item of
    their memory namespace that is not a memory is skipped (`Memory.readable`)."""
    memories, _ = yield from readable_memories_steps(user_id)
    return memories


def readable_memories_steps(user_id: str) -> Steps[tuple[list[Memory], list[str]]]:
    """All of a user's memories, and the keys of the items of their memory namespace that are
    not memories (skipped)."""
    items = yield from items_steps(memory_namespace(user_id))
    return Memory.readable(items)


def user_namespaces_steps(user_id: str) -> Steps[list[tuple[str, ...]]]:
    """Every namespace whose second label is the user's (`("memories", U)`, `("episodes", U)`,
    ...)."""
    label = user_label(user_id)
    condition = MatchCondition(match_type="prefix", path=("*", label))
    found: list[tuple[str, ...]] = []
    offset = 0
    while True:
        (page,) = yield [ListNamespacesOp(match_conditions=(condition,), limit=PAGE, offset=offset)]
        found.extend(tuple(ns) for ns in page)
        if len(page) < PAGE:
            return sorted(set(found))
        offset += PAGE


def users_steps() -> Steps[list[str]]:
    """Users that have long-term memories (their ids, not their labels), sorted."""
    condition = MatchCondition(match_type="prefix", path=(MEMORY_NAMESPACE,))
    users: set[str] = set()
    offset = 0
    while True:
        (page,) = yield [
            ListNamespacesOp(match_conditions=(condition,), max_depth=2, limit=PAGE, offset=offset)
        ]
        users.update(u for ns in page if len(ns) == 2 and (u := user_of_label(ns[1])) is not None)
        if len(page) < PAGE:
            return sorted(users)
        offset += PAGE


def stats_steps(user_id: str) -> Steps[UserStats]:
    """Counts of a user's memories by state and category, and of items per namespace."""
    memories, unreadable = yield from readable_memories_steps(user_id)
    namespaces: dict[str, int] = {}
    for namespace in (yield from user_namespaces_steps(user_id)):
        if namespace == memory_namespace(user_id):
            count = len(memories) + len(unreadable)
        else:
            count = len((yield from items_steps(namespace)))
        namespaces[namespace[0]] = namespaces.get(namespace[0], 0) + count
    active = [m for m in memories if m.current and not m.forgotten]
    created = sorted(m.created_at for m in active)
    return UserStats(
        user_id=user_id,
        memories=len(memories),
        active=len(active),
        superseded=sum(not m.current for m in memories),
        forgotten=sum(m.forgotten for m in memories),
        by_category=dict(sorted(Counter(m.category for m in active).items())),
        mean_importance=sum(m.importance for m in active) / len(active) if active else None,
        never_recalled=sum(m.access_count == 0 for m in active),
        oldest=created[0] if created else None,
        newest=created[-1] if created else None,
        namespaces=dict(sorted(namespaces.items())),
        unreadable=len(unreadable),
    )


def registered_threads_steps(user_id: str) -> Steps[list[str]]:
    """The thread ids `consolidate` registered for a user."""
    items = yield from items_steps(thread_namespace(user_id))
    return sorted(i.key for i in items)


def purge_user_steps(user_id: str) -> Steps[dict[str, int]]:
    """Delete every item in every namespace whose second label is `user_id`; counts per root."""
    deleted: dict[str, int] = {}
    namespaces = yield from user_namespaces_steps(user_id)
    # the thread registry goes last: an interrupted deletion can be repeated and still finds it
    for namespace in sorted(namespaces, key=lambda ns: (ns[0] == THREAD_NAMESPACE, ns)):
        previous: set[tuple[tuple[str, ...], str]] = set()
        while True:
            (page,) = yield [SearchOp(namespace, limit=PAGE)]
            keys = {(tuple(i.namespace), i.key) for i in page}
            if not keys:
                break
            if keys == previous:
                raise RuntimeError(
                    f"the store did not delete items of {namespace}: {sorted(keys)[:3]}"
                )
            yield [PutOp(ns, key, None) for ns, key in keys]
            deleted[namespace[0]] = deleted.get(namespace[0], 0) + len(keys)
            previous = keys
    return dict(sorted(deleted.items()))


def delete_thread_steps(user_id: str, thread_id: str, *, registry: bool) -> Steps[dict[str, int]]:
    """Delete one thread of `user_id` from the store: its job entries first (one a process still
    runs is marked instead, `thread_deleted_op`: the job then discards what it archived of the
    thread and removes the mark, `engram.nodes.work.background`), then its offloaded tool
    results and its episodes, and its registry entry last when `registry`; the items deleted (or
    marked) per namespace root."""
    deleted: dict[str, int] = {}
    mine = {"thread_id": thread_id}
    jobs = yield from items_steps(job_namespace(user_id), mine)
    running = [j for j in jobs if j.value.get("status") == "pending" and not is_abandoned(j.value)]
    if running:  # marked, not deleted: the job keeps the user's memories it touched
        yield [thread_deleted_op(user_id, j.key, thread_id) for j in running]
        deleted[running[0].namespace[0]] = len(running)
    yield from _delete_items_steps([j for j in jobs if j not in running], deleted)
    results = yield from items_steps(tool_result_namespace(user_id, thread_id))
    episodes = yield from items_steps(episode_namespace(user_id), mine)
    yield from _delete_items_steps(results + episodes, deleted)
    if registry:
        (entry,) = yield [GetOp(thread_namespace(user_id), thread_id)]
        yield from _delete_items_steps([entry] if entry is not None else [], deleted)
    return dict(sorted(deleted.items()))


# -- drivers --------------------------------------------------------------------------------------


async def adelete_user(
    store: BaseStore, user_id: str, *, checkpointer: BaseCheckpointSaver | None = None
) -> DeleteReport:
    """Delete everything engram holds about `user_id`: not restorable.

    The registered threads are deleted from `checkpointer` first (their messages and running
    summaries), then every store namespace of the user, the thread registry last, so that a run
    interrupted half-way can simply be repeated.

    Args:
        store: The store the graph writes to.
        user_id: Whose data.
        checkpointer: The graph's checkpointer; None leaves the threads there and lists them in
            `threads_not_deleted`.
    """
    threads = await arun_steps(store, registered_threads_steps(user_id))
    if checkpointer is not None:
        owners = [await checkpointer.aget_tuple(_thread_config(t)) for t in threads]
        threads = _owned(threads, owners, user_id)
        await adelete_checkpoints(checkpointer, threads)
    deleted = await arun_steps(store, purge_user_steps(user_id))
    await apurge_store(store)
    return _delete_report(user_id, deleted, threads, checkpointer is not None)


def delete_user(
    store: BaseStore, user_id: str, *, checkpointer: BaseCheckpointSaver | None = None
) -> DeleteReport:
    """Sync `adelete_user`."""
    threads = run_steps(store, registered_threads_steps(user_id))
    if checkpointer is not None:
        owners = [checkpointer.get_tuple(_thread_config(t)) for t in threads]
        threads = _owned(threads, owners, user_id)
        delete_checkpoints(checkpointer, threads)
    deleted = run_steps(store, purge_user_steps(user_id))
    purge_store(store)
    return _delete_report(user_id, deleted, threads, checkpointer is not None)


async def adelete_thread(
    store: BaseStore,
    user_id: str,
    thread_id: str,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
) -> dict[str, int]:
    """Delete one thread of `user_id`, purged from the store's files: not restorable.

    Its checkpoints go from `checkpointer` (messages, running summary, task state, results kept
    in the thread), then from `store` its background job entries, offloaded tool results and
    archived episodes, and its registry entry. Another user's thread with the same id, the
    user's other threads and the user's memories stay.

    Args:
        store: The store the graph writes to.
        user_id: Whose thread.
        thread_id: The thread's `configurable.thread_id`.
        checkpointer: The graph's checkpointer; None leaves the checkpoints there, and the
            registry entry that lets `delete_user` find them.

    Returns:
        The store items deleted per namespace root (`episodes`, `tool_results`, ...).

    Raises:
        ValueError: `thread_id` is not a non-empty string, or the thread's checkpoints say it
            belongs to another user (`thread_owner`): nothing is deleted then.
    """
    _check_thread(thread_id)
    if checkpointer is not None:
        found = await checkpointer.aget_tuple(_thread_config(thread_id))
        _check_owner(found, user_id, thread_id)
        await adelete_checkpoints(checkpointer, [thread_id])
    steps = delete_thread_steps(user_id, thread_id, registry=checkpointer is not None)
    deleted = await arun_steps(store, steps)
    await apurge_store(store)
    return deleted


def delete_thread(
    store: BaseStore,
    user_id: str,
    thread_id: str,
    *,
    checkpointer: BaseCheckpointSaver | None = None,
) -> dict[str, int]:
    """Sync `adelete_thread`."""
    _check_thread(thread_id)
    if checkpointer is not None:
        found = checkpointer.get_tuple(_thread_config(thread_id))
        _check_owner(found, user_id, thread_id)
        delete_checkpoints(checkpointer, [thread_id])
    steps = delete_thread_steps(user_id, thread_id, registry=checkpointer is not None)
    deleted = run_steps(store, steps)
    purge_store(store)
    return deleted


async def adelete_checkpoints(checkpointer: BaseCheckpointSaver, thread_ids: list[str]) -> None:
    """Delete the threads' checkpoints (messages, running summaries, all their state); a SQLite
    checkpointer deletes securely and empties its write-ahead log (`_secure_checkpointer`)."""
    await asyncio.to_thread(_secure_checkpointer, checkpointer, done=False)
    for thread_id in thread_ids:
        await checkpointer.adelete_thread(thread_id)
    await asyncio.to_thread(_secure_checkpointer, checkpointer, done=True)


def delete_checkpoints(checkpointer: BaseCheckpointSaver, thread_ids: list[str]) -> None:
    """Sync `adelete_checkpoints`."""
    _secure_checkpointer(checkpointer, done=False)
    for thread_id in thread_ids:
        checkpointer.delete_thread(thread_id)
    _secure_checkpointer(checkpointer, done=True)


async def apurge_store(store: BaseStore) -> None:
    """Purge what was deleted from the store's files, if it keeps any (`purge_deleted`)."""
    if (purge := getattr(store, "apurge_deleted", None)) is not None:
        await purge()


def purge_store(store: BaseStore) -> None:
    """Sync `apurge_store`."""
    if (purge := getattr(store, "purge_deleted", None)) is not None:
        purge()


def _thread_config(thread_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": thread_id}}


def _owned(threads: list[str], found: list[Any], user_id: str) -> list[str]:
    """The registered threads whose checkpoints say they are `user_id`'s (or say nothing): a
    registry entry alone never makes another user's thread deletable."""
    owners = [
        thread_owner(f.checkpoint.get("channel_values", {})) if f is not None else None
        for f in found
    ]
    return [t for t, owner in zip(threads, owners, strict=True) if owner in (None, user_id)]


def _check_owner(found: Any, user_id: str, thread_id: str) -> None:
    """Refuse a thread whose checkpoints say it belongs to another user (`thread_owner`):
    checkpoints are keyed by the thread id alone."""
    values = found.checkpoint.get("channel_values", {}) if found is not None else {}
    owner = thread_owner(values)
    if owner is not None and owner != user_id:
        raise ValueError(
            f"thread {thread_id!r} belongs to another user than {user_id!r}: nothing was "
            "deleted; delete it with the id of the user who started it"
        )


def _check_thread(thread_id: str) -> None:
    if not isinstance(thread_id, str) or not thread_id.strip():
        raise ValueError(
            f"thread_id must be a non-empty string, got {thread_id!r}: pass the "
            "`configurable.thread_id` the thread ran with"
        )


def _delete_items_steps(items: list[Item], deleted: dict[str, int]) -> Steps[None]:
    """Delete `items`, counting them per namespace root into `deleted`."""
    if items:
        yield [PutOp(tuple(i.namespace), i.key, None) for i in items]
    for item in items:
        deleted[item.namespace[0]] = deleted.get(item.namespace[0], 0) + 1


def _delete_report(
    user_id: str, deleted: dict[str, int], threads: list[str], with_checkpointer: bool
) -> DeleteReport:
    return DeleteReport(
        user_id=user_id,
        deleted=deleted,
        threads=threads if with_checkpointer else [],
        threads_not_deleted=[] if with_checkpointer else threads,
    )


def _secure_checkpointer(checkpointer: BaseCheckpointSaver, *, done: bool) -> None:
    """Before deleting from a SQLite checkpointer, make its deletes overwrite the data; after,
    empty its write-ahead log, which still holds earlier versions of the pages. Other
    checkpointers are left as they are (docs/privacy.md)."""
    conn = getattr(checkpointer, "conn", None)
    if not isinstance(conn, sqlite3.Connection):
        return
    with getattr(checkpointer, "lock", None) or _NO_LOCK:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)" if done else "PRAGMA secure_delete=ON")
