"""Messages with their secrets redacted, for what is made of them and kept beyond the thread.

The thread's own messages keep what the user wrote; a summary written from them must not (a
summarizer, offline or model, copies what it is given). `redact_message` applies
`engram.stores.secrets.redact` to a message's text, its content blocks and its tool calls'
arguments.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> redact_message(HumanMessage("my login is alice / Tr0ub4dor&3", id="m1")).content
    'my login is alice / [REDACTED]'
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import AIMessage, BaseMessage

from engram.stores.secrets import redact_data


def redact_message(message: BaseMessage) -> BaseMessage:
    """A copy of `message` (same id) with every secret in its content and tool calls redacted."""
    update: dict[str, object] = {"content": redact_data(message.content)}
    if isinstance(message, AIMessage) and message.tool_calls:
        update["tool_calls"] = [{**c, "args": redact_data(c["args"])} for c in message.tool_calls]
    return message.model_copy(update=update)


def redact_messages(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """`redact_message` on each message."""
    return [redact_message(m) for m in messages]
