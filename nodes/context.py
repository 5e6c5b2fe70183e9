"""Per-run settings of the memory graph, passed as `context=` at invoke time.

Every field is checked when a `Context` is built, so a bad setting fails the `invoke` that
brings it, with a `ValueError` naming the field, never a later turn.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from engram.nodes.prompts import DEFAULT_SYSTEM_PROMPT
from engram.stores.namespaces import user_id_problem
from engram.stores.text import valid_unicode


@dataclass(frozen=True, kw_only=True)
class Context:
    """Settings for one run of the engram graph (LangGraph's `context_schema`).

    Example:
        >>> ctx = Context(user_id="alice", message_threshold=6)
        >>> (ctx.user_id, ctx.token_threshold, ctx.recall_k)
        ('alice', 3000, 5)
        >>> Context(recall_k=-1)
        Traceback (most recent call last):
        ...
        ValueError: Context.recall_k must be an integer >= 0 (0 turns it off), got -1

    Raises:
        ValueError: A field has the wrong type or an impossible value; the message names it
            and says what it accepts.
    """

    user_id: str = "default"
    """Whose long-term memories are recalled and written (namespace `("memories", user_id)`).
    When the run's request was authenticated (LangGraph auth), it is the authenticated user:
    leave it out (or "default"), and a run naming anyone else is refused."""

    context_window: int | None = None
    """The answering model's context window in tokens; None looks the model up in a table of
    current models, and an unknown model gets 8192."""

    message_threshold: int = 10
    """Compaction fires when this many messages are not yet summarized."""

    token_threshold: int | None = 3000
    """Compaction also fires when the unsummarized messages exceed this many tokens (None: off)."""

    max_summary_tokens: int = 1000
    """Upper bound on the running summary's length."""

    keep_recent_messages: int = 4
    """Messages a compaction keeps verbatim at the end of the thread (more when that would split
    an AI message with tool calls from its tool results)."""

    max_messages: int = 200
    """Short-term hard cap: above it compaction fires whatever the thresholds say, and evicts
    even when the summarizer fails (a lossy "[N messages ...]" note in the summary then)."""

    offload_threshold_tokens: int | None = 2000
    """A tool result longer than this many tokens is kept aside (under the thread, redacted) and
    the model sees a pointer instead: its id, a summary, a preview and its length; the agent
    reads it back with the `read_tool_result` and `search_tool_result` tools
    (`engram.graph.offload`). The default is about half the history share of an 8192-token
    window. None keeps every result in the context."""

    consolidate_every_turns: int = 5
    """Long-term memories are extracted every this many turns (and on eviction and session end)."""

    recall_k: int = 5
    """How many long-term memories are recalled per turn at most."""

    recall_k_first_turn: int = 10
    """How many long-term memories a thread's first turn recalls at most, in place of `recall_k`
    (nothing of the conversation is in the prompt yet, and what a new session's first message
    needs often ranks just below the top five). `recall_k=0` turns memories off on every turn."""

    recall_episodes: int = 5
    """How many archived messages (every message of this user's ended sessions and of what
    compaction evicted, from any thread) are recalled per turn at most, next to the memories,
    so what no memory holds comes back when asked about; 0 disables. They are found like
    memories (words and meaning, fused)."""

    recall_episodes_first_turn: int = 30
    """How many archived messages a thread's first turn recalls at most, in place of
    `recall_episodes`: nothing of the conversation is in the prompt yet, and a new session's
    first message often needs what was said in earlier ones without naming it ("dinner for our
    first night" for the message about a celiac diagnosis), which ranks low among them. They
    share the memory budget with the memories. `recall_episodes=0` turns archived messages off
    on every turn."""

    recall_replies: int = 1
    """Of the archived messages a turn recalls, how many may be replies (the assistant's or a
    tool's) at most. What the user said holds what they told; a reply is mostly advice, long,
    and would take the places of the user's messages."""

    recall_replies_first_turn: int = 5
    """`recall_replies` on a thread's first turn."""

    episode_min_similarity: float = 0.15
    """An archived message is recalled only when its embedding is at least this similar to the
    recall query's. The scale depends on the embedder: with all-MiniLM-L6-v2, unrelated texts
    score below 0.1, and the message a question needs often only 0.2 to 0.4 when the question
    does not name it ("plan dinners for next week" for the message about a peanut allergy)."""

    episode_min_relevance: float = 0.05
    """On a store with hybrid search (`ChromaStore`), a message the user said is recalled from
    the archive only when its relevance is at least this: the mean of its two channels' scores,
    each rescaled over its candidates so that the best scores 1 (a message near the bottom of
    both channels stays out). The bar is low because the message a question needs without
    naming it often scores only 0.1 to 0.3. Other stores rank by similarity alone, and only
    `episode_min_similarity` applies."""

    reply_min_relevance: float = 0.2
    """`episode_min_relevance` for archived replies (the assistant's and tools' messages)."""

    recall_timeout_ms: int = 500
    """Recall (memories and episodes) that takes longer is abandoned; the turn goes on without.
    The first recall from a store in a process may take up to 30 s: it loads the embedder and
    the indexes."""

    incognito: bool = False
    """No recall and no extraction for this run (a temporary chat)."""

    confirm_memories: bool = False
    """Extracted memories wait for the user's approval instead of being saved: they are kept as
    pending (never recalled), announced as `memory.pending`, and saved or dropped when the user
    answers (`engram.stores.memory.pending`; the memory API and page, `engram memory pending /
    approve / reject`, the `confirm_memory` tool). What the user asks to remember (the
    `remember` tool) is saved at once; archived messages, the chat history, are recalled as
    before (`recall_episodes=0` turns that off)."""

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    """The answering model's instructions; memories and the summary are appended to it."""

    memory_work: str = "auto"
    """When compaction's summary and consolidation's extraction run: "background" (after the
    reply: the turn's `invoke` returns without waiting, the work is journaled in the store and
    the thread's next turn applies its result), "inline" (before `invoke` returns, as the
    evals need), or "auto": background when a memory model is configured, inline with the
    offline built-ins (which take milliseconds). A session end has no reply to hurry: it waits
    for the thread's jobs and its own. Incognito runs are always inline."""

    extraction: str = "auto"
    """Who writes long-term memories: "write" (the memory model writes them, the offline rules'
    candidates added, the write policy de-duplicating), "review" (the rules propose, the model
    keeps, drops or reclassifies: for small models, which write memories badly), "rules" (the
    offline rules alone, even with a memory model), or "auto": "rules" without a memory model,
    "review" for engram's own local models (`local:0.5b`, `local:1.5b`) and any model whose name
    says it has at most 4B parameters (`qwen2.5:1.5b`, `llama3.2:3b`), "write" for any other
    model."""

    def __post_init__(self) -> None:
        for field in fields(self):
            problem = _CHECKS[field.name](getattr(self, field.name))
            if problem:
                raise ValueError(
                    f"Context.{field.name} must be {problem}, got {getattr(self, field.name)!r}"
                )


DEFAULT_USER: str = Context.user_id
"""The user of a run that names none. Under authentication, it stands for the authenticated
user (`engram.graph.run_context`)."""


def _user_id(value: Any) -> str | None:
    problem = user_id_problem(value)
    if problem is None:
        if valid_unicode(value) != value:
            return "valid Unicode (this one holds a lone surrogate, which no store can keep)"
        return None
    return (
        "a string with more than whitespace in it and no whitespace at its start or end (any "
        f"text naming the user works, e.g. an e-mail address); this one {problem}"
    )


def _integer(minimum: int, meaning: str = "", *, optional: str = "") -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if optional and value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
            return None
        return f"an integer >= {minimum}{f' ({meaning})' if meaning else ''}" + (
            f", or None ({optional})" if optional else ""
        )

    return check


def _number(low: float, high: float, meaning: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and low <= value <= high
        ):
            return None
        return f"a number from {low:g} to {high:g} ({meaning})"

    return check


def _flag(value: Any) -> str | None:
    return None if isinstance(value, bool) else "True or False"


def _text(value: Any) -> str | None:
    return None if isinstance(value, str) else "a string"


def _choice(*options: str) -> Callable[[Any], str | None]:
    def check(value: Any) -> str | None:
        return None if value in options else "one of " + ", ".join(repr(o) for o in options)

    return check


_CHECKS: dict[str, Callable[[Any], str | None]] = {
    "user_id": _user_id,
    "context_window": _integer(1, "tokens", optional="look the model's window up"),
    "message_threshold": _integer(1),
    "token_threshold": _integer(1, optional="no token trigger"),
    "max_summary_tokens": _integer(1),
    "keep_recent_messages": _integer(0),
    "max_messages": _integer(1),
    "offload_threshold_tokens": _integer(1, "tokens", optional="never offload"),
    "consolidate_every_turns": _integer(1),
    "recall_k": _integer(0, "0 turns it off"),
    "recall_k_first_turn": _integer(0),
    "recall_episodes": _integer(0, "0 turns it off"),
    "recall_episodes_first_turn": _integer(0),
    "recall_replies": _integer(0),
    "recall_replies_first_turn": _integer(0),
    "episode_min_similarity": _number(-1, 1, "a cosine similarity"),
    "episode_min_relevance": _number(0, 1, "a fused relevance; the best candidate scores 1"),
    "reply_min_relevance": _number(0, 1, "a fused relevance; the best candidate scores 1"),
    "recall_timeout_ms": _integer(1, "milliseconds"),
    "incognito": _flag,
    "confirm_memories": _flag,
    "system_prompt": _text,
    "memory_work": _choice("auto", "background", "inline"),
    "extraction": _choice("auto", "write", "review", "rules"),
}
"""One check per field: None when the value is fine, else what the field accepts."""
