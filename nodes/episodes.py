"""Archived messages: episodes, kept verbatim (secrets redacted) so that what extraction missed
stays recallable.

`compact` archives the messages it evicts, and a session end archives the messages still in the
thread (`consolidate`), so every message of a session is archived once it ends, except in
incognito runs. Episodes live under `("episodes", user_id)` and are deleted with the user's data.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from langchain_core.messages import BaseMessage
from langgraph.store.base import PutOp

from engram.nodes.text.transcript import render_message, role_of
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.secrets import redact

EPISODE_CONTEXT_MESSAGES = 2
"""Messages before an archived one that are indexed as its lexical context (on LoCoMo, two
previous turns find the evidence better than one or none: `engram.evals.bench.retrieval`)."""


def episode_ops(
    evicted: Sequence[BaseMessage],
    *,
    user_id: str,
    thread_id: str | None,
    context_messages: int = EPISODE_CONTEXT_MESSAGES,
) -> list[PutOp]:
    """One episode per distinct message, indexed on `content` ("[date] speaker: text", the date
    when the message has a time: `start` and `respond` stamp them), with the
    `context_messages` messages before it as `context` (found by the lexical channel only).

    Secrets are redacted, as in memories. Messages that read the same ("ok", "thanks") share
    one episode listing all their ids, which also keeps langgraph's InMemoryStore working: it
    fails on a batch that indexes the same text twice (langchain-ai/langgraph#8822). Keys derive
    from the thread and the first message id, so archiving the same messages twice overwrites
    instead of duplicating.
    """
    now = datetime.now(UTC)
    namespace = LongTermMemory.episode_namespace(user_id)
    episodes: dict[str, dict[str, Any]] = {}
    for position, message in enumerate(evicted):
        content = redact(render_message(message)).text
        if content in episodes:
            episodes[content]["message_ids"].append(message.id)
            continue
        before = evicted[max(0, position - context_messages) : position]
        episodes[content] = {
            "content": content,
            "context": redact("\n".join(render_message(m, with_time=False) for m in before)).text,
            "thread_id": thread_id,
            "message_ids": [message.id],
            "role": role_of(message),
            "created_at": now.isoformat(),
        }
    return [
        PutOp(
            namespace,
            str(uuid5(NAMESPACE_URL, f"engram/episode/{thread_id}/{value['message_ids'][0]}")),
            value,
            index=["content"],
        )
        for value in episodes.values()
    ]
