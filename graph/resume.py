"""Resume the background memory jobs that crashed processes left, without waiting for their
threads' next turns.

A job whose process died is claimed again by its thread's next turn (`engram.nodes.work.background`).
A thread that never has another turn would keep its job, and the memories of its last exchanges
would never be extracted. An app calls `resume_memory_work(graph)` once at start-up, before it
serves turns (a session end and a turn running on one thread at once would race for its
checkpoint, as any two runs of a thread do): every thread with an abandoned job gets a session
end (`{"end_session": True}`), which claims the job, runs it, applies its result and extracts
what is left of the session, as the user ending the session would.
"""

from __future__ import annotations

from typing import Any

from langgraph.pregel import Pregel
from langgraph.store.base import BaseStore, Item, PutOp

from engram.graph.loop import run_sync
from engram.nodes.context import Context
from engram.stores.memory.jobs import is_abandoned
from engram.stores.memory.users import thread_owner
from engram.stores.namespaces import JOBS_NAMESPACE

_PAGE = 100


async def aresume_memory_work(graph: Pregel, *, context: Context | None = None) -> list[str]:
    """End the session of every thread with an abandoned job, so the job runs now; the thread
    ids, in the order they were resumed.

    Args:
        graph: A compiled engram graph with its store and checkpointer.
        context: The settings for those session ends (the user comes from each job);
            `Context()` by default.

    Raises:
        ValueError: The graph has no store or no checkpointer (no job could have been
            journaled, or its thread's messages read).
    """
    store, checkpointer = graph.store, graph.checkpointer
    if store is None or checkpointer is None:
        raise ValueError(
            "resume_memory_work needs the graph's store and checkpointer: compile it as the app does"
        )
    abandoned = await _abandoned_jobs(store)
    template = context or Context()
    for thread_id, items in abandoned.items():
        config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
        values = (await graph.aget_state(config)).values
        jobs = values.get("memory_jobs", ())
        referenced = {job["id"] for job in jobs}
        # An entry the thread's state never recorded (its process died inside the node that
        # journaled it): the thread's next consolidation covers those messages anyway.
        orphans = [PutOp(i.namespace, i.key, None) for i in items if i.key not in referenced]
        if orphans:
            await store.abatch(orphans)
        # a thread runs for its owner alone, whose session end runs the owner's jobs
        user_id = thread_owner(values) or next((job["user_id"] for job in jobs), None)
        if user_id is not None:
            await graph.ainvoke(
                {"messages": [], "end_session": True},
                config,
                context=template.replace(user_id=user_id),
            )
    return list(abandoned)


def resume_memory_work(graph: Pregel, *, context: Context | None = None) -> list[str]:
    """The sync form of `aresume_memory_work`.

    Example:
        >>> from langgraph.graph import StateGraph
        >>> resume_memory_work(StateGraph(dict).add_node("n", lambda s: s).set_entry_point("n").compile())
        Traceback (most recent call last):
        ...
        ValueError: resume_memory_work needs the graph's store and checkpointer: compile it as the app does
    """
    return run_sync(aresume_memory_work(graph, context=context))


async def _abandoned_jobs(store: BaseStore) -> dict[str, list[Item]]:
    """The abandoned journal entries of every user, by thread."""
    by_thread: dict[str, list[Item]] = {}
    offset = 0
    while True:
        page = await store.asearch((JOBS_NAMESPACE,), limit=_PAGE, offset=offset)
        for item in page:
            thread_id = item.value.get("thread_id")
            if thread_id and is_abandoned(item.value):
                by_thread.setdefault(thread_id, []).append(item)
        if len(page) < _PAGE:
            return by_thread
        offset += _PAGE
