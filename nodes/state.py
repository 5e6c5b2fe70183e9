"""The memory graph's state: the thread's messages plus the bookkeeping of summary and memory."""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired

from langchain_core.messages import AnyMessage
from langgraph.channels import EphemeralValue
from typing_extensions import TypedDict

from engram.nodes.messages import add_valid_messages


class BuiltContext(TypedDict):
    """What `start` assembled for the model this turn, shown in Studio.

    `respond` rebuilds the model input from these ids and the state, so the checkpoint never
    holds a second copy of the messages.
    """

    token_stats: dict[str, int]
    """Tokens per part: system_prompt, memories, summary, recent_messages, current_input, total
    (total: the whole model input, per-message overhead included)."""
    budget: dict[str, int]
    """The budget the counts above had to fit: window, reserve, available (window - reserve) and
    the shares system_prompt, memories, history."""
    included_message_ids: list[str]
    """Ids of the history messages sent to the model, oldest first (the current input included)."""
    elided_message_ids: NotRequired[list[str]]
    """Messages of the current input sent as a short note instead of their text, because they
    cannot fit in the model's window (left in the thread by a turn that failed on them)."""
    summarized_message_count: int
    """Messages of the thread not sent verbatim (covered by the summary or left out for budget)."""
    used_summary: bool
    summary_chars: int
    """How much of the running summary went in (all of it unless the budget cut its end)."""
    memory_ids: list[str]
    """Long-term memories used this turn."""
    episode_ids: list[str]
    """Archived exchanges (`("episodes", user_id)` keys) recalled into the memory block."""
    memory_block: str
    """The rendered, delimited memory block that went into the system prompt."""
    task_block: NotRequired[str]
    """The rendered task-state block that went into the system prompt ("" when there is none)."""
    encoding: str
    """The tiktoken encoding (or "char-estimate") the counts were made with."""


class SummaryInfo(TypedDict):
    """How the running summary was last written."""

    mode: str
    """"llm" (the memory model) or "offline" (the extractive summarizer)."""
    tokens: int
    summarized_messages: int
    """Messages of the thread folded into the summary so far."""
    updated_at: str
    lossy: bool
    """True when the hard cap evicted messages the summarizer could not summarize."""


class ConsolidationInfo(TypedDict):
    """What the last long-term memory extraction did (shown in Studio, read by the evals)."""

    trigger: str
    """"session_end", "eviction" or "turns"."""
    mode: str
    """"llm" (the memory model) or "offline" (the rule extractor)."""
    extraction: NotRequired[str]
    """`Context.extraction.mode` as it applied: "write", "review" or "rules" ("given": an extractor
    passed to `make_consolidate`)."""
    messages: int
    """Messages extracted from (those whose extraction or write failed are not counted)."""
    actions: dict[str, int]
    """Write-policy outcomes: created, merged, duplicate, superseded, unchanged, dropped."""
    decisions: NotRequired[dict[str, int]]
    """The merge decider's answers (replace, merge, keep_both; failed: the threshold rule
    applied), when a memory model is configured (`engram.nodes.model.merge_decision`)."""
    memory_ids: list[str]
    """Memories created or updated."""
    at: str
    """When it ran (ISO-8601, UTC)."""


class TaskState(TypedDict):
    """What the agent is working on: kept as structure across
    compaction, shown to the model in its own block (`engram.nodes.task`)."""

    current_goal: str
    completed_steps: list[str]
    pending_steps: list[str]
    key_findings: list[str]
    mode: NotRequired[str]
    """Who wrote it last: "llm" (the memory model) or "offline" (the rules)."""


class OffloadRecord(TypedDict):
    """One tool result kept out of the model's context (`engram.nodes.offload`); the model sees
    its pointer instead, and reads it back with the `read_tool_result` and `search_tool_result`
    tools."""

    tool: str
    tool_call_id: str
    total_length: int
    """Characters the tool returned."""
    kept_in: str
    """"store" (`("tool_results", user, thread)`, `engram.stores.working`) or "thread" (in
    `content` here: an incognito run, or a run without a store or a thread id)."""
    summary: str
    content: NotRequired[str]
    """The kept text, when it is kept in the thread."""


class PendingProcedure(TypedDict):
    """A run whose tool calls all worked (`engram.nodes.procedures.run_procedure`), redacted."""

    task: str
    """The user's request, its first sentence."""
    calls: list[str]
    """Each tool call as written: `tool(arguments)`."""
    message_ids: list[str]
    """The run's messages."""
    user_id: NotRequired[str]
    """Whose run it was: only a run of the same user (the thread's owner) writes it. Missing in
    what engram kept before it recorded the user; such a procedure is dropped, not written."""


MAX_RESULTS_IN_THREAD = 5
"""Offloaded results whose text the thread's state keeps (`OffloadRecord.content`, up to 1 MB
each): the newest ones. An older one keeps its record, not its text, so the checkpoint every step
writes stays bounded."""


def _kept_results(
    left: dict[str, OffloadRecord] | None, right: dict[str, OffloadRecord] | None
) -> dict[str, OffloadRecord]:
    """The results recorded so far and the new ones; only the newest `MAX_RESULTS_IN_THREAD`
    with their text.

    Example:
        >>> new = {str(n): {"content": "x" * n} for n in range(1, 8)}
        >>> [k for k, r in _kept_results({}, new).items() if "content" in r]
        ['3', '4', '5', '6', '7']
    """
    merged = {**(left or {}), **(right or {})}
    with_text = [key for key, record in merged.items() if "content" in record]
    for key in with_text[:-MAX_RESULTS_IN_THREAD]:
        merged[key] = {k: v for k, v in merged[key].items() if k != "content"}  # type: ignore[assignment]
    return merged


class EngramInput(TypedDict):
    """What a run of the graph takes (its input schema): new messages, or a session end. The
    rest of the state (the thread's owner, background jobs, procedures waiting to be written,
    ...) is written by engram's nodes alone: an input naming any of it is not applied."""

    messages: Annotated[list[AnyMessage], add_valid_messages]
    end_session: NotRequired[Annotated[bool, EphemeralValue(bool)]]


class EngramState(TypedDict):
    """State of one thread of the engram graph."""

    messages: Annotated[list[AnyMessage], add_valid_messages]
    """Short-term memory: the thread's messages not yet compacted away (their text valid
    Unicode: a lone surrogate becomes U+FFFD)."""
    end_session: NotRequired[Annotated[bool, EphemeralValue(bool)]]
    """Input flag: route straight to `consolidate` and close the session. Ephemeral: it does not
    stay set for the next run."""
    summary: NotRequired[str]
    """The running summary of messages evicted by compaction."""
    summary_info: NotRequired[SummaryInfo]
    built_context: NotRequired[BuiltContext]
    """The record of the last context build."""
    turn: NotRequired[int]
    """User turns in this thread so far (counted by `start`)."""
    last_compaction_turn: NotRequired[int]
    """The turn whose end last compacted; the compaction edge never fires on the next one."""
    kept_tail_ids: NotRequired[list[str]]
    """Messages the last compaction kept verbatim: already counted, so not counted again by the
    compaction thresholds (the counters restart after a compaction)."""
    evicted_message_count: NotRequired[int]
    """Messages compaction removed from `messages` so far (summarized and archived as episodes)."""
    turns_since_consolidation: NotRequired[int]
    """User turns since long-term memories were last extracted (`start` counts up,
    `consolidate` resets)."""
    pending_extraction: NotRequired[list[dict[str, Any]]]
    """Messages evicted by `compact` before `consolidate` extracted from them ("extract before
    evict"), as message dicts (`engram.nodes.text.transcript.to_pending`); `consolidate` empties it."""
    consolidated_message_ids: NotRequired[list[str]]
    """Ids of messages already extracted from, so a re-run creates nothing twice."""
    consolidation: NotRequired[ConsolidationInfo]
    """The record of the last extraction (`consolidate`)."""
    memory_jobs: NotRequired[list[dict[str, Any]]]
    """Background jobs of this thread whose result is not applied yet (`engram.nodes.work.background`):
    `{"id", "kind", "user_id", ...}` plus what the job needs to run again after a crash (a
    consolidation's messages, a compaction's message ids). `start` applies finished ones."""
    owner: NotRequired[str]
    """The user who started this thread (its first run's); a run for anyone else is refused
    before it reads or writes anything (`engram.nodes.owner`)."""
    registered_user: NotRequired[str]
    """The user this thread is recorded for in the store's thread registry (`("threads",
    user_id)`), so that deleting the user deletes this thread too: its owner, once
    `consolidate` registered it."""
    task_state: NotRequired[TaskState]
    """What the agent is working on: goal, steps done and to do, findings. Updated at
    compaction from the messages it folds; never evicted with them."""
    offloaded: NotRequired[Annotated[dict[str, OffloadRecord], _kept_results]]
    """Tool results kept out of the model's context, by id (the `memoryId` of their pointer); the
    text of the newest `MAX_RESULTS_IN_THREAD` of those kept in the thread."""
    pending_procedures: NotRequired[list[PendingProcedure]]
    """Runs whose tool calls worked, waiting to be written as procedures: the last run's until
    the user's next message does not say it failed, and any the store could not take
    (`engram.nodes.procedures`)."""
    failures: NotRequired[Annotated[list[dict[str, str]], operator.add]]
    """What went wrong this turn and was worked around: `{"stage", "error"}` per failure
    (recall timeout, summarizer or extractor error, store error). Nodes append; `start` resets
    it at the beginning of each turn (with `langgraph.types.Overwrite`)."""
