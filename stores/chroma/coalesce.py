"""Concurrent store calls coalesced into few batches (`Coalescer`).

An agent server with many users calls its store from many tasks and threads at once; each call
answered on its own costs Chroma a few round trips. A `Coalescer` queues the calls (each a list
of ops, kept whole) and one drain thread runs everything queued as one batch, while new calls
queue up for the next: the busier the store, the bigger the batches.

In one batch every read sees the store as it was before the batch's writes (the store's own
batch rule), so a call that reads what an earlier queued call writes (same item; a namespace
under a search's prefix; any write for `list_namespaces`) waits for the next batch: a read sees
every write queued before it. It may also see writes queued after it while it waited: calls in
flight together have no order of their own, and any order among them is a correct answer (this
freedom is what lets wide reads such as `list_namespaces` share batches). A caller's own calls
are sequential, so it always reads its own writes. Identical reads of one batch are answered
once. When a combined batch fails, its calls run again one by one, so each gets its own result
or error.

langgraph's `AsyncBatchedBaseStore` does the coalescing for async stores, but it binds the store
to the event loop it was created in and refuses sync calls from it; `ChromaStore` is a sync and
an async store at once, used from threads and from several loops.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from dataclasses import dataclass, field

from langgraph.store.base import GetOp, ListNamespacesOp, Op, PutOp, Result, SearchOp

from engram.stores.chroma import metadata as md
from engram.stores.lexical.hybrid import HybridSearchOp

logger = logging.getLogger(__name__)

GATHER_SECONDS = 0.001
"""After each batch the drain thread waits this long, so that callers whose results it just
handed back (threads, tasks) can queue their next calls into the next batch."""

RunBatch = Callable[[list[Op], bool], list[Result]]
"""Runs one batch of ops at once; the flag says whether an async caller waits for it."""


@dataclass
class _Call:
    ops: list[Op]
    from_async: bool
    future: Future = field(default_factory=Future)


class Coalescer:
    """Runs concurrent calls of `run` as few combined batches (see the module docstring).

    Args:
        run: Runs one batch of ops (the store's uncoalesced batch).
        idle: Called by the drain thread when nothing is queued, before it ends (deferred
            work such as removing tombstones); calls queued meanwhile wait for it. An error is
            logged, and the drain goes on.

    Example:
        >>> calls = []
        >>> def run(ops, from_async):
        ...     calls.append(len(ops))
        ...     return [None] * len(ops)
        >>> Coalescer(run).call([PutOp(("a",), "k", {"v": 1})])
        [None]
        >>> calls
        [1]
    """

    def __init__(self, run: RunBatch, idle: Callable[[], None] | None = None) -> None:
        self._run = run
        self._idle = idle
        self._lock = threading.Lock()
        self._queued: list[_Call] = []
        self._draining = False
        self._drainer: threading.Thread | None = None
        self.batches_run = 0
        """How many combined batches ran (for tests and benchmarks)."""

    def call(self, ops: list[Op]) -> list[Result]:
        """Run `ops` with whatever else is queued; blocks until their results are in."""
        if threading.current_thread() is self._drainer:  # a call made while draining
            return self._run(ops, False)
        return self._enqueue(ops, from_async=False).result()

    async def acall(self, ops: list[Op]) -> list[Result]:
        """Like `call`, without blocking the event loop."""
        return await asyncio.wrap_future(self._enqueue(ops, from_async=True))

    def join(self) -> None:
        """Wait until the drain thread has run what is queued, its idle work, and ended."""
        with self._lock:
            drainer = self._drainer
        if drainer is not None and drainer is not threading.current_thread():
            drainer.join()

    def _enqueue(self, ops: list[Op], *, from_async: bool) -> Future:
        queued = _Call(ops, from_async)
        with self._lock:
            self._queued.append(queued)
            if not self._draining:
                self._draining = True
                self._drainer = threading.Thread(
                    target=self._drain, name="engram-store-batches", daemon=True
                )
                self._drainer.start()
        return queued.future

    def _drain(self) -> None:
        waiting: list[_Call] = []
        idled = self._idle is None
        while True:
            with self._lock:
                pending = waiting + self._queued
                self._queued = []
                if not pending and idled:
                    self._draining = False
                    self._drainer = None
                    return
            if not pending:
                idled = True
                self._run_idle()
                continue
            idled = self._idle is None
            fresh = pending[len(waiting) :]  # a call cancelled before it ran is dropped
            live = waiting + [c for c in fresh if c.future.set_running_or_notify_cancel()]
            now, waiting = _split(live)
            self._run_together(now)
            time.sleep(GATHER_SECONDS)  # the callers just answered may call again: batch them

    def _run_idle(self) -> None:
        assert self._idle is not None
        try:
            self._idle()
        except Exception:  # deferred work is retried at the next idle moment
            logger.exception("the store's idle work failed")

    def _run_together(self, calls: list[_Call]) -> None:
        ops: list[Op] = []
        positions: list[list[int]] = []
        first_read: dict[Hashable, int] = {}
        for c in calls:
            own: list[int] = []
            for op in c.ops:
                key = _read_key(op)
                if key is not None and key in first_read:
                    own.append(first_read[key])
                    continue
                if key is not None:
                    first_read[key] = len(ops)
                own.append(len(ops))
                ops.append(op)
            positions.append(own)
        self.batches_run += 1
        try:
            results = self._run(ops, any(c.from_async for c in calls))
        except BaseException as exc:  # noqa: BLE001 - handed to the callers, never swallowed
            if len(calls) == 1:
                calls[0].future.set_exception(exc)
                return
            logger.debug("a combined batch of %d calls failed; running them one by one", len(calls))
            for c in calls:
                self.batches_run += 1
                try:
                    c.future.set_result(self._run(c.ops, c.from_async))
                except BaseException as own_exc:  # noqa: BLE001 - handed to its caller
                    c.future.set_exception(own_exc)
            return
        for c, own in zip(calls, positions):
            c.future.set_result([results[i] for i in own])


def _split(calls: list[_Call]) -> tuple[list[_Call], list[_Call]]:
    """The calls to run now, in order, and those that read what an earlier call writes."""
    now: list[_Call] = []
    later: list[_Call] = []
    written_ids: set[str] = set()
    written_namespaces: set[tuple[str, ...]] = set()
    for c in calls:
        reads = [op for op in c.ops if not isinstance(op, PutOp)]
        if written_namespaces and any(
            _reads_written(op, written_ids, written_namespaces) for op in reads
        ):
            later.append(c)
            continue
        now.append(c)
        for op in c.ops:
            if isinstance(op, PutOp):
                written_ids.add(md.item_id(op.namespace, op.key))
                written_namespaces.add(tuple(op.namespace))
    return now, later


def _reads_written(op: Op, ids: set[str], namespaces: set[tuple[str, ...]]) -> bool:
    if isinstance(op, GetOp):
        return md.item_id(op.namespace, op.key) in ids
    if isinstance(op, SearchOp):
        prefix = tuple(op.namespace_prefix)
        return any(ns[: len(prefix)] == prefix for ns in namespaces)
    if isinstance(op, HybridSearchOp):
        return tuple(op.namespace) in namespaces
    return True  # list_namespaces, and anything unknown: after the writes


def _read_key(op: Op) -> Hashable | None:
    """A key equal for reads that must give equal answers in one batch; None: never shared."""
    key: Hashable
    if isinstance(op, (GetOp, ListNamespacesOp)):
        key = (type(op).__name__, op)
    elif isinstance(op, SearchOp):
        try:
            flt = json.dumps(op.filter, sort_keys=True)
        except (TypeError, ValueError):
            return None
        key = ("search", op.namespace_prefix, flt, op.limit, op.offset, op.query, op.refresh_ttl)
    else:
        return None
    try:
        hash(key)
    except TypeError:  # a raw op with list labels
        return None
    return key
