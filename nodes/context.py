"""Per-run settings of the memory graph, passed as `context=` at invoke time."""

from __future__ import annotations

from dataclasses import dataclass

from engram.nodes.prompts import DEFAULT_SYSTEM_PROMPT


@dataclass(frozen=True, kw_only=True)
class Context:
    """Settings for one run of the engram graph (LangGraph's `context_schema`).

    Example:
        >>> ctx = Context(user_id="alice", message_threshold=6)
        >>> (ctx.user_id, ctx.token_threshold, ctx.recall_k)
        ('alice', 3000, 5)
    """

    user_id: str = "default"
    """Whose long-term memories are recalled and written (namespace `("memories", user_id)`)."""

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
    """Short-term hard cap (seed 002): above it compaction fires whatever the thresholds say, and
    evicts even when the summarizer fails (seed 000's lossy "[N messages ...]" note)."""

    consolidate_every_turns: int = 5
    """Long-term memories are extracted every this many turns (and on eviction and session end)."""

    recall_k: int = 5
    """How many long-term memories are recalled per turn at most."""

    recall_episodes: int = 2
    """How many archived messages (messages compaction evicted, from any thread of this user)
    are recalled per turn at most, next to the memories, so details a summary dropped come back
    when asked about; 0 disables. They are found like memories (words and meaning, fused)."""

    episode_min_similarity: float = 0.4
    """An archived message is recalled only when its embedding is at least this similar to the
    recall query's.
    The scale depends on the embedder: 0.4 suits all-MiniLM-L6-v2 (unrelated texts score
    below 0.25, a question about a stored detail above 0.6)."""

    recall_timeout_ms: int = 500
    """Recall (memories and episodes) that takes longer is abandoned; the turn goes on without."""

    incognito: bool = False
    """No recall and no extraction for this run (seed 003's temporary chat)."""

    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    """The answering model's instructions; memories and the summary are appended to it."""
