"""The reducer of the thread's messages: `add_messages`, with every incoming text made valid
Unicode first, so a lone surrogate in an app's input never reaches the embedder, the checkpointer
or the model (`engram.stores.text.valid_unicode` replaces it with U+FFFD).

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> [m.content for m in add_valid_messages([], [HumanMessage("tea \\ud800", id="m1")])]
    ['tea \\ufffd']
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import BaseMessage, convert_to_messages
from langgraph.graph.message import Messages, add_messages

from engram.stores.text import valid_unicode


def add_valid_messages(left: Messages, right: Messages) -> Messages:
    """`add_messages(left, right)` with the content of the messages in `right` made valid."""
    incoming = right if isinstance(right, list) else [right]
    return add_messages(left, [valid_message(m) for m in convert_to_messages(incoming)])


def valid_message(message: BaseMessage) -> BaseMessage:
    """The message, or a copy (same id) whose text has its lone surrogates replaced."""
    content = message.content
    if isinstance(content, str):
        valid: Any = valid_unicode(content)
    else:
        valid = [_valid_block(block) for block in content]
    if valid == content:
        return message
    return message.model_copy(update={"content": valid})


def _valid_block(block: Any) -> Any:
    if isinstance(block, str):
        return valid_unicode(block)
    if isinstance(block, dict) and isinstance(block.get("text"), str):
        return {**block, "text": valid_unicode(block["text"])}
    return block
