"""Per-run settings of the memory graph, passed as `context=` at invoke time.

`Context` holds who the run is for and how it behaves; the settings of each part of the graph
are nested in it: `recall` (what `start` recalls), `compaction` (when and how the thread is
summarized), `extraction` (who writes long-term memories and how often) and `working_memory`
(tool results kept aside). A run's context may be given as objects or as a plain mapping, as
LangGraph Studio and the HTTP API send it:

    Context(user_id="alice", recall=Recall(k=3))
    {"user_id": "alice", "recall": {"k": 3}}

Every setting is checked when a `Context` is built (pydantic, strict: `"3"` is not 3 and `True`
is not 1), so a bad one fails the `invoke` that brings it, never a later turn, with a
`SettingsError` (a `ValueError`) naming the setting and what it accepts.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engram.nodes.prompts import DEFAULT_SYSTEM_PROMPT
from engram.stores.namespaces import user_id_problem
from engram.stores.text import valid_unicode

ExtractionChoice = Literal["auto", "write", "review", "rules"]
"""`Extraction.mode`: who writes long-term memories."""

MemoryWork = Literal["auto", "background", "inline"]
"""`Context.memory_work`: when the memory model's work runs."""


class SettingsError(ValueError):
    """A setting has the wrong type or an impossible value; the message names it (as
    `Context.recall.k`) and says what it accepts, one line per problem in `problems`."""

    def __init__(self, owner: str, problems: list[tuple[str, str]]) -> None:
        super().__init__("; ".join(f"{owner}.{path}{wrong}" for path, wrong in problems))
        self.problems = problems


class Settings(BaseModel):
    """Immutable, strictly checked settings whose errors name the setting."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        strict=True,
        allow_inf_nan=False,
        use_attribute_docstrings=True,
    )

    def __init__(self, **values: Any) -> None:
        try:
            super().__init__(**values)
        except ValidationError as error:
            owner = type(self).__name__
            raise SettingsError(owner, _problems(owner, error)) from None

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes`, checked like a new one (`model_copy` checks nothing).

        Example:
            >>> Recall().replace(k=2).k
            2
        """
        return type(self)(**{**dict(self), **changes})


class Recall(Settings):
    """What `start` recalls each turn: long-term memories and archived messages.

    Example:
        >>> Recall(k=3).k_first_turn
        10
    """

    k: int = Field(5, ge=0)
    """How many long-term memories are recalled per turn at most; 0 turns memories off on
    every turn."""

    k_first_turn: int = Field(10, ge=0)
    """How many long-term memories a thread's first turn recalls at most, in place of `k`
    (nothing of the conversation is in the prompt yet, and what a new session's first message
    needs often ranks just below the top five)."""

    episodes: int = Field(5, ge=0)
    """How many archived messages (every message of this user's ended sessions and of what
    compaction evicted, from any thread) are recalled per turn at most, next to the memories,
    so what no memory holds comes back when asked about; 0 turns archived messages off on every
    turn. They are found like memories (words and meaning, fused)."""

    episodes_first_turn: int = Field(30, ge=0)
    """How many archived messages a thread's first turn recalls at most, in place of
    `episodes`: nothing of the conversation is in the prompt yet, and a new session's first
    message often needs what was said in earlier ones without naming it ("dinner for our first
    night" for the message about a celiac diagnosis), which ranks low among them. They share
    the memory budget with the memories."""

    replies: int = Field(1, ge=0)
    """Of the archived messages a turn recalls, how many may be replies (the assistant's or a
    tool's) at most. What the user said holds what they told; a reply is mostly advice, long,
    and would take the places of the user's messages."""

    replies_first_turn: int = Field(5, ge=0)
    """`replies` on a thread's first turn."""

    episode_min_similarity: float = Field(0.15, ge=-1, le=1)
    """An archived message is recalled only when its embedding is at least this similar (a
    cosine similarity) to the recall query's. The scale depends on the embedder: with
    all-MiniLM-L6-v2, unrelated texts score below 0.1, and the message a question needs often
    only 0.2 to 0.4 when the question does not name it ("plan dinners for next week" for the
    message about a peanut allergy)."""

    episode_min_relevance: float = Field(0.05, ge=0, le=1)
    """On a store with hybrid search (`ChromaStore`), a message the user said is recalled from
    the archive only when its relevance is at least this: the mean of its two channels' scores,
    each rescaled over its candidates so that the best scores 1 (a message near the bottom of
    both channels stays out). The bar is low because the message a question needs without
    naming it often scores only 0.1 to 0.3. Other stores rank by similarity alone, and only
    `episode_min_similarity` applies."""

    reply_min_relevance: float = Field(0.2, ge=0, le=1)
    """`episode_min_relevance` for archived replies (the assistant's and tools' messages)."""

    timeout_ms: int = Field(500, ge=1)
    """Recall (memories and archived messages) that takes longer, in milliseconds, is
    abandoned; the turn goes on without. The first recall from a store in a process may take up
    to 30 s: it loads the embedder and the indexes."""


class Compaction(Settings):
    """When the thread's older messages are folded into the running summary, and how.

    Example:
        >>> Compaction(message_threshold=6).token_threshold
        3000
    """

    message_threshold: int = Field(10, ge=1)
    """Compaction fires when this many messages are not yet summarized."""

    token_threshold: int | None = Field(3000, ge=1)
    """Compaction also fires when the unsummarized messages exceed this many tokens (None: no
    token trigger)."""

    max_summary_tokens: int = Field(1000, ge=1)
    """Upper bound on the running summary's length."""

    keep_recent_messages: int = Field(4, ge=0)
    """Messages a compaction keeps verbatim at the end of the thread (more when that would split
    an AI message with tool calls from its tool results)."""

    max_messages: int = Field(200, ge=1)
    """Short-term hard cap: above it compaction fires whatever the thresholds say, and evicts
    even when the summarizer fails (a lossy "[N messages ...]" note in the summary then)."""


class Extraction(Settings):
    """Who writes long-term memories, and how often.

    Example:
        >>> Extraction(mode="rules").every_turns
        5
    """

    mode: ExtractionChoice = "auto"
    """Who writes them: "write" (the memory model writes them, the offline rules' candidates added, the write
    policy de-duplicating), "review" (the rules propose, the model keeps, drops or reclassifies:
    for small models, which write memories badly), "rules" (the offline rules alone, even with a
    memory model), or "auto": "rules" without a memory model, "review" for engram's own local
    models (`local:0.5b`, `local:1.5b`) and any model whose name says it has at most 4B
    parameters (`qwen2.5:1.5b`, `llama3.2:3b`), "write" for any other model."""

    every_turns: int = Field(5, ge=1)
    """Long-term memories are extracted every this many turns (and on eviction and session
    end)."""


class WorkingMemory(Settings):
    """Tool results kept aside from the context (`engram.graph.offload`).

    Example:
        >>> WorkingMemory(offload_threshold_tokens=None).offload_threshold_tokens is None
        True
    """

    offload_threshold_tokens: int | None = Field(2000, ge=1)
    """A tool result longer than this many tokens is kept aside (under the thread, redacted) and
    the model sees a pointer instead: its id, a summary, a preview and its length; the agent
    reads it back with the `read_tool_result` and `search_tool_result` tools. The default is
    about half the history share of an 8192-token window. None keeps every result in the
    context."""


class Context(Settings):
    """Settings for one run of the engram graph (LangGraph's `context_schema`).

    Example:
        >>> ctx = Context(user_id="alice", compaction=Compaction(message_threshold=6))
        >>> (ctx.user_id, ctx.compaction.token_threshold, ctx.recall.k)
        ('alice', 3000, 5)
        >>> Context(recall={"k": 3}).recall.k
        3
        >>> Context(recall={"k": -1})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        engram.nodes.context.SettingsError: Context.recall.k: input should be greater ..., got -1

    Raises:
        SettingsError: A setting has the wrong type or an impossible value; the message names
            it and says what it accepts.
    """

    user_id: str = "default"
    """Whose long-term memories are recalled and written (namespace `("memories", user_id)`).
    When the run's request was authenticated (LangGraph auth), it is the authenticated user:
    leave it out (or "default"), and a run naming anyone else is refused."""

    context_window: int | None = Field(None, ge=1)
    """The answering model's context window in tokens; None looks the model up in a table of
    current models, and an unknown model gets 8192."""

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    """The answering model's instructions; memories and the summary are appended to it."""

    incognito: bool = False
    """No recall and no extraction for this run (a temporary chat)."""

    confirm_memories: bool = False
    """Extracted memories wait for the user's approval instead of being saved: they are kept as
    pending (never recalled), announced as `memory.pending`, and saved or dropped when the user
    answers (`engram.stores.memory.pending`; the memory API and page, `engram memory pending /
    approve / reject`, the `confirm_memory` tool). What the user asks to remember (the
    `remember` tool) is saved at once; archived messages, the chat history, are recalled as
    before (`recall.episodes=0` turns that off)."""

    memory_work: MemoryWork = "auto"
    """When compaction's summary and consolidation's extraction run: "background" (after the
    reply: the turn's `invoke` returns without waiting, the work is journaled in the store and
    the thread's next turn applies its result), "inline" (before `invoke` returns, as the
    evals need), or "auto": background when a memory model is configured, inline with the
    offline built-ins (which take milliseconds). A session end has no reply to hurry: it waits
    for the thread's jobs and its own. Incognito runs are always inline."""

    recall: Recall = Recall()
    """What each turn recalls: long-term memories and archived messages."""

    compaction: Compaction = Compaction()
    """When and how the thread's older messages are summarized."""

    extraction: Extraction = Extraction()
    """Who writes long-term memories, and how often."""

    working_memory: WorkingMemory = WorkingMemory()
    """Tool results kept aside from the context."""

    @field_validator("user_id")
    @classmethod
    def _names_a_user(cls, value: str) -> str:
        problem = user_id_problem(value)
        if problem is not None:
            raise ValueError(
                "should be a string with more than whitespace in it and no whitespace at its "
                f"start or end (any text naming the user works, e.g. an e-mail address); this "
                f"one {problem}"
            )
        if valid_unicode(value) != value:
            raise ValueError(
                "should be valid Unicode (this one holds a lone surrogate, which no store can keep)"
            )
        return value


DEFAULT_USER: str = Context().user_id
"""The user of a run that names none. Under authentication, it stands for the authenticated
user (`engram.graph.run_context`)."""

MOVED: dict[str, str] = {
    "recall_k": "recall.k",
    "recall_k_first_turn": "recall.k_first_turn",
    "recall_episodes": "recall.episodes",
    "recall_episodes_first_turn": "recall.episodes_first_turn",
    "recall_replies": "recall.replies",
    "recall_replies_first_turn": "recall.replies_first_turn",
    "episode_min_similarity": "recall.episode_min_similarity",
    "episode_min_relevance": "recall.episode_min_relevance",
    "reply_min_relevance": "recall.reply_min_relevance",
    "recall_timeout_ms": "recall.timeout_ms",
    "message_threshold": "compaction.message_threshold",
    "token_threshold": "compaction.token_threshold",
    "max_summary_tokens": "compaction.max_summary_tokens",
    "keep_recent_messages": "compaction.keep_recent_messages",
    "max_messages": "compaction.max_messages",
    "consolidate_every_turns": "extraction.every_turns",
    "offload_threshold_tokens": "working_memory.offload_threshold_tokens",
}
"""Settings that were top-level `Context` fields before they were grouped, and where they are
now: a run that still names one is told where it went."""


def _problems(owner: str, error: ValidationError) -> list[tuple[str, str]]:
    """(setting, what is wrong) per problem, the setting's path below `owner`."""
    problems = []
    for problem in error.errors(include_url=False):
        path = ".".join(str(part) for part in problem["loc"])
        nested = (problem.get("ctx") or {}).get("error")
        if isinstance(nested, SettingsError):  # a group's own check, the group given as a mapping
            problems += [(f"{path}.{inner}", wrong) for inner, wrong in nested.problems]
        elif problem["type"] == "extra_forbidden":
            problems.append((path, _unknown(owner, path)))
        else:
            message = problem["msg"].removeprefix("Value error, ")
            problems.append(
                (path, f": {message[:1].lower()}{message[1:]}, got {problem['input']!r}")
            )
    return problems


def _unknown(owner: str, path: str) -> str:
    moved = MOVED.get(path) if owner == "Context" else None
    if moved is None:
        return " is not a setting: docs/configuration.md lists them"
    group, name = moved.split(".")
    return (
        f" is now {owner}.{moved}: pass {group}={{{name!r}: ...}} or "
        f"{group}={_GROUPS[group]}({name}=...)"
    )


_GROUPS = {
    "recall": "Recall",
    "compaction": "Compaction",
    "extraction": "Extraction",
    "working_memory": "WorkingMemory",
}
