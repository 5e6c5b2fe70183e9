"""Messages as text and as plain dicts: the formats `compact` and `consolidate` share.

`state["pending_extraction"]` holds evicted messages as LangChain message dicts
(`message_to_dict`), so the checkpoint and Studio show them as plain JSON; `from_pending` turns
them back into messages. `render_transcript` is the text the summarizer and extractor read.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_to_dict,
    messages_from_dict,
)

from engram.nodes.tokens import message_text


def to_pending(messages: Iterable[BaseMessage]) -> list[dict[str, Any]]:
    """Messages as the dicts stored in `state["pending_extraction"]`."""
    return [message_to_dict(m) for m in messages]


def from_pending(items: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """The messages back from `state["pending_extraction"]` dicts."""
    return messages_from_dict(list(items))


def role_of(message: BaseMessage) -> str:
    """ "user", "assistant", "tool" or "system" (the roles transcripts and episodes use)."""
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    if isinstance(message, ToolMessage):
        return "tool"
    if isinstance(message, SystemMessage):
        return "system"
    return message.type


def render_transcript(messages: Iterable[BaseMessage]) -> str:
    """One "role: text" line block per message, tool calls and tool names included."""
    lines = []
    for message in messages:
        role = role_of(message)
        if isinstance(message, ToolMessage) and message.name:
            role = f"tool {message.name}"
        lines.append(f"{role}: {message_text(message)}")
    return "\n".join(lines)


def split_exchanges(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Cut messages into exchanges, each starting at a user message (tool calls kept whole)."""
    exchanges: list[list[BaseMessage]] = []
    for message in messages:
        if isinstance(message, HumanMessage) or not exchanges:
            exchanges.append([message])
        else:
            exchanges[-1].append(message)
    return exchanges
