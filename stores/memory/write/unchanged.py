"""What a memory said besides the thing a change retires: its other sentences.

One message often states several facts, and the rules keep it as one memory ("im in Columbus,
about an hour and a half. i go down every other weekend"). A later statement that names what it
changes ("visiting sundays now instead of every other weekend") retires that memory (the write
policy's step 3b), and with it the facts it did not change: the user's city was gone from
recall. `unchanged_sentences` finds those facts: the memory's sentences that share no topic term
(`topic_terms`) with what the change names. The replacement holds them before its own words, so
the city stays current while the visits change, and undoing the replacement brings the old
memory back whole.

A memory of one sentence, one whose every sentence names the topic, or one where only the
assistant's question would be left has nothing to keep: it is retired whole, as before. A
sentence ends at `.`, `!` or `?` before a space, at `。`, `！`, `？` and at a line break; a comma
does not end one, as a fact often goes on after it ("im in Columbus, about an hour and a half").

Example:
    >>> unchanged_sentences(
    ...     "How far are you from him? im in Columbus, about an hour and a half. "
    ...     "i go down every other weekend",
    ...     "i'm visiting sundays now every other weekend",
    ... )
    'How far are you from him? im in Columbus, about an hour and a half.'
    >>> unchanged_sentences("we use Jira for tickets", "we Jira")
    ''
"""

from __future__ import annotations

import re

from engram.stores.lexical.index import topic_terms

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\s*\n\s*")


def unchanged_sentences(content: str, topic: str) -> str:
    """The sentences of `content` that share no topic term with `topic`, in their order; "" when
    nothing is left to keep (see the module docstring)."""
    named = topic_terms(topic)
    sentences = [s for s in _SENTENCE_END.split(content.strip()) if s]
    kept = [s for s in sentences if not topic_terms(s) & named]
    if len(kept) == len(sentences) or all(s.endswith(("?", "？")) for s in kept):
        return ""
    return "".join(s if s.endswith(("。", "！", "？")) else s + " " for s in kept).strip()
