"""LoCoMo `graph` mode: conversations go through the engram graph, questions through its recall.

Each conversation gets a fresh `Sandbox` (embedded Chroma and SQLite in a temporary folder). Its
sessions are replayed in order, one thread each: `speaker_a` speaks as the user, `speaker_b`'s
turns are the scripted replies (`ScriptedChatModel`). Every message carries its turn's `dia_id` as
its id, its speaker as `name` and the session's date as its timestamp, and a shared image's
caption is appended to its text (`engram.evals.locomo.engine.turn_message`, as in engine mode). A `speaker_b` turn with no user turn before it
(a session that `speaker_b` opens) goes in as an earlier message of the next input; a session
that ends on `speaker_a` sends the last user turns with `{"end_session": True}`, so they are
consolidated without a reply.

Then, for every question of categories 1-4, `start`'s recall path (`engram.nodes.start.recall`)
runs with the question as the query, and the evidence turns covered by what came back count:
a memory covers the turns in its `source_message_ids`, an archived message its `message_ids`.
At k, recall returns up to k memories and up to k archived messages (`Context.recall.k` and
`Context.recall.episodes` set to k; the similarity floor of episodes stays the default), so k
counts recalled items per channel, not turns: the numbers are not comparable with engine mode's
turn ranking. Both speakers are people, so `speaker_b`'s turns, replies to engram, are recalled
like the user's (`recall_replies=k`, the user's relevance bar). `*_at_default` is what a turn
recalls with the default `Context` (5 memories, 5 archived messages of which at most 1 reply).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from engram.evals.locomo.engine import (
    CATEGORY_NAMES,
    DEFAULT_KS,
    RETRIEVAL_CATEGORIES,
    Conversation,
    Question,
    Turn,
    load_locomo,
    question_metrics,
    sessions,
    turn_message,
)
from engram.evals.sandbox import Sandbox, sandbox
from engram.evals.scripted import ScriptedChatModel
from engram.graph import Context, Recall
from engram.nodes.start import recall
from engram.stores.memory.long_term import LongTermMemory

logger = logging.getLogger(__name__)

RECALL_TIMEOUT_MS = 60_000
"""Recall timeout for questions: they measure what is recalled, not how fast."""


@dataclass(frozen=True)
class Step:
    """One graph run of a session: input messages, and the scripted reply it gets (if any)."""

    messages: list[BaseMessage]
    reply: AIMessage | None
    """None for the session-end run."""


@dataclass(frozen=True)
class Coverage:
    """The evidence turns one recall covered."""

    covered: frozenset[str]
    memories: int
    episodes: int


def session_steps(conversation: Conversation, turns: Sequence[Turn]) -> list[Step]:
    """A session's turns as graph runs (see the module docstring); the last run ends the session."""
    return message_steps([turn_message(conversation, turn) for turn in turns])


def message_steps(messages: Sequence[BaseMessage]) -> list[Step]:
    """A session's messages as graph runs: each AI message is the scripted reply to the messages
    before it (an AI message with no user message before it joins the next input), and a last
    run ends the session with what is left."""
    steps: list[Step] = []
    pending: list[BaseMessage] = []
    for message in messages:
        if isinstance(message, AIMessage) and any(isinstance(m, HumanMessage) for m in pending):
            steps.append(Step(pending, message))
            pending = []
        else:
            pending.append(message)
    steps.append(Step(pending, None))
    return steps


async def arun_graph(
    path: str | Path,
    *,
    conversations: Iterable[str] | None = None,
    embeddings: Embeddings | None = None,
    memory_model: BaseChatModel | None = None,
    ks: Sequence[int] = DEFAULT_KS,
    on_turn: Callable[[], None] | None = None,
    on_conversation: Callable[[str, float], None] | None = None,
) -> dict[str, Any]:
    """Ingest each conversation through the graph, then score the recall path on its questions.

    Args:
        path: LoCoMo JSON file.
        conversations: Sample ids to use (default: all in the file).
        embeddings: The store's embedder (default: `LocalEmbeddings`, all-MiniLM-L6-v2).
        memory_model: Summaries and extraction; None: the offline built-ins.
        ks: Recall depths to report.
        on_turn: Called after every LoCoMo turn is ingested (progress).
        on_conversation: Called with the sample id and its seconds when a conversation is done.

    Returns:
        `{"mode": "graph", "metrics": {"any_at_5": ..., "by_category": {...}}, "questions": {...},
        "conversations": [{"id", "turns", "memories", "episodes", "ingest_seconds",
        "question_seconds"}, ...]}`.
    """
    if embeddings is None:
        from engram.stores.embeddings import LocalEmbeddings

        embeddings = LocalEmbeddings()
    loaded = load_locomo(path, conversations)
    rows: list[tuple[Question, dict[str, Coverage]]] = []
    stats = []
    for conversation in loaded:
        began = time.perf_counter()
        plan = [session_steps(conversation, turns) for turns in sessions(conversation)]
        replies = [step.reply for steps in plan for step in steps if step.reply is not None]
        async with sandbox(
            ScriptedChatModel(replies=replies), embeddings=embeddings, memory_model=memory_model
        ) as box:
            await ingest(
                box, plan, user_id=conversation_user(conversation),
                thread_prefix=conversation.sample_id, on_turn=on_turn,
            )
            ingested = time.perf_counter()
            for question in conversation.questions:
                rows.append((question, await _recall_coverage(box, conversation, question, ks)))
            stats.append(
                {
                    "id": conversation.sample_id,
                    "turns": len(conversation.turns),
                    "questions": len(conversation.questions),
                    **await store_counts(box, conversation_user(conversation)),
                    "ingest_seconds": round(ingested - began, 1),
                    "question_seconds": round(time.perf_counter() - ingested, 1),
                }
            )
        if on_conversation is not None:
            on_conversation(conversation.sample_id, time.perf_counter() - began)
    return {"mode": "graph", **_graph_report(rows, loaded, ks), "conversations": stats}


def _graph_report(
    rows: list[tuple[Question, dict[str, Coverage]]], loaded: Sequence[Any], ks: Sequence[int]
) -> dict[str, Any]:
    """The metrics over every question and by category, and how many questions were scored."""
    labels = [*(str(k) for k in ks), "default"]
    return {
        "metrics": {
            **coverage_means(rows, labels),
            "by_category": {
                CATEGORY_NAMES[c]: coverage_means([r for r in rows if r[0].category == c], labels)
                for c in RETRIEVAL_CATEGORIES
                if any(q.category == c for q, _ in rows)
            },
        },
        "questions": {
            "total": len(rows),
            "by_category": {
                CATEGORY_NAMES[c]: sum(q.category == c for q, _ in rows)
                for c in RETRIEVAL_CATEGORIES
            },
            "skipped_without_evidence": sum(c.skipped_questions for c in loaded),
            "evidence_ids_dropped": sum(len(c.dropped_evidence) for c in loaded),
        },
    }


def coverage_means(
    rows: Sequence[tuple[Question, dict[str, Coverage]]], labels: Sequence[str]
) -> dict[str, float]:
    """Mean any / all / frac of each question's evidence covered, per recall depth label."""
    out: dict[str, float] = {}
    for label in labels:
        scores = [
            question_metrics(sorted(cov[label].covered), q.evidence, len(cov[label].covered))
            for q, cov in rows
        ]
        for name in ("any", "all", "frac"):
            values = [s[name] for s in scores]
            out[f"{name}_at_{label}"] = round(sum(values) / len(values), 4) if values else 0.0
    return out


async def ingest(
    box: Sandbox,
    plan: Sequence[Sequence[Step]],
    *,
    user_id: str,
    thread_prefix: str,
    on_turn: Callable[[], None] | None = None,
    callbacks: Sequence[BaseCallbackHandler] = (),
) -> list[float]:
    """Replay sessions through the sandbox's graph, one thread each (`<thread_prefix>-session-N`),
    memory work inline so that each run has written its memories when it returns.

    Args:
        box: The sandbox whose graph answers with the scripted replies of `plan`.
        plan: Each session's graph runs (`session_steps`, `message_steps`), in order.
        user_id: Whose memories the sessions write.
        thread_prefix: Names the sessions' threads.
        on_turn: Called once per message ingested (progress).
        callbacks: LangChain callback handlers for every run (e.g. a `RunRecorder`).

    Returns:
        The milliseconds each graph run took, in order.
    """
    ctx = Context(user_id=user_id, memory_work="inline")  # deterministic replay
    took: list[float] = []
    for number, steps in enumerate(plan, start=1):
        config: dict[str, Any] = {
            "configurable": {"thread_id": f"{thread_prefix}-session-{number}"},
            "callbacks": list(callbacks),
        }
        for step in steps:
            payload: dict[str, Any] = {"messages": step.messages}
            if step.reply is None:
                payload["end_session"] = True
            began = time.perf_counter()
            await box.graph.ainvoke(payload, config, context=ctx)
            took.append((time.perf_counter() - began) * 1000.0)
            if on_turn is not None:
                for _ in range(len(step.messages) + (step.reply is not None)):
                    on_turn()
    return took


async def _recall_coverage(
    box: Sandbox, conversation: Conversation, question: Question, ks: Sequence[int]
) -> dict[str, Coverage]:
    known = {turn.id for turn in conversation.turns}
    out: dict[str, Coverage] = {}
    for k in ks:
        ctx = Context(
            user_id=conversation_user(conversation),
            recall=Recall(
                k=k,
                episodes=k,
                replies=k,
                reply_min_relevance=Recall().episode_min_relevance,
                timeout_ms=RECALL_TIMEOUT_MS,
            ),
        )
        memories, episodes = await recall(box.store, ctx, question.text)
        out[str(k)] = _coverage(memories, episodes, known)
    default = Context(
        user_id=conversation_user(conversation), recall=Recall(timeout_ms=RECALL_TIMEOUT_MS)
    )
    memories, episodes = await recall(box.store, default, question.text)
    out["default"] = _coverage(memories, episodes, known)
    return out


def _coverage(memories: Sequence[Any], episodes: Sequence[Any], known: set[str]) -> Coverage:
    ids: set[str] = set()
    for scored in memories:
        ids.update(scored.memory.source_message_ids)
    for item in episodes:
        ids.update(item.value.get("message_ids") or ())
    return Coverage(frozenset(ids & known), len(memories), len(episodes))


async def store_counts(box: Sandbox, user_id: str) -> dict[str, int]:
    """How many memories (superseded ones included) and archived messages the user has."""
    ltm = LongTermMemory(box.store)
    memories = await ltm.alist(user_id, include_superseded=True, limit=100_000)
    episodes = await box.store.asearch(LongTermMemory.episode_namespace(user_id), limit=100_000)
    return {"memories": len(memories), "episodes": len(episodes)}


def conversation_user(conversation: Conversation) -> str:
    """The user whose threads a conversation's sessions are (its sample id, dots replaced:
    namespace labels cannot hold them)."""
    return conversation.sample_id.replace(".", "-")
