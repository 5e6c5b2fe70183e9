"""What an answer-accuracy benchmark asks: histories of dated sessions, and questions about them.

A benchmark file becomes `QAHistory`s (`engram.evals.qa.locomo`, `engram.evals.qa.longmemeval`):
one memory owner each (a LoCoMo conversation; a LongMemEval question's haystack), its sessions in
date order as chat messages (user and assistant, named, stamped with the session's date), and the
questions asked of it once every session has been written.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace

from langchain_core.messages import BaseMessage


@dataclass(frozen=True)
class QASession:
    """One session of a history: its date as the data writes it, and its messages in order."""

    date: str
    messages: tuple[BaseMessage, ...]


@dataclass(frozen=True)
class QAQuestion:
    """A question, its gold answer, and the category it is reported under."""

    id: str
    """Unique in the benchmark: `<sample id>:<position in qa>` for LoCoMo, LongMemEval's own id."""
    category: str
    text: str
    gold: str
    date: str | None = None
    """When it is asked, as the data writes it (LongMemEval); None when the data has no date."""

    @property
    def digest(self) -> str:
        """The first 8 hex digits of the SHA-1 of its text: an exclusion list names a question
        by id and digest, so a list made for another version of the data never hits the wrong
        question.

        Example:
            >>> QAQuestion("conv-1:0", "temporal", "When did Ann move?", "2022").digest
            '4f074398'
        """
        return hashlib.sha1(self.text.encode("utf-8")).hexdigest()[:8]


@dataclass(frozen=True)
class QAHistory:
    """One memory owner: the sessions written to memory, then the questions asked."""

    id: str
    user_id: str
    """The engram user whose threads the sessions are (a valid namespace label)."""
    speakers: tuple[str, str]
    """Who speaks as the user and who as the assistant (LoCoMo's two speakers)."""
    sessions: tuple[QASession, ...]
    questions: tuple[QAQuestion, ...]

    @property
    def messages(self) -> int:
        """How many messages its sessions hold."""
        return sum(len(session.messages) for session in self.sessions)


def first_questions(histories: Sequence[QAHistory], limit: int | None) -> list[QAHistory]:
    """The histories cut to `limit` questions in all, taken in turn from each category (in the
    order the categories first appear), each category's in file order: a small limit still
    covers every category (LoCoMo lists a conversation's questions mostly by category). The
    questions keep their file order; histories left without one are dropped, so only those
    the chosen questions come from are written to memory. A larger limit keeps every question
    a smaller one chose.

    Example:
        >>> q = [QAQuestion(f"a:{i}", c, "q?", "g") for i, c in enumerate("xxxyy")]
        >>> one = QAHistory("a", "a", ("A", "B"), (), tuple(q))
        >>> [x.id for h in first_questions([one], 3) for x in h.questions]
        ['a:0', 'a:1', 'a:3']
    """
    if limit is None:
        return [h for h in histories if h.questions]
    queues: dict[str, deque[tuple[int, int]]] = {}
    for h, history in enumerate(histories):
        for q, question in enumerate(history.questions):
            queues.setdefault(question.category, deque()).append((h, q))
    chosen: set[tuple[int, int]] = set()
    while len(chosen) < limit and any(queues.values()):
        for queue in queues.values():
            if queue and len(chosen) < limit:
                chosen.add(queue.popleft())
    kept = [
        replace(history, questions=tuple(
            question for q, question in enumerate(history.questions) if (h, q) in chosen
        ))
        for h, history in enumerate(histories)
    ]
    return [h for h in kept if h.questions]
