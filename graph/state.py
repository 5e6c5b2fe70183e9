"""The memory graph's state: the thread's messages plus the bookkeeping of summary and memory."""

from __future__ import annotations

from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages
from typing_extensions import NotRequired, TypedDict


class BuiltContext(TypedDict):
    """What `start` assembled for the model this turn (seed 001's `BuiltContext`), shown in Studio."""

    token_stats: dict[str, int]
    """Tokens per part: system_prompt, memories, summary, recent_messages, current_input, total."""
    budget: dict[str, int]
    """The budget per part that the counts above had to fit."""
    included_message_ids: list[str]
    """Ids of the history messages sent to the model, oldest first (the current input included)."""
    summarized_message_count: int
    """Messages of the thread not sent verbatim (covered by the summary or left out for budget)."""
    used_summary: bool
    memory_ids: list[str]
    """Long-term memories used this turn."""
    memory_block: str
    """The rendered, delimited memory block that went into the system prompt."""


class EngramState(TypedDict):
    """State of one thread of the engram graph."""

    messages: Annotated[list[AnyMessage], add_messages]
    """Short-term memory: the thread's messages not yet compacted away."""
    end_session: NotRequired[bool]
    """Input flag: route straight to `consolidate` and close the session."""
    summary: NotRequired[str]
    """The running summary of messages evicted by compaction."""
    built_context: NotRequired[BuiltContext]
    """The record of the last context build."""
    messages_since_compaction: NotRequired[int]
    """Messages added since the last compaction (the message-count trigger's counter)."""
    turns_since_consolidation: NotRequired[int]
    """User turns since long-term memories were last extracted."""
    pending_extraction: NotRequired[list[dict[str, Any]]]
    """Messages evicted by `compact` before `consolidate` extracted from them ("extract before
    evict"), as message dicts; `consolidate` empties it."""
    consolidated_message_ids: NotRequired[list[str]]
    """Ids of messages already extracted from, so a re-run creates nothing twice."""
    failures: NotRequired[list[dict[str, str]]]
    """What went wrong this turn and was worked around: `{"stage", "error"}` per failure
    (recall timeout, summarizer or extractor error, store error)."""
