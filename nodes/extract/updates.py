"""Statements the rules kept nothing from, offered as updates of the memories they change.

The rules miss most ways of saying that something changed ("DriveTest cancelled the sept 12 test,
earliest they had was oct 3 at Port Union"; "土豆复查 ... 换成希尔斯c/d了"), and a model that only
reviews the rules' candidates cannot add what they missed: the old fact stayed current. With a
memory model, each user message the rules found nothing in becomes an update-only candidate
(`MemoryCandidate.update_only`): the write policy asks the merge decider about the current
memories most similar to it (`engram.stores.memory.write.policy.upsert_steps`), and the statement
supersedes the one the model says it updates; otherwise it is dropped. It is never added as a
memory of its own, so a model that writes no memories adds no chit-chat this way either.
Offline, the rule extractor offers those of them that name what they change
(`engram.nodes.extract.retired`), and the write policy's stated-change step retires the memory
named.

A statement is offered when it says something (`is_statement`): not a question, small talk, a
paste, a hypothesis or a hedge ("maybe we'll move to Leeds" changes nothing yet).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, HumanMessage

from engram.nodes.extract.answers import is_statement, statements
from engram.nodes.text.tokens import message_content
from engram.stores.memory.content import content_problem
from engram.stores.memory.types import MemoryCandidate
from engram.stores.secrets import redact

UPDATE_CONFIDENCE = 0.85
"""Confidence of a statement the memory model found to update a memory (as a reviewed one's)."""


def update_candidates(
    messages: Sequence[BaseMessage], proposed: Sequence[MemoryCandidate]
) -> list[MemoryCandidate]:
    """Update-only candidates for the user messages of `messages` that no candidate of
    `proposed` came from (module docstring).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> msgs = [HumanMessage("DriveTest cancelled the sept 12 test, its oct 3 now", id="m1"),
        ...         AIMessage("Ugh, sorry."), HumanMessage("haha ok thanks!", id="m2")]
        >>> [(c.content, c.update_only) for c in update_candidates(msgs, [])]
        [('DriveTest cancelled the sept 12 test, its oct 3 now', True)]
    """
    used = {i for c in proposed for i in c.message_ids or ()}
    out = []
    for message in messages:
        if not isinstance(message, HumanMessage) or message.id in used:
            continue
        said = statements(redact(message_content(message)).text)
        if not _offered(said):
            continue
        out.append(MemoryCandidate(
            content=said, category="fact", confidence=UPDATE_CONFIDENCE, update_only=True,
            message_ids=[message.id] if message.id else None,
        ))
    return out


def _offered(said: str) -> bool:
    return is_statement(said) and content_problem(said) is None
