"""`start`: the token budget and the context build of a turn.

The budget splits the model's context window into shares (system prompt 15%, long-term
memories 15%, history 50%, reserved for the reply 20%), the task state's 5% taken from
history's share (and given back to it when the task state needs less). History gets half, as a
reply depends most on the conversation; a fifth is kept for the reply, so that a full prompt
never cuts it short; the memories' share bounds recalled text, so that it never crowds out the
conversation. The build, in order:

1. the current input (the messages after the last AI reply) — never dropped; when it does not
   fit in window - reserve (with the system prompt), its older messages (left by a turn that
   failed on them) are sent as a short note (`ELIDED_MESSAGE_NOTE`), oldest first, and if the
   newest message alone still does not fit it is a `ContextOverflowError` (the message stays
   in the thread, and the next turn elides it);
2. the system prompt (it may exceed its share; the excess comes out of the memories' share);
3. long-term memories recalled with the current message and the 3 before it (a short message
   such as "yes, do that" names nothing; the messages before it say what it is about), and
   archived messages (episodes) similar enough to that query, as one ranked list (the best of
   each, then the second of each...) taken while the memory share lasts, rendered in one
   delimited block: memories grouped by category, then the quoted past messages, all marked
   as data;
4. the task state (`engram.nodes.task`), in its own block, within its share;
5. the running summary;
6. history, newest first, until the history share is spent; an AI message with tool calls and
   its tool results go in together or not at all.

Recalled text (memories, episodes, the task state, the summary) goes through `escape_recalled`,
so nothing in it can open or close a block of the system prompt.

Whatever the shares say, the whole model input stays within window - reserve. The record of the
build (`BuiltContext`) goes into the state; `respond` rebuilds the model input from it.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from itertools import zip_longest
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, SearchItem
from langgraph.types import Overwrite

from engram.nodes.failures import RECOVERABLE_ERRORS, record_failure
from engram.nodes.owner import claim
from engram.nodes.prompts import ELIDED_MESSAGE_NOTE, SUMMARY_BLOCK_TEMPLATE
from engram.nodes.recalled import mark_changed, new_episodes, render_memory_block
from engram.nodes.task import render_task_block
from engram.nodes.text.escape import escape_recalled
from engram.nodes.text.tokens import (
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    TokenCounter,
    counter_for_model,
    counter_named,
    message_content,
    message_text,
    preload_counters,
)
from engram.nodes.text.transcript import stamp_messages
from engram.nodes.work.background import MemoryWork, applied_state, merge_updates
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.types import ScoredMemory
from engram.stores.steps import arun_steps, together

if TYPE_CHECKING:
    from engram.nodes.context import Context
    from engram.nodes.state import BuiltContext, EngramState, TaskState

logger = logging.getLogger(__name__)

BUDGET_SHARES = {"system_prompt": 0.15, "memories": 0.15, "history": 0.50, "reserve": 0.20}
"""Shares of the context window; the module docstring says why these."""

TASK_STATE_SHARE = 0.05
"""The task state's share of the window, taken from history's: what it does not use stays
history's."""

RECALL_CONTEXT_MESSAGES = 3
"""Messages before the current one that join the recall query."""

RECALL_QUERY_CHARS = 500
"""Each message contributes at most this many characters to the recall query."""

_JOIN_TOKENS = 2
"""Tokens counted for each blank line joining the parts of the system message."""


class ContextOverflowError(ValueError):
    """The current input (with the system prompt) does not fit in the model's window - reserve."""


@dataclass(frozen=True)
class Budget:
    """Token budget of one turn, by the shares of the context window (`BUDGET_SHARES`).

    Example:
        >>> Budget.for_window(8192)
        Budget(window=8192, system_prompt=1228, memories=1228, history=4096, reserve=1638, task_state=409)
        >>> Budget.for_window(8192).available
        6554
    """

    window: int
    system_prompt: int
    memories: int
    history: int
    reserve: int
    task_state: int
    """The task state's share, part of history's."""

    @classmethod
    def for_window(cls, window: int) -> Budget:
        """Split `window` tokens by `BUDGET_SHARES`."""
        shares = {k: int(window * share) for k, share in BUDGET_SHARES.items()}
        return cls(window=window, **shares, task_state=int(window * TASK_STATE_SHARE))

    @property
    def available(self) -> int:
        """Tokens the whole model input may use: the window minus the reply's reserve."""
        return self.window - self.reserve

    def as_dict(self) -> dict[str, int]:
        """The record kept in `BuiltContext.budget`."""
        return {
            "window": self.window,
            "reserve": self.reserve,
            "available": self.available,
            "system_prompt": self.system_prompt,
            "memories": self.memories,
            "task_state": self.task_state,
            "history": self.history,
        }


StartNode = Callable[["EngramState", Runtime["Context"]], Awaitable[dict[str, Any]]]


def make_start(
    *, model_name: str | None, default_window: int, work: MemoryWork | None = None
) -> StartNode:
    """The `start` node for an answering model.

    Args:
        model_name: The answering model's name (picks the tiktoken encoding).
        default_window: Its context window, used when `Context.context_window` is None.
        work: Background jobs whose finished results this node applies first (and whose
            abandoned ones it restarts), so the turn's context uses them.
    """
    preload_counters(model_name)

    async def start(state: EngramState, runtime: Runtime[Context]) -> dict[str, Any]:
        applied: dict[str, Any] = {}
        jobs = list(state.get("memory_jobs", ()))
        if work is not None and not runtime.context.incognito:
            applied = await work.collect(state, runtime)
            state = applied_state(state, applied)
        built, failures = await prepare_context(
            state,
            runtime.context,
            runtime.store,
            model_name=model_name,
            window=runtime.context.context_window or default_window,
        )
        if work is not None:
            failures += await work.release(jobs, applied, runtime)
        turn = begin_turn(state, runtime.context.user_id)
        return merge_updates(
            applied, {**turn, "built_context": built, "failures": Overwrite(failures)}
        )

    return start


async def prepare_context(
    state: EngramState,
    ctx: Context,
    store: BaseStore | None,
    *,
    model_name: str | None,
    window: int,
) -> tuple[BuiltContext, list[dict[str, str]]]:
    """Recall for this turn's input and build its context (what `start` records), with the
    failures it worked around (a recall that timed out or failed: the turn goes on without).

    Args:
        state: The thread's state; its messages end with this turn's input.
        ctx: The run's settings.
        store: Where memories and episodes are recalled from (None: no recall).
        model_name: The answering model's name (picks the tiktoken encoding).
        window: The answering model's context window in tokens.
    """
    messages = state["messages"]
    cut = current_input_start(messages)
    memories: list[ScoredMemory] = []
    episodes: list[SearchItem] = []
    failures: list[dict[str, str]] = []
    if not ctx.incognito and store is not None:
        try:
            first_turn = cut == 0 and not state.get("summary")
            memories, episodes = await recall(
                store, ctx, recall_query(messages, cut), first_turn=first_turn
            )
            episodes = new_episodes(episodes, memories, messages)
        except RECOVERABLE_ERRORS as exc:
            failures.append(record_failure("recall", exc))
    built = build_context(
        messages,
        cut=cut,
        summary=state.get("summary", ""),
        memories=memories,
        episodes=episodes,
        system_prompt=ctx.system_prompt,
        budget=Budget.for_window(window),
        counter=counter_for_model(model_name),
        evicted_count=state.get("evicted_message_count", 0),
        task_state=state.get("task_state"),
    )
    return built, failures


def begin_turn(state: EngramState, user_id: str) -> dict[str, Any]:
    """The bookkeeping of a new turn: its input stamped with the time, the turn counters up,
    and the thread's owner recorded on its first turn (`engram.nodes.owner`)."""
    messages = state["messages"]
    stamped = stamp_messages(messages[current_input_start(messages) :])
    return {
        **({"messages": stamped} if stamped else {}),
        **claim(state, user_id),
        "turn": state.get("turn", 0) + 1,
        "turns_since_consolidation": state.get("turns_since_consolidation", 0) + 1,
    }


def build_context(
    messages: Sequence[BaseMessage],
    *,
    cut: int,
    summary: str,
    memories: Sequence[ScoredMemory],
    system_prompt: str,
    budget: Budget,
    counter: TokenCounter,
    episodes: Sequence[SearchItem] = (),
    evicted_count: int = 0,
    task_state: TaskState | None = None,
) -> BuiltContext:
    """Choose what goes into the model input (pure; see the module docstring for the rules).

    Args:
        messages: The thread's messages; `messages[cut:]` is the current input.
        cut: Where the current input starts (`current_input_start`).
        summary: The running summary.
        memories: Recalled memories, best first.
        episodes: Recalled archived exchanges, best first (they get what the memories leave
            of the memory share).
        system_prompt: The answering model's instructions.
        budget: The turn's budget.
        counter: Token counter of the answering model.
        evicted_count: Messages of the thread already compacted away.
        task_state: What the agent is working on (its own block, within its share).

    Raises:
        ContextOverflowError: The current input, or it and the system prompt, exceed
            window - reserve.
    """
    history, current = messages[:cut], messages[cut:]
    system_tokens = counter.count_text(system_prompt)
    elided, current_tokens = _fit_current_input(current, system_tokens, budget, counter)
    room = budget.available - current_tokens - system_tokens - MESSAGE_OVERHEAD - REPLY_PRIMING
    blocks = _fit_blocks(
        memories, episodes, task_state, summary, room, system_tokens, budget, counter
    )
    history_share = budget.history - blocks.task_tokens
    room = budget.available - current_tokens - REPLY_PRIMING
    system_total, blocks = _fit_system_message(system_prompt, blocks, room, counter)
    included, history_tokens = _fit_history(
        history, min(room - system_total, history_share - blocks.summary_tokens), counter
    )
    return {
        "token_stats": {
            "system_prompt": system_tokens,
            "memories": blocks.memory_tokens,
            "task_state": blocks.task_tokens,
            "summary": blocks.summary_tokens,
            "recent_messages": history_tokens,
            "current_input": current_tokens,
            "total": system_total + history_tokens + current_tokens + REPLY_PRIMING,
        },
        "budget": budget.as_dict(),
        "included_message_ids": [m.id for m in [*included, *current]],
        "elided_message_ids": elided,
        "summarized_message_count": evicted_count + len(history) - len(included),
        "used_summary": bool(blocks.summary),
        "summary_chars": len(blocks.summary),
        "memory_ids": [s.memory.id for s in blocks.memories],
        "episode_ids": [e.key for e in blocks.episodes],
        "memory_block": blocks.memory_block,
        "task_block": blocks.task_block,
        "encoding": counter.name,
    }


@dataclass(frozen=True)
class _Blocks:
    """What of the recalled text goes into the system message, and the tokens of each block
    (none: the bare prompt)."""

    memories: list[ScoredMemory] = field(default_factory=list)
    episodes: list[SearchItem] = field(default_factory=list)
    memory_block: str = ""
    memory_tokens: int = 0
    task_block: str = ""
    task_tokens: int = 0
    summary: str = ""
    """The summary's text that goes in (its end cut when the budget is short)."""
    summary_tokens: int = 0


def _fit_current_input(
    current: Sequence[BaseMessage], system_tokens: int, budget: Budget, counter: TokenCounter
) -> tuple[list[str], int]:
    """Which messages of the current input are elided so that it fits with the system prompt
    (`_elide_to_fit`), and its tokens then.

    Raises:
        ContextOverflowError: The current input, or it and the system prompt, exceed
            window - reserve.
    """
    available = budget.available
    elided, current_tokens = _elide_to_fit(
        current, available - system_tokens - MESSAGE_OVERHEAD - REPLY_PRIMING, counter
    )
    if current_tokens + MESSAGE_OVERHEAD + REPLY_PRIMING > available:
        raise ContextOverflowError(
            f"the current input is {current_tokens} tokens, but the model's window of "
            f"{budget.window} tokens minus {budget.reserve} reserved for the reply leaves "
            f"{available}: shorten the input, or set Context.context_window if the model "
            "accepts more (the message stays in the thread; the next turn leaves it out of "
            "the model's input)"
        )
    if current_tokens + system_tokens + MESSAGE_OVERHEAD + REPLY_PRIMING > available:
        raise ContextOverflowError(
            f"the system prompt ({system_tokens} tokens) and the current input ({current_tokens} "
            f"tokens) exceed the {available} tokens the model's window of {budget.window} leaves "
            f"after the reply's reserve: shorten Context.system_prompt or the input"
        )
    return elided, current_tokens


def _fit_blocks(
    memories: Sequence[ScoredMemory],
    episodes: Sequence[SearchItem],
    task_state: TaskState | None,
    summary: str,
    room: int,
    system_tokens: int,
    budget: Budget,
    counter: TokenCounter,
) -> _Blocks:
    """The recall, the task state and the summary, in that order, each within its share and
    what `room` has left (a system prompt over its share takes the excess from the memories')."""
    memory_share = budget.memories - max(0, system_tokens - budget.system_prompt)
    used, used_episodes, memory_block, memory_tokens = fit_recall(
        memories, episodes, min(room, memory_share), counter
    )
    room -= memory_tokens
    task_block, task_tokens = _fit_task_state(task_state, min(room, budget.task_state), counter)
    room -= task_tokens
    summary_text, summary_tokens = _fit_summary(
        escape_recalled(summary), min(room, budget.history - task_tokens), counter
    )
    return _Blocks(
        memories=used,
        episodes=used_episodes,
        memory_block=memory_block,
        memory_tokens=memory_tokens,
        task_block=task_block,
        task_tokens=task_tokens,
        summary=summary_text,
        summary_tokens=summary_tokens,
    )


def _fit_system_message(
    system_prompt: str, blocks: _Blocks, limit: int, counter: TokenCounter
) -> tuple[int, _Blocks]:
    """The tokens of the system message with `blocks`, and the blocks; the bare prompt's and no
    blocks when that exceeds `limit` (the joins tokenized differently than counted)."""
    system = compose_system_message(
        system_prompt, blocks.memory_block, blocks.summary, blocks.task_block
    )
    total = counter.count_message(system)
    if total <= limit:
        return total, blocks
    return counter.count_message(compose_system_message(system_prompt, "", "")), _Blocks()


def model_input(state: EngramState, system_prompt: str) -> list[BaseMessage]:
    """The messages `respond` sends: the system message, then what `start` included, then this
    turn's tool calls and results (which come after the current input). When a tool loop
    outgrows the room `start` left in the window, its oldest messages go as short notes
    (`elide`; never the newest, and offloaded results are pointers already)."""
    built = state["built_context"]
    messages = state["messages"]
    included = set(built["included_message_ids"])
    elided = set(built.get("elided_message_ids", ()))
    last = max((i for i, m in enumerate(messages) if m.id in included), default=len(messages) - 1)
    tail = list(messages[last + 1 :])  # this turn's tool calls and results, after `start`
    if len(tail) > 1:  # they fit in what `start` left, or the oldest go as short notes
        room = built["budget"]["available"] - built["token_stats"]["total"]
        too_long, _ = _elide_to_fit(tail, room, counter_named(built["encoding"]))
        tail = [elide(m) if m.id in too_long else m for m in tail]
    chosen = [
        elide(m) if m.id in elided else m for m in messages[: last + 1] if m.id in included
    ] + tail
    summary = escape_recalled(state.get("summary", ""))[: built["summary_chars"]]
    system = compose_system_message(
        system_prompt, built["memory_block"], summary, built.get("task_block", "")
    )
    return [system, *chosen]


def compose_system_message(
    system_prompt: str, memory_block: str, summary: str, task_block: str = ""
) -> SystemMessage:
    """The system message: instructions, then the memory block, the task-state block and the
    summary block."""
    parts = [
        system_prompt,
        memory_block,
        task_block,
        SUMMARY_BLOCK_TEMPLATE.format(summary=summary) if summary else "",
    ]
    return SystemMessage("\n\n".join(p for p in parts if p))


def elide(message: BaseMessage) -> BaseMessage:
    """The message as the model sees it when it cannot fit: a short note instead of its text
    (role, id, tool call ids and tool calls kept, so the conversation stays well formed)."""
    note = ELIDED_MESSAGE_NOTE.format(chars=f"{len(message_content(message)):,}")
    return message.model_copy(update={"content": note})


def current_input_start(messages: Sequence[BaseMessage]) -> int:
    """Index where this turn's input starts: after the last AI reply (with the AI message whose
    tool calls the input answers, if it starts with tool results).

    Raises:
        ValueError: The thread ends with an AI reply, so this run brought no input.
    """
    cut = len(messages)
    while cut > 0 and not isinstance(messages[cut - 1], AIMessage):
        cut -= 1
    if cut == len(messages):
        raise ValueError(
            "this run brought no new input: invoke with {'messages': [...]} for a turn, "
            "or {'end_session': True} to end the session"
        )
    if cut > 0 and isinstance(messages[cut], ToolMessage):
        cut -= 1
    return cut


def recall_query(messages: Sequence[BaseMessage], cut: int) -> str:
    """The current input and the 3 messages before it, newest first (so an embedder that
    truncates long texts keeps the current message)."""
    window = messages[max(0, cut - RECALL_CONTEXT_MESSAGES) :]
    texts = (message_content(m).strip()[:RECALL_QUERY_CHARS] for m in reversed(window))
    return "\n".join(t for t in texts if t)


async def recall(
    store: BaseStore, ctx: Context, query: str, *, first_turn: bool = False
) -> tuple[list[ScoredMemory], list[SearchItem]]:
    """What `start` recalls for `query`: up to `ctx.recall.k` memories, best first, then up to
    `ctx.recall.episodes` archived messages, at most `ctx.recall.replies` of them replies
    (`ctx.recall.k_first_turn`, `ctx.recall.episodes_first_turn` and
    `ctx.recall.replies_first_turn` on a thread's `first_turn`: nothing of the conversation is
    in the prompt yet), the archived messages at least `ctx.recall.episode_min_similarity`
    similar and `ctx.recall.episode_min_relevance` relevant (replies
    `ctx.recall.reply_min_relevance`). A replaced memory comes as the history of its current
    version, and the messages it came from are marked as changed since (`mark_changed`).

    One timeout (`ctx.recall.timeout_ms`) covers both; it raises `TimeoutError`. The first
    recall from a store in this process has `FIRST_RECALL_TIMEOUT_S` instead: it loads what
    later ones find ready (the embedder, the vector and lexical indexes, the code of the
    search), which is start-up, not a slow store.
    """
    ltm = LongTermMemory(store)
    settings = ctx.recall
    k = settings.k_first_turn if first_turn else settings.k
    k = k if settings.k > 0 else 0  # recall.k=0 turns memories off everywhere
    k_episodes = settings.episodes_first_turn if first_turn else settings.episodes
    k_episodes = k_episodes if settings.episodes > 0 else 0  # 0: archived messages off everywhere
    both = together(  # one store call per round for both
        # the access statistics are written at the end of the turn (`consolidate`)
        ltm.recall_steps(ctx.user_id, query, k),
        ltm.episode_steps(
            ctx.user_id, query, k_episodes,
            settings.episode_min_similarity,
            settings.episode_min_relevance,
            settings.reply_min_relevance,
            settings.replies_first_turn if first_turn else settings.replies,
        ),
    )
    first = store not in _RECALLED_FROM
    seconds = FIRST_RECALL_TIMEOUT_S if first else settings.timeout_ms / 1000
    try:
        async with asyncio.timeout(seconds):
            memories, episodes = await arun_steps(store, both)
    except TimeoutError:
        raise TimeoutError(f"no answer within {seconds * 1000:.0f} ms") from None
    if first:
        _RECALLED_FROM.add(store)
    return memories, mark_changed(episodes, memories)


FIRST_RECALL_TIMEOUT_S = 30.0
"""The time budget of the first recall from a store in a process (see `recall`)."""
_RECALLED_FROM: weakref.WeakSet[BaseStore] = weakref.WeakSet()
"""Stores this process has recalled from: their start-up is behind them."""


def fit_recall(
    memories: Sequence[ScoredMemory],
    episodes: Sequence[SearchItem],
    limit: int,
    counter: TokenCounter,
) -> tuple[list[ScoredMemory], list[SearchItem], str, int]:
    """What of the recall fits in `limit` tokens (its memories, episodes, block and the block's
    tokens): one ranked list, the best memory, the best
    episode, the second memory, the second episode..., each taken only if the block still fits
    (so a tight budget keeps the best of both kinds, not five memories and no episode). A
    memory whose history (`ScoredMemory.earlier`) does not fit goes in without it."""
    used: list[ScoredMemory] = []
    used_episodes: list[SearchItem] = []
    block, tokens = "", 0
    for entry in _interleaved(memories, episodes):
        if isinstance(entry, SearchItem):
            trials = [(used, [*used_episodes, entry])]
        else:  # a memory with its history, else without it
            trials = [([*used, entry], used_episodes)]
            if entry.earlier:
                trials.append(([*used, replace(entry, earlier=())], used_episodes))
        for trial_memories, trial_episodes in trials:
            candidate = render_memory_block(trial_memories, trial_episodes)
            cost = counter.count_text(candidate) + _JOIN_TOKENS
            if cost <= limit:
                used, used_episodes, block, tokens = trial_memories, trial_episodes, candidate, cost
                break
    return used, used_episodes, block, tokens


def _interleaved(
    memories: Sequence[ScoredMemory], episodes: Sequence[SearchItem]
) -> list[ScoredMemory | SearchItem]:
    """The two ranked lists as one: their first items, then their second items, and so on."""
    pairs = zip_longest(memories, episodes)
    return [entry for pair in pairs for entry in pair if entry is not None]


def _elide_to_fit(
    current: Sequence[BaseMessage], limit: int, counter: TokenCounter
) -> tuple[list[str], int]:
    """Which messages of the current input to elide (oldest first, never the newest) so that it
    fits in `limit` tokens, and its tokens then."""
    costs = [counter.count_message(m) for m in current]
    total, elided = sum(costs), []
    for message, cost in zip(current[:-1], costs, strict=False):
        if total <= limit:
            break
        short = counter.count_text(message_text(elide(message))) + MESSAGE_OVERHEAD
        if short < cost:
            total += short - cost
            elided.append(message.id)
    return elided, total


def _fit_task_state(
    task_state: TaskState | None, limit: int, counter: TokenCounter
) -> tuple[str, int]:
    block, tokens = render_task_block(task_state, limit - _JOIN_TOKENS, counter)
    return (block, tokens + _JOIN_TOKENS) if block else ("", 0)


def _fit_summary(summary: str, limit: int, counter: TokenCounter) -> tuple[str, int]:
    if not summary:
        return "", 0
    overhead = counter.count_text(SUMMARY_BLOCK_TEMPLATE.format(summary="")) + _JOIN_TOKENS
    text = counter.truncate(summary, limit - overhead - 1)  # - 1: the cut may re-tokenize
    if not text:
        return "", 0
    return text, counter.count_text(SUMMARY_BLOCK_TEMPLATE.format(summary=text)) + _JOIN_TOKENS


def _fit_history(
    history: Sequence[BaseMessage], limit: int, counter: TokenCounter
) -> tuple[list[BaseMessage], int]:
    """Newest first, whole units (an AI message with tool calls plus its tool results), walking
    back only as far as the budget reaches."""
    if history and not isinstance(history[0], ToolMessage):
        total = sum(map(counter.count_message, history))
        if total <= limit:  # everything fits (large windows): no walk needed
            return list(history), total
    start, used = len(history), 0
    while start > 0:
        first = start - 1
        while first > 0 and isinstance(history[first], ToolMessage):
            first -= 1
        if isinstance(history[first], ToolMessage):  # results whose tool call was compacted away
            break
        if first == start - 1:
            cost = counter.count_message(history[first])
        else:
            cost = sum(counter.count_message(m) for m in history[first:start])
        if used + cost > limit:
            break
        start, used = first, used + cost
    return list(history[start:]), used
