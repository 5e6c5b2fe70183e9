"""Memory-model work off the reply's critical path: extraction and summary updates
never block the conversation.

In background mode (`Context.memory_work`) `compact` and `consolidate` do not call the memory
model themselves: each records a job and returns, so the turn's `invoke` returns as fast as a
plain turn. A job is:

1. journaled: an entry in the store (`engram.stores.memory.jobs`, before the reply returns)
   and a reference in the thread's state (`memory_jobs`, with what the job needs to run again:
   a consolidation's messages, a compaction's message ids; the messages themselves stay in the
   checkpointed state, never in the store);
2. run by this process's worker, an event loop on its own thread, which renews the entry's
   lease while it works and writes the result into the entry;
3. applied by the thread's next `start` (a graph node, so state changes only there and no
   concurrent turn races it): the summary and the removal of the folded messages, the
   consolidation's record and `memory.*` events; the entry is then deleted.

A job whose owner is gone (its process was killed, or its lease ran out) is claimed again by
the thread's next turn, in whichever process that runs; a job whose run failed in this process
is run again the same way. Results are idempotent (the write policy creates nothing twice,
episodes have fixed keys), so a job run twice changes nothing more. A session end
(`{"end_session": True}`) waits for the thread's jobs; incognito runs use no jobs.

The worker's loop runs only the jobs. Their memory-model calls go through the model's sync API
on engram's call threads (`engram.nodes.model.calls`), as every memory-model call does, so
the worker never puts a model's async client on a loop of its own.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import logging
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from functools import cache
from typing import TYPE_CHECKING, Any
from uuid import uuid4

from langchain_core.messages import RemoveMessage
from langgraph.graph.message import add_messages
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, GetOp, PutOp
from langgraph.types import Overwrite

from engram.nodes.failures import RECOVERABLE_ERRORS, record_failure
from engram.nodes.work.results import APPLIERS
from engram.stores.memory.jobs import (
    LEASE_SECONDS,
    aclaim,
    delete_op,
    done_op,
    is_abandoned,
    job_namespace,
    owner_token,
    pending_op,
    renew_steps,
)
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.users import apurge_store
from engram.stores.steps import arun_held

if TYPE_CHECKING:
    from engram.nodes.context import Context
    from engram.nodes.state import EngramState

logger = logging.getLogger(__name__)

Runner = Callable[[dict[str, Any], "EngramState", Runtime["Context"]], Awaitable[dict[str, Any]]]
"""Runs one job (its reference, the thread's state, the run's runtime) and returns its result."""

class MemoryWork:
    """The background jobs of one graph (or middleware): which kinds it runs, and when.

    Args:
        memory_model: Whether a memory model is configured ("auto" mode runs in the background
            only then: the offline built-ins take milliseconds).
        kinds: The kinds of work that may go to the background (the middleware compacts
            before the model call, always inline).

    Example:
        >>> from engram.nodes.context import Context
        >>> work = MemoryWork(memory_model=True)
        >>> inline = Context(memory_work="inline")
        >>> work.in_background(Context(), "compact"), work.in_background(inline, "compact")
        (True, False)
        >>> MemoryWork(memory_model=False).in_background(Context(), "consolidate")
        False
    """

    def __init__(
        self, *, memory_model: bool, kinds: tuple[str, ...] = ("compact", "consolidate")
    ) -> None:
        self.memory_model = memory_model
        self.kinds = kinds
        self._runners: dict[str, Runner] = {}

    def register(self, kind: str, runner: Runner) -> None:
        """Name the coroutine that runs jobs of `kind` ("compact", "consolidate")."""
        self._runners[kind] = runner

    def in_background(self, ctx: Context, kind: str) -> bool:
        """Whether this run's work of `kind` goes to the background."""
        if ctx.incognito or kind not in self.kinds:
            return False
        return ctx.memory_work == "background" or (
            ctx.memory_work == "auto" and self.memory_model
        )

    async def submit(
        self, kind: str, job: dict[str, Any], state: EngramState, runtime: Runtime[Context]
    ) -> dict[str, Any] | None:
        """Journal a job and start it; the state update that records it, or None when the
        journal could not be written (the caller then does the work inline).

        Args:
            kind: A registered kind.
            job: What the job needs besides its id, kind and user (kept in the state).
            state: The thread's state now (the job reads its messages).
            runtime: The run's runtime (store, context, thread id).
        """
        store = runtime.store
        if store is None:
            return None
        job = {"id": str(uuid4()), "kind": kind, "user_id": runtime.context.user_id, **job}
        thread_id = _thread_id(runtime)
        try:
            await store.abatch(
                [pending_op(job["user_id"], job["id"], kind=kind, thread_id=thread_id)]
            )
        except RECOVERABLE_ERRORS as exc:
            record_failure("journal", exc)
            return None
        self._start(job, _snapshot(state), runtime)
        return {"memory_jobs": [*state.get("memory_jobs", []), job]}

    async def collect(
        self, state: EngramState, runtime: Runtime[Context], *, finish: bool = False
    ) -> dict[str, Any]:
        """Apply the thread's finished jobs and restart its abandoned ones; the state update.

        Args:
            state: The thread's state.
            runtime: The run's runtime.
            finish: Wait for every job of the thread first (a session end), running abandoned
                ones here.
        """
        every = list(state.get("memory_jobs", ()))
        jobs = [j for j in every if j.get("user_id") == runtime.context.user_id]
        if len(jobs) < len(every):  # a thread is its owner's: a job naming anyone else is no job
            logger.warning("dropped %d memory jobs of another user than the thread's",
                           len(every) - len(jobs))
        store = runtime.store
        if not jobs or store is None:
            return {"memory_jobs": jobs} if len(jobs) < len(every) else {}
        if finish:
            await self._finish(jobs, state, runtime)
        try:
            items = await store.abatch(
                [GetOp(job_namespace(j["user_id"]), j["id"]) for j in jobs]
            )
        except RECOVERABLE_ERRORS as exc:
            return {"failures": [record_failure("journal", exc)]}
        working = state  # as the jobs applied so far leave it
        update: dict[str, Any] = {"failures": []}
        removals: list[RemoveMessage] = []
        remaining = []
        for job, item in zip(jobs, items, strict=True):
            value = item.value if item is not None else None
            if value is not None and value.get("status") == "done":
                step = APPLIERS[job["kind"]](working, job, value["result"], runtime.stream_writer)
                working = applied_state(working, step)
                update["failures"] += step.pop("failures", [])
                removals += step.pop("messages", None) or []
                update.update(step)
                continue
            remaining.append(job)
            if value is None or is_abandoned(value) or _lost_here(value, job):
                await self._claim(job, working, runtime)
        update["memory_jobs"] = remaining
        if removals:
            update["messages"] = removals
        return update

    async def release(
        self, jobs: Iterable[dict[str, Any]], update: dict[str, Any], runtime: Runtime[Context]
    ) -> list[dict[str, str]]:
        """Delete the journal entries of the `jobs` that `update` (from `collect`) applied; the
        failures. A node calls this last, once it can no longer fail: a node that fails after
        `collect` leaves the journal as it was, and the next turn applies the jobs again.

        Args:
            jobs: The jobs the node knew of (its state's, and any it submitted).
            update: The node's update (a job it applied is missing from its `memory_jobs`).
            runtime: The run's runtime.
        """
        if "memory_jobs" not in update or runtime.store is None:
            return []
        kept = {j["id"] for j in update["memory_jobs"]}
        mine = runtime.context.user_id  # a dropped job of anyone else's is left where it is
        applied = [j for j in jobs if j["id"] not in kept and j.get("user_id") == mine]
        if not applied:
            return []
        try:
            await runtime.store.abatch([delete_op(j["user_id"], j["id"]) for j in applied])
        except RECOVERABLE_ERRORS as exc:  # applied all the same: the state says so
            return [record_failure("journal", exc)]
        return []

    async def _claim(
        self, job: dict[str, Any], state: EngramState, runtime: Runtime[Context]
    ) -> None:
        """Take over a job whose owner is gone (unless another process just did), and run it
        here."""
        store = runtime.store
        assert store is not None

        def claimable(value: dict[str, Any] | None) -> bool:
            return value is None or is_abandoned(value) or _lost_here(value, job)

        try:
            claimed = await aclaim(
                store, job["user_id"], job["id"], kind=job["kind"],
                thread_id=_thread_id(runtime), claimable=claimable,
            )
        except RECOVERABLE_ERRORS as exc:
            record_failure("journal", exc)
            return
        if not claimed:
            return  # another process claimed it at the same time: it runs it
        logger.info("resuming %s job %s of an earlier process", job["kind"], job["id"])
        self._start(job, _snapshot(state), runtime)

    async def _finish(
        self, jobs: list[dict[str, Any]], state: EngramState, runtime: Runtime[Context]
    ) -> None:
        """Wait for the jobs running here, having claimed the abandoned ones."""
        store = runtime.store
        assert store is not None
        for job in jobs:
            if job["id"] in _INFLIGHT:
                continue
            try:
                (item,) = await store.abatch([GetOp(job_namespace(job["user_id"]), job["id"])])
            except RECOVERABLE_ERRORS as exc:
                record_failure("journal", exc)
                continue
            value = item.value if item is not None else None
            if value is None or is_abandoned(value) or _lost_here(value, job):
                await self._claim(job, state, runtime)
        for job in jobs:
            if (future := _INFLIGHT.get(job["id"])) is not None:
                await asyncio.wait([asyncio.wrap_future(future)])  # a failure is logged

    def _start(self, job: dict[str, Any], state: EngramState, runtime: Runtime[Context]) -> None:
        if job["id"] in _INFLIGHT:
            return
        runner = self._runners[job["kind"]]
        own = runtime.override(context=runtime.context.replace(user_id=job["user_id"]))
        _schedule(job["id"], _execute(job, runner, state, own))


def wait_for_memory_work(timeout: float | None = None) -> bool:
    """Wait for this process's background memory jobs; True when none is left running.

    Example:
        >>> wait_for_memory_work(timeout=1.0)
        True
    """
    futures = list(_INFLIGHT.values())
    if not futures:
        return True
    _, running = concurrent.futures.wait(futures, timeout=timeout)
    return not running


async def _execute(
    job: dict[str, Any], runner: Runner, state: EngramState, runtime: Runtime[Context]
) -> None:
    store = runtime.store
    assert store is not None
    thread_id = _thread_id(runtime)
    if await _status(job, store) != "pending":  # deleted before it ran: nothing to do
        await _forget_mark(job, store)
        return
    lease = asyncio.create_task(_renew(job, runtime))
    try:
        result = await runner(job, state, runtime)
    finally:
        lease.cancel()
    status = await _status(job, store)
    if status is None or status == "thread_deleted":
        await _discard(job, result, store, user_deleted=status is None)
        await _forget_mark(job, store)
        return
    await store.abatch(
        [done_op(job["user_id"], job["id"], kind=job["kind"], thread_id=thread_id, result=result)]
    )


async def _status(job: dict[str, Any], store: BaseStore) -> str | None:
    """The job entry's status; None when it is gone (its user was deleted)."""
    (item,) = await store.abatch([GetOp(job_namespace(job["user_id"]), job["id"])])
    return None if item is None else str(item.value.get("status"))


async def _forget_mark(job: dict[str, Any], store: BaseStore) -> None:
    """Remove the entry a thread deletion marked (`thread_deleted_op`), if it is there."""
    (item,) = await store.abatch([GetOp(job_namespace(job["user_id"]), job["id"])])
    if item is not None and item.value.get("status") == "thread_deleted":
        await store.abatch([delete_op(job["user_id"], job["id"])])


async def _discard(
    job: dict[str, Any], result: dict[str, Any], store: BaseStore, *, user_deleted: bool
) -> None:
    """Its user or its thread was deleted while the job ran: remove what it archived of the
    thread (episodes) and, when the user was deleted, the memories it wrote or changed, then
    purge them from the store's files, so the deletion stays complete. A deleted thread's
    memories stay: they are the user's, as those written before the deletion."""
    user_id = job["user_id"]
    logger.warning("job %s: its %s was deleted while it ran; removing what it wrote", job["id"],
                   "user" if user_deleted else "thread")
    if user_deleted:
        ltm = LongTermMemory(store)
        for memory_id in {e["memory_id"] for e in result.get("events", ())}:
            await ltm.adelete(user_id, memory_id)
    namespace = LongTermMemory.episode_namespace(user_id)
    await store.abatch([PutOp(namespace, key, None) for key in result.get("episode_keys", ())])
    await apurge_store(store)


async def _renew(job: dict[str, Any], runtime: Runtime[Context]) -> None:
    """Keep the job's lease while it runs, so no other process takes it over; stop once its
    entry is gone, marked or another process's (a renewal never brings a deleted entry back)."""
    store = runtime.store
    assert store is not None
    thread_id = _thread_id(runtime)
    while True:
        await asyncio.sleep(LEASE_SECONDS / 3)
        steps = renew_steps(job["user_id"], job["id"], kind=job["kind"], thread_id=thread_id)
        try:
            if not await arun_held(store, steps):
                return
        except RECOVERABLE_ERRORS as exc:
            logger.warning("could not renew the lease of job %s: %s", job["id"], exc)


def _schedule(job_id: str, coro: Coroutine[Any, Any, None]) -> None:
    # An empty context: the job is not part of the turn that started it (its callbacks and
    # stream have ended by the time the job calls the model).
    future = contextvars.Context().run(asyncio.run_coroutine_threadsafe, coro, _worker_loop())
    with _LOCK:
        _INFLIGHT[job_id] = future

    def done(f: concurrent.futures.Future[None]) -> None:
        with _LOCK:
            _INFLIGHT.pop(job_id, None)
        if f.cancelled():
            return
        if (exc := f.exception()) is not None:
            logger.error(
                "background memory job %s failed; the thread's next turn runs it again",
                job_id,
                exc_info=exc,
            )

    future.add_done_callback(done)


def _lost_here(value: dict[str, Any], job: dict[str, Any]) -> bool:
    """A pending job of this process that no longer runs here (its run failed)."""
    return value.get("owner") == owner_token() and job["id"] not in _INFLIGHT


def _snapshot(state: EngramState) -> EngramState:
    return {**state, "messages": list(state.get("messages", ()))}  # type: ignore[typeddict-item]


def _thread_id(runtime: Runtime[Context]) -> str | None:
    return runtime.execution_info.thread_id if runtime.execution_info else None


@cache
def _worker_loop() -> asyncio.AbstractEventLoop:
    loop = asyncio.new_event_loop()
    # A daemon: a process may exit with jobs running; they resume at their thread's next turn.
    # (Waiting for them at exit does not work: Python shuts its thread pools down before
    # `atexit` runs, so their store and model calls would fail.)
    threading.Thread(target=loop.run_forever, name="engram-memory-work", daemon=True).start()
    return loop


_LOCK = threading.Lock()
_INFLIGHT: dict[str, concurrent.futures.Future[None]] = {}
"""Jobs running in this process, by id."""


def applied_state(state: EngramState, update: dict[str, Any]) -> EngramState:
    """The state as a node's `update` leaves it (for the node's own further work): messages
    through `add_messages`, other fields replaced, failures left out."""
    if not update:
        return state
    new: dict[str, Any] = {
        **state,
        **{k: v for k, v in update.items() if k not in ("messages", "failures")},
    }
    if ops := update.get("messages"):
        new["messages"] = add_messages(state["messages"], ops)
    return new  # type: ignore[return-value]


def merge_updates(first: dict[str, Any], second: dict[str, Any]) -> dict[str, Any]:
    """One node update made of two in sequence: `second`'s fields win, messages and failures
    add up (an `Overwrite` of the failures in either stays one, of both lists: a node that
    resets the turn's failures still reports those of the jobs it applied, where LangGraph's
    channel would drop what came before the `Overwrite`)."""
    if not first:
        return second
    merged = {**first, **second}
    if "messages" in first and "messages" in second:
        merged["messages"] = [*first["messages"], *second["messages"]]
    failures = [*_failures(first.get("failures")), *_failures(second.get("failures"))]
    if any(isinstance(u.get("failures"), Overwrite) for u in (first, second)):
        merged["failures"] = Overwrite(failures)
    elif failures:
        merged["failures"] = failures
    return merged


def _failures(value: Any) -> list[dict[str, str]]:
    if isinstance(value, Overwrite):
        return list(value.value)
    return list(value or ())
