"""Only what the user said: a memory the model writes must rest on the user's own words.

A memory model can write what nobody in the conversation said about the user: a line of its
instructions, a phrase in another language ("Este é o que você gostaria de salvar", "this is what
you'd like to save", stored by a small model as a preference of importance 0.9), or the
assistant's own recommendations as if the user had chosen them. `grounded` measures a written
memory's terms (`lexical_terms`: words stemmed, Chinese bigrams, numbers kept) against the
conversation's: it rests on the user when it shares a term with the user's messages, and at
least as many with them as with what only the others (the assistant, tools) said. A lesson or a
skill may come from the assistant once the user confirms that it worked (the extraction prompt
says so), so for those any message of the conversation counts. The frame every written memory
has ("The user ...", "用户...") is not a shared term.

`consolidate` drops a model-written candidate that is not grounded and records it in
`state["failures"]` (stage `ungrounded`, with its text; `engram eval` counts them); the rules'
candidates are the user's words and are not checked. The measure is lexical: a paraphrase that
shares no word with what the user typed ("The user is vegetarian" for "i don't eat meat",
"用户偏好深色主题" for "我喜欢暗色模式") is dropped too, and the rules' own candidate for that
message, which `WritingExtractor` adds, is what remains of it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence

from langchain_core.messages import BaseMessage, HumanMessage

from engram.nodes.text.tokens import message_text
from engram.stores.lexical.index import lexical_terms
from engram.stores.memory.types import MemoryCandidate

FRAME_TERMS = frozenset({"user", "用户"})
"""Terms of the frame every written memory has ("The user prefers ...", "用户喜欢..."): not
evidence."""
FROM_ANYONE = frozenset({"lesson", "skill"})
"""Categories a memory may take from the assistant's words once the user confirmed them."""


def grounded(candidate: MemoryCandidate, messages: Iterable[BaseMessage]) -> bool:
    """Whether `candidate` rests on the user's words in `messages` (see the module docstring).

    Example:
        >>> from langchain_core.messages import AIMessage
        >>> said = [HumanMessage("i like dark themes for coding"),
        ...         AIMessage("Try Tokyo Night or Gruvbox, both have a dark variant.")]
        >>> grounded(MemoryCandidate(content="The user prefers dark mode", category="preference"), said)
        True
        >>> grounded(MemoryCandidate(content="Este é o que você gostaria de salvar",
        ...                          category="preference"), said)
        False
        >>> grounded(MemoryCandidate(content="The user uses Tokyo Night and Gruvbox themes",
        ...                          category="preference"), said)
        False
    """
    user: set[str] = set()
    others: set[str] = set()
    for message in messages:
        (user if isinstance(message, HumanMessage) else others).update(
            _terms(message_text(message))
        )
    terms = _terms(candidate.content) - FRAME_TERMS
    if not terms:
        return True  # nothing to weigh: the write policy judges its words
    if candidate.category in FROM_ANYONE:
        return bool(terms & (user | others))
    by_user = len(terms & user)
    by_others_only = len(terms & (others - user))
    return by_user > 0 and by_user >= by_others_only


def _terms(text: str) -> set[str]:
    """`lexical_terms` of `text` without accents ("Zoë" and "Zoe", "München" and "Munchen")."""
    decomposed = unicodedata.normalize("NFKD", text)
    return set(lexical_terms("".join(c for c in decomposed if not unicodedata.combining(c))))


def split_grounded(
    candidates: Sequence[MemoryCandidate], messages: Sequence[BaseMessage]
) -> tuple[list[MemoryCandidate], list[MemoryCandidate]]:
    """(kept, dropped): the model-written candidates (`MemoryCandidate.written_by_model`) that
    are not `grounded` in `messages` are dropped; every other candidate is kept."""
    kept: list[MemoryCandidate] = []
    dropped: list[MemoryCandidate] = []
    for candidate in candidates:
        ok = not candidate.written_by_model or grounded(candidate, messages)
        (kept if ok else dropped).append(candidate)
    return kept, dropped
