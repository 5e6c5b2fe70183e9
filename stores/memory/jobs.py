"""The job journal: memory-model work that runs after the reply, recorded in the store first.

A background compaction or consolidation (`engram.nodes.work.background`) is one item under
`("memory_jobs", <user label>)`, keyed by the job id, written before the turn's reply returns:

- `status` "pending" while it runs, "done" with its `result` once it finished, "thread_deleted"
  when its thread was deleted while it ran (the job then discards what it archived of the thread
  and removes the entry);
- `owner`, the process running it (`host:pid:token`), and `lease_until`: the owner renews the
  lease while it works, so a job whose owner died (its process is gone from this host, or its
  lease ran out) is *abandoned* and any process may claim it again;
- `kind` and `thread_id`, for people reading the store.

An entry holds no message text: the messages a job works on stay in the thread's checkpointed
state until the job's result is applied there. A result holds the redacted summary or the
memories' events, nothing else. Entries live under the user's label, so `engram memory delete
--all` removes a user's pending jobs with the rest of their data.
"""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from langgraph.store.base import BaseStore, GetOp, PutOp

from engram.stores.namespaces import JOBS_NAMESPACE, user_label
from engram.stores.steps import Steps, arun_held, holds_across_processes, run_held

LEASE_SECONDS = 60.0
"""How long a job's owner may stay silent before another process may take the job over."""

JobStatus = Literal["pending", "done", "thread_deleted"]


def job_namespace(user_id: str) -> tuple[str, str]:
    """`("memory_jobs", user_label(user_id))`."""
    return (JOBS_NAMESPACE, user_label(user_id))


def owner_token() -> str:
    """This process's name as a job owner: host, pid and a random token (pids are reused)."""
    return _OWNER


def pending_op(
    user_id: str, job_id: str, *, kind: str, thread_id: str | None, lease_seconds: float = LEASE_SECONDS
) -> PutOp:
    """The write that records (or renews) this process's claim on a pending job."""
    now = datetime.now(UTC)
    return PutOp(
        job_namespace(user_id),
        job_id,
        {
            "kind": kind,
            "thread_id": thread_id,
            "status": "pending",
            "owner": _OWNER,
            "lease_until": (now + timedelta(seconds=lease_seconds)).isoformat(),
            "updated_at": now.isoformat(),
        },
        index=False,
    )


def done_op(
    user_id: str, job_id: str, *, kind: str, thread_id: str | None, result: dict[str, Any]
) -> PutOp:
    """The write that records a finished job's result, for the thread's next turn to apply."""
    return PutOp(
        job_namespace(user_id),
        job_id,
        {
            "kind": kind,
            "thread_id": thread_id,
            "status": "done",
            "owner": _OWNER,
            "result": result,
            "updated_at": datetime.now(UTC).isoformat(),
        },
        index=False,
    )


def thread_deleted_op(user_id: str, job_id: str, thread_id: str) -> PutOp:
    """The mark deleting a thread leaves on a job that may still run: no result, no owner; the
    job discards what it archived of the thread when it sees it, and removes it."""
    return PutOp(
        job_namespace(user_id),
        job_id,
        {"thread_id": thread_id, "status": "thread_deleted",
         "updated_at": datetime.now(UTC).isoformat()},
        index=False,
    )


def renew_steps(user_id: str, job_id: str, *, kind: str, thread_id: str | None) -> Steps[bool]:
    """Renew this process's lease on a job it still runs; False, writing nothing, when the entry
    is gone (its user deleted), marked (its thread deleted) or another process's."""
    (item,) = yield [GetOp(job_namespace(user_id), job_id)]
    value = item.value if item is not None else {}
    if value.get("status") != "pending" or value.get("owner") != _OWNER:
        return False
    yield [pending_op(user_id, job_id, kind=kind, thread_id=thread_id)]
    return True


def delete_op(user_id: str, job_id: str) -> PutOp:
    """The write that removes a job's entry (its result was applied)."""
    return PutOp(job_namespace(user_id), job_id, None)


def is_abandoned(value: dict[str, Any], *, now: datetime | None = None) -> bool:
    """Whether a pending job's owner is gone: its process no longer runs on this host, or its
    lease ran out (an owner on another host, or one that hangs)."""
    if value.get("status") != "pending":
        return False
    owner = str(value.get("owner", ""))
    if owner == _OWNER:
        return False
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host == _HOST and pid.isdigit() and not _alive(int(pid)):
        return True
    try:
        lease = datetime.fromisoformat(str(value.get("lease_until")))
    except ValueError:
        return True
    return lease <= (now or datetime.now(UTC))


def claim(
    store: BaseStore,
    user_id: str,
    job_id: str,
    *,
    kind: str,
    thread_id: str | None,
    claimable: Callable[[dict[str, Any] | None], bool],
) -> bool:
    """Take a job over for this process when its entry (None: gone) is `claimable`; whether it
    did. On a store that holds several calls at once across processes (`ChromaStore.exclusive`
    on an embedded folder), the read and the write are one compare-and-set: of processes
    claiming a job, at the same moment or one after the other, exactly one wins, and the others
    read its claim (Chroma has committed the write to its SQLite file before the folder is
    released). The claim is the winner's while its process runs and renews the lease: once its
    process is gone from this host, or its lease ran out, the job is abandoned (`is_abandoned`)
    and another process may win it again, as it should (that is how a job survives its owner).
    Elsewhere it is a write and a read-back: two may both win, and run the job twice (its
    results are idempotent: nothing is written twice)."""
    steps = _claim_steps(user_id, job_id, kind, thread_id, claimable, holds_across_processes(store))
    return run_held(store, steps)


async def aclaim(
    store: BaseStore,
    user_id: str,
    job_id: str,
    *,
    kind: str,
    thread_id: str | None,
    claimable: Callable[[dict[str, Any] | None], bool],
) -> bool:
    """`claim` from async code (the compare-and-set runs on a worker thread)."""
    steps = _claim_steps(user_id, job_id, kind, thread_id, claimable, holds_across_processes(store))
    return await arun_held(store, steps)


def _claim_steps(
    user_id: str,
    job_id: str,
    kind: str,
    thread_id: str | None,
    claimable: Callable[[dict[str, Any] | None], bool],
    compare_and_set: bool,
) -> Steps[bool]:
    """The claim's reads and writes: read, then write when claimable (inside a hold), or write,
    then read back whose it is."""
    read = GetOp(job_namespace(user_id), job_id)
    write = pending_op(user_id, job_id, kind=kind, thread_id=thread_id)
    if compare_and_set:
        (item,) = yield [read]
        if not claimable(item.value if item is not None else None):
            return False
        yield [write]
        return True
    yield [write]
    (item,) = yield [read]
    return item is not None and item.value.get("owner") == _OWNER


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: alive
        return True
    return True


_HOST = socket.gethostname().replace(":", "_")
_OWNER = f"{_HOST}:{os.getpid()}:{secrets.token_hex(6)}"
