"""Messages as text and as plain dicts: the formats `compact` and `consolidate` share.

`state["pending_extraction"]` holds evicted messages as LangChain message dicts
(`message_to_dict`), so the checkpoint and Studio show them as plain JSON; `from_pending` turns
them back into messages. `render_transcript` is the text the summarizer and extractor read;
`render_message` is how an archived message (an episode) reads.

A message's time is `message.additional_kwargs["timestamp"]` (ISO 8601): `start` stamps the
turn's input and `respond` its reply when the app has not (the evals and the LoCoMo adapter set
the dates of their sessions there); chat model integrations do not send that field.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
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

from engram.nodes.text.tokens import message_content

TIMESTAMP_KEY = "timestamp"
"""The `additional_kwargs` field holding when a message was said (ISO 8601)."""

CITATIONS_KEY = "memory_ids"
"""The `additional_kwargs` field of a reply listing the long-term memories its model was given
(so an app can cite them: "based on your preference ..."), absent when there were none."""


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
        lines.append(f"{role}: {message_content(message)}")
    return "\n".join(lines)


def render_message(message: BaseMessage, *, with_time: bool = True) -> str:
    """ "[8 May 2023] speaker: text": the speaker is the message's `name`, else its role.

    The date is the message's time (`TIMESTAMP_KEY`); a message without one has none.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> render_message(HumanMessage("hi", name="Caroline",
        ...                             additional_kwargs={"timestamp": "2023-05-08T13:56:00"}))
        '[8 May 2023] Caroline: hi'
    """
    speaker = message.name or role_of(message)
    if isinstance(message, ToolMessage) and message.name:
        speaker = f"tool {message.name}"
    line = f"{speaker}: {message_content(message)}"
    when = message_time(message)
    return f"[{when.day} {when:%B %Y}] {line}" if with_time and when else line


def stamp_messages(
    messages: Iterable[BaseMessage], now: datetime | None = None
) -> list[BaseMessage]:
    """Copies of the messages that have no time yet, stamped with `now` (default: the current
    UTC time); the same ids, so they replace the originals in the state."""
    stamp = (now or datetime.now(UTC)).isoformat()
    return [
        m.model_copy(update={"additional_kwargs": {**m.additional_kwargs, TIMESTAMP_KEY: stamp}})
        for m in messages
        if TIMESTAMP_KEY not in m.additional_kwargs
    ]


def stamp_reply(reply: BaseMessage, memory_ids: Sequence[str] = ()) -> BaseMessage:
    """A copy of the model's reply with its time (`stamp_messages`) and the ids of the memories
    it was given (`CITATIONS_KEY`), the same id.

    Example:
        >>> reply = stamp_reply(AIMessage("Dark mode it is."), ["3f2c9a1e"])
        >>> (reply.additional_kwargs["memory_ids"], "timestamp" in reply.additional_kwargs)
        (['3f2c9a1e'], True)
    """
    reply = next(iter(stamp_messages([reply])), reply)
    if not memory_ids:
        return reply
    cited = {**reply.additional_kwargs, CITATIONS_KEY: list(memory_ids)}
    return reply.model_copy(update={"additional_kwargs": cited})


def message_time(message: BaseMessage) -> datetime | None:
    """When the message was said, if the app recorded it (`TIMESTAMP_KEY`); None otherwise or
    when the value is not an ISO 8601 time."""
    raw = message.additional_kwargs.get(TIMESTAMP_KEY)
    if not isinstance(raw, str):
        return None
    try:
        return datetime.fromisoformat(raw)
    except ValueError:
        return None


def split_exchanges(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """Cut messages into exchanges, each starting at a user message (tool calls kept whole)."""
    exchanges: list[list[BaseMessage]] = []
    for message in messages:
        if isinstance(message, HumanMessage) or not exchanges:
            exchanges.append([message])
        else:
            exchanges[-1].append(message)
    return exchanges
