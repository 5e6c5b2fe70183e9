"""What recall adds to a turn's context, and how the memory block shows it.

Recall brings memories and archived messages (episodes); an episode that adds nothing is left
out (a message still in this thread's history, or one that a recalled memory holds word for
word); a message that compaction took out of the thread can come back this way, since the
summary keeps at most `compaction.max_summary_tokens` of what it folded in. The block
shows the memories a section per category, each dated by
the day the user said it (so a model can tell which of two that disagree is newer), then the
episodes as quoted messages in date order under their dates, a reply right after the message
it answers; a procedure (a `skill` memory of tool calls that worked) shows its steps on lines of
their own. A memory that replaced others the recall matched is marked current, with what it
replaced under it, dated; a quoted message that a replaced memory came from is marked as
changed since (`mark_changed`): nothing replaced looks current. Everything recalled goes through `escape_recalled`, so nothing in it can open or
close a block of the system prompt.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.store.base import SearchItem

from engram.nodes.prompts import (
    EPISODE_HEADING,
    MEMORY_BLOCK_TEMPLATE,
    MEMORY_CATEGORY_HEADINGS,
    OTHER_MEMORY_HEADING,
)
from engram.nodes.text.escape import escape_recalled
from engram.stores.lexical.index import lexical_terms
from engram.stores.memory.procedures import (
    PROCEDURE_PREFIX,
    is_procedure,
    parse_procedure,
    uses_of,
)
from engram.stores.memory.types import Memory, ScoredMemory, parse_time

EPISODE_CHARS = 400
"""A recalled episode shows at most this many characters."""

QUOTED_QUESTION_CHARS = 80
"""A reply whose message is not shown itself quotes this many characters of that message."""

CHANGED = "changed_since"
"""The key `mark_changed` sets on a recalled message's value (a copy) that a later change
replaced."""

CHANGED_MARK = " (changed since)"
"""What follows such a message in the block."""

UNDATED = "[date unknown]"
"""The line over archived messages that carry no date (archived before messages had times)."""


def new_episodes(
    episodes: Sequence[SearchItem], memories: Sequence[ScoredMemory], thread: Sequence[BaseMessage]
) -> list[SearchItem]:
    """The episodes that add something: not a message still in `thread` (the prompt shows it
    already), and not a message a recalled memory already holds word for word.

    Example:
        >>> from datetime import datetime
        >>> from langchain_core.messages import HumanMessage
        >>> def episode(text, ids):
        ...     now = datetime(2026, 1, 1)
        ...     return SearchItem(("episodes", "u"), ids[0], {"content": text, "message_ids": ids},
        ...                       now, now)
        >>> found = [episode("[1 May 2026] user: I'm vegan", ["m1"]),
        ...          episode("[2 May 2026] user: my cat is Miso", ["m2"])]
        >>> [e.key for e in new_episodes(found, [], [HumanMessage("hi", id="m2")])]
        ['m1']
    """
    present = {m.id for m in thread if m.id}
    held = [_words(m.content) for s in memories for m in (s.memory, *s.earlier)]

    def repeats_a_memory(episode: SearchItem) -> bool:
        text = _words(_parts(episode.value)[1].partition(": ")[2])
        return bool(text) and any(f" {text} " in f" {memory} " for memory in held)

    return [
        e
        for e in episodes
        if not present.intersection(e.value.get("message_ids", ())) and not repeats_a_memory(e)
    ]


def mark_changed(
    episodes: Sequence[SearchItem], memories: Sequence[ScoredMemory]
) -> list[SearchItem]:
    """`episodes`, each message that a replaced memory came from (a memory in some recalled
    memory's `earlier`) and that shares a term with it marked as changed since, and each reply
    to such a message (or to one holding a replaced memory's words): the block says so
    (`CHANGED`).

    Example:
        >>> from datetime import datetime
        >>> from engram.stores.memory.types import Memory
        >>> old = Memory.new("I live in Lisbon", "fact", 0.8, now="2026-01-05T10:00:00")
        >>> old = old.model_copy(update={"source_message_ids": ["m1"]})
        >>> new = Memory.new("I moved to Porto", "fact", 0.8, now="2026-03-01T10:00:00")
        >>> now = datetime(2026, 3, 2)
        >>> said = SearchItem(("episodes", "u"), "m1",
        ...                   {"content": "[5 January 2026] user: I live in Lisbon",
        ...                    "message_ids": ["m1"]}, now, now)
        >>> [shown] = mark_changed([said], [ScoredMemory(new, 0.9, 0.9, 1.0, earlier=(old,))])
        >>> episode_lines([shown])
        ['[5 January 2026]', '- user: I live in Lisbon (changed since)']
    """
    earlier = [m for s in memories for m in s.earlier]
    if not earlier:
        return list(episodes)

    def from_replaced(episode: SearchItem) -> bool:
        """Said by the user, a source of a replaced memory, and about what it says (a model's
        memory lists every message of its window as a source)."""
        ids = set(episode.value.get("message_ids", ()))
        terms = set(lexical_terms(_parts(episode.value)[1].partition(": ")[2]))
        return episode.value.get("role", "user") == "user" and any(
            ids.intersection(m.source_message_ids) and terms & set(lexical_terms(m.content))
            for m in earlier
        )

    changed = {_words(_parts(e.value)[1].partition(": ")[2]) for e in episodes if from_replaced(e)}
    said = [f" {_words(m.content)} " for m in earlier]

    def is_changed(episode: SearchItem) -> bool:
        if episode.value.get("role", "user") == "user":
            return from_replaced(episode)
        question = _words((_question(episode.value) or "").partition(": ")[2])
        return bool(question) and (
            question in changed or any(text in f" {question} " for text in said)
        )

    return [
        SearchItem(e.namespace, e.key, {**e.value, CHANGED: True}, e.created_at, e.updated_at,
                   e.score)
        if is_changed(e)
        else e
        for e in episodes
    ]


def render_memory_block(
    memories: Sequence[ScoredMemory],
    episodes: Sequence[SearchItem] = (),
    *,
    template: str = MEMORY_BLOCK_TEMPLATE,
) -> str:
    """One delimited block: a section per category, then the recalled episodes. Each memory
    shows the day it was said (`said_on`); when all were said on one day, the heading says it
    once instead.

    Example:
        >>> from engram.stores.memory.types import Memory
        >>> now = "2026-01-01T00:00:00+00:00"
        >>> m = Memory.new("Prefers short answers", "preference", 0.9, now=now)
        >>> block = render_memory_block([ScoredMemory(m, score=0.9, similarity=0.9, recency=1.0)])
        >>> block.splitlines()[4:8]
        ['# USER MEMORY (said on 1 January 2026)', '', '## User Preferences', '- Prefers short answers']
    """
    if not memories and not episodes:
        return ""
    days = {said_on(m) for scored in memories for m in (scored.memory, *scored.earlier)}
    one_day = next(iter(days)) if len(days) == 1 else ""  # said once, on the heading
    grouped: dict[str, list[str]] = {}
    for scored in memories:
        heading = MEMORY_CATEGORY_HEADINGS.get(scored.memory.category, OTHER_MEMORY_HEADING)
        grouped.setdefault(heading, []).append(_memory_lines(scored, dated=not one_day))
    if episodes:
        grouped[EPISODE_HEADING] = episode_lines(episodes)
    order = [*MEMORY_CATEGORY_HEADINGS.values(), OTHER_MEMORY_HEADING, EPISODE_HEADING]
    sections = [f"{h}\n" + "\n".join(grouped[h]) for h in order if h in grouped]
    said = f" (said on {one_day})" if one_day else ""
    return template.format(said=said, sections="\n\n".join(sections))


def episode_lines(episodes: Sequence[SearchItem]) -> list[str]:
    """The episodes section's lines: a `[date]` line, then that day's messages; days in
    order (undated messages last, under `UNDATED`), a reply right after the message it
    answers when that message is shown too (a reply to a reply after that reply).

    Example:
        >>> from datetime import datetime
        >>> def episode(key, text, **more):
        ...     now = datetime(2026, 1, 1)
        ...     return SearchItem(("episodes", "u"), key, {"content": text, **more}, now, now)
        >>> for line in episode_lines([
        ...     episode("b", "[9 May 2026] assistant: Then skip the satay.", role="assistant",
        ...             context="user: I'm allergic to peanuts"),
        ...     episode("c", "[2 May 2026] user: my cat is Miso"),
        ...     episode("a", "[9 May 2026] user: I'm allergic to peanuts"),
        ... ]):
        ...     print(line)
        [2 May 2026]
        - user: my cat is Miso
        [9 May 2026]
        - user: I'm allergic to peanuts
        - assistant: Then skip the satay.
    """
    parsed = [(*_parts(e.value), _question(e.value)) for e in episodes]
    first: dict[tuple[str, str], int] = {}  # (date, what is said) -> the first such message
    for n, (date, said, _) in enumerate(parsed):
        first.setdefault((date, _words(said)), n)
    parent: dict[int, int] = {}
    for n, (date, _, question) in enumerate(parsed):
        answered = first.get((date, _words(question))) if question else None
        if answered is not None and not _answers(answered, n, parent):
            parent[n] = answered
    children: dict[int, list[int]] = {}
    for n, answered in parent.items():
        children.setdefault(answered, []).append(n)

    def thread(n: int) -> list[str]:
        _, said, question = parsed[n]
        line = _with_question(said, question) if question and n not in parent else said
        mark = CHANGED_MARK if episodes[n].value.get(CHANGED) else ""
        replies = (x for child in children.get(n, ()) for x in thread(child))
        return [f"- {_cut(line)}{mark}", *replies]

    days: dict[str, list[int]] = {}
    for n in range(len(parsed)):
        if n not in parent:
            days.setdefault(parsed[n][0], []).append(n)
    lines: list[str] = []
    for date in sorted(days, key=_day_order):
        lines.append(f"[{_one_line(date)}]" if date else UNDATED)
        lines.extend(x for n in days[date] for x in thread(n))
    return lines


def _answers(reply: int, message: int, parent: dict[int, int]) -> bool:
    """Whether `reply` already answers `message`, directly or down a chain of replies."""
    while reply in parent:
        reply = parent[reply]
        if reply == message:
            return True
    return reply == message


def shown_episode(value: dict[str, Any]) -> str:
    """One recalled episode as the block shows it when alone: its date, and a reply with the
    start of the message it answers; on one line, escaped and cut (the eval scores this)."""
    date, said = _parts(value)
    question = _question(value)
    line = _cut(_with_question(said, question) if question is not None else said)
    line += CHANGED_MARK if value.get(CHANGED) else ""
    return f"[{_one_line(date)}] {line}" if date else line


def _parts(value: dict[str, Any]) -> tuple[str, str]:
    """(date, "speaker: text") of an episode's content ("[8 May 2023] speaker: text")."""
    match = _DATED.match(str(value.get("content", "")))
    return (match["date"] or "", match["said"]) if match else ("", "")


def _question(value: dict[str, Any]) -> str | None:
    """The message a reply answers ("speaker: text", the last line of its context), or None."""
    context = str(value.get("context") or "").strip()
    if value.get("role") in ("assistant", "tool") and context:
        return context.splitlines()[-1]
    return None


def _with_question(said: str, question: str) -> str:
    speaker, _, text = said.partition(": ")
    quoted = _one_line(question)
    if len(quoted) > QUOTED_QUESTION_CHARS:
        quoted = quoted[: QUOTED_QUESTION_CHARS - 1] + "…"
    return f"{speaker} (answering {quoted}): {text}"


def _cut(text: str) -> str:
    """On one line, escaped, at most `EPISODE_CHARS` characters."""
    one = _one_line(text[: EPISODE_CHARS * 4])  # escape only a generous start of a long one
    long = len(one) > EPISODE_CHARS or len(text) > EPISODE_CHARS * 4
    return one[: EPISODE_CHARS - 1] + "…" if long else one


def _day_order(date: str) -> tuple[int, datetime]:
    try:
        return 0, datetime.strptime(date, "%d %B %Y")
    except ValueError:
        return 1, datetime.min


def _memory_lines(scored: ScoredMemory, *, dated: bool) -> str:
    """A memory's bullet (`_memory_line`); when it replaced memories the recall matched, marked
    current, with each of them on a line of its own under it, oldest first."""
    line = _memory_line(scored.memory, dated=dated)
    if not scored.earlier:
        return line
    earlier = [
        f"  - earlier{f' [{said_on(m)}]' if dated and said_on(m) else ''}: {_one_line(m.content)}"
        for m in scored.earlier
    ]
    first, _, steps = line.partition("\n")
    return "\n".join([f"{first} (current)", *([steps] if steps else []), *earlier])


def _memory_line(memory: Memory, *, dated: bool) -> str:
    """A memory's bullet, with the day it was said when `dated` (`said_on`); a procedure's steps
    on their own lines under it, with how often it worked (`engram.stores.memory.procedures`)."""
    procedure = (
        parse_procedure(memory.content, uses=uses_of(memory.structured_data))
        if is_procedure(memory.structured_data)
        else None
    )
    if procedure is None:
        day = said_on(memory) if dated else ""
        return f"- [{day}] {_one_line(memory.content)}" if day else f"- {_one_line(memory.content)}"
    times = "once" if procedure.uses == 1 else f"{procedure.uses} times"
    lines = [f"- {_one_line(PROCEDURE_PREFIX + ' ' + procedure.task)} (worked {times})"]
    lines += [f"  {n}. {_one_line(call)}" for n, call in enumerate(procedure.calls, 1)]
    return "\n".join(lines)


def said_on(memory: Memory) -> str:
    """The day the user said it (`Memory.valid_from`), "8 May 2023", or "" if unreadable.

    Example:
        >>> said_on(Memory.new("I'm vegan", "preference", 0.9, now="2023-05-08T13:56:00+00:00"))
        '8 May 2023'
    """
    try:
        when = parse_time(memory.valid_from)
    except (TypeError, ValueError):
        return ""
    return f"{when.day} {when:%B %Y}"


def _one_line(text: str) -> str:
    return " ".join(escape_recalled(text).split())


def _words(text: str) -> str:
    return " ".join(text.casefold().split())


_DATED = re.compile(r"^(?:\[(?P<date>[^\]]*)\] )?(?P<said>.*)$", re.DOTALL)
