"""How a compaction's or a consolidation's outcome becomes a state update.

Inline, `compact` applies its fold at once; in the background (`engram.nodes.work.background`) the
job's result is applied by the thread's next `start`, against the state as it is then (newer
messages, other jobs applied). Both go through the functions here, so the two modes leave the
same state behind.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from langchain_core.messages import RemoveMessage

from engram.nodes.text.transcript import to_pending

if TYPE_CHECKING:
    from engram.nodes.state import EngramState

logger = logging.getLogger(__name__)

COMPACTED_EVENT = "context.compacted"

Writer = Callable[[Any], None]


def compaction_update(
    state: EngramState,
    evicted_ids: list[str],
    fold: dict[str, Any],
    *,
    incognito: bool,
    writer: Writer,
) -> dict[str, Any]:
    """The update that folds `evicted_ids` away: the new summary, the messages removed, queued
    for extraction ("extract before evict"), and the `context.compacted` event.

    Args:
        state: The thread's state now.
        evicted_ids: The messages the summary covers.
        fold: What the fold produced: `summary`, `summary_tokens`, `mode`, `lossy`,
            `episodes`, `failures`, and `task_state` (a job journaled before there was one
            has none: the task state stays as it is).
        incognito: An incognito run queues nothing for extraction.
        writer: LangGraph's custom stream.
    """
    gone = set(evicted_ids)
    messages = state["messages"]
    evicted = [m for m in messages if m.id in gone]
    pending = list(state.get("pending_extraction", []))
    if not incognito:
        done = set(state.get("consolidated_message_ids", ()))
        pending += to_pending(m for m in evicted if m.id not in done)
    evicted_total = state.get("evicted_message_count", 0) + len(evicted)
    writer(
        {
            "event": COMPACTED_EVENT,
            "evicted": len(evicted),
            "kept": len(messages) - len(evicted),
            "episodes": fold["episodes"],
            "summary_tokens": fold["summary_tokens"],
            "mode": fold["mode"],
            "lossy": fold["lossy"],
        }
    )
    logger.info(
        "compacted %d messages (%s summary, %d tokens, %d episodes)",
        len(evicted),
        fold["mode"],
        fold["summary_tokens"],
        fold["episodes"],
    )
    return {
        "messages": [RemoveMessage(id=m.id) for m in evicted if m.id],
        "summary": fold["summary"],
        "summary_info": {
            "mode": fold["mode"],
            "tokens": fold["summary_tokens"],
            "summarized_messages": evicted_total,
            "updated_at": datetime.now(UTC).isoformat(),
            "lossy": fold["lossy"],
        },
        "evicted_message_count": evicted_total,
        "pending_extraction": pending,
        **({"task_state": fold["task_state"]} if "task_state" in fold else {}),
        "failures": list(fold["failures"]),
    }


def apply_compaction(
    state: EngramState, job: dict[str, Any], result: dict[str, Any], writer: Writer
) -> dict[str, Any]:
    """A finished background compaction, applied: its fold when it succeeded; else its failure,
    with the compaction counters as they were, so the next trigger tries again."""
    if result["ok"]:
        return compaction_update(state, job["message_ids"], result, incognito=False, writer=writer)
    return {**job["restore"], "failures": list(result["failures"])}


def apply_consolidation(
    state: EngramState, job: dict[str, Any], result: dict[str, Any], writer: Writer
) -> dict[str, Any]:
    """A finished background consolidation, applied: its record and `memory.*` events; the
    messages it could not write (the store failed) go back to `pending_extraction`."""
    for event in result["events"]:
        writer(event)
    update: dict[str, Any] = {
        "consolidation": result["consolidation"],
        "failures": list(result["failures"]),
    }
    unwritten = set(result["unwritten_ids"])
    if unwritten:
        back = [m for m in job["messages"] if m.get("data", {}).get("id") in unwritten]
        update["pending_extraction"] = [*state.get("pending_extraction", []), *back]
        update["consolidated_message_ids"] = [
            i for i in state.get("consolidated_message_ids", ()) if i not in unwritten
        ]
    return update


APPLIERS: dict[str, Callable[[EngramState, dict[str, Any], dict[str, Any], Writer], dict[str, Any]]]
APPLIERS = {"compact": apply_compaction, "consolidate": apply_consolidation}
"""How each kind of job's result is applied."""
