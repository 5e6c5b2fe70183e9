"""Recall ranking as pure steps over store operations.

Candidates come from a `HybridSearchOp` when the store answers one (BM25 and embeddings, fused),
else from a plain `SearchOp`. Two rankings share them:

- "relevance", what a person asks a search box for (the CLI, the API and page, MCP, the agent's
  search tool): by relevance, importance and recency only ordering memories about equally
  relevant (they add at most `TIE_BREAK`), and nothing below the floor: a memory is returned
  only when its embedding is at least `search_min_similarity` similar to the query's, or it
  holds at least half of the query's topic words (`topic_terms`): a query about nothing the user
  said returns nothing;
- "recall", what a turn needs (`start`): `0.6 relevance + 0.25 importance + 0.15 recency`, so
  that an important preference a task does not name ("recommend a restaurant" for "is
  vegetarian") still comes up.

Recency is counted from the later of the last update and the last recall. `LongTermMemory`
drives these steps with `store.batch` or `store.abatch`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal

from langgraph.store.base import GetOp, SearchItem, SearchOp

from engram.stores.lexical.fusion import DEFAULT_LEXICAL_WEIGHT, FusionMethod
from engram.stores.lexical.hybrid import HybridHit, HybridSearchOp
from engram.stores.lexical.index import topic_terms
from engram.stores.memory.types import (
    Memory,
    ScoredMemory,
    ScoreWeights,
    combined_score,
    memory_put,
    parse_time,
    recency,
)
from engram.stores.memory.write.policy import status_filter
from engram.stores.steps import Steps


@dataclass(frozen=True)
class RecallSettings:
    """How recall ranks."""

    weights: ScoreWeights = ScoreWeights()
    half_life_days: float = 30.0
    min_similarity: float = 0.0
    pool_factor: int = 3
    """Candidates fetched from the store per result before re-ranking by the combined score
    (3 × k, so an important or recent memory the search ranks a little lower can still rise); a
    hybrid search fuses its channels over `depth` candidates each first."""
    hybrid: bool = False
    """The store answers `HybridSearchOp`: lexical and dense candidates are fused."""
    fusion: FusionMethod = "relative"
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT
    depth: int = 50
    """Candidates per channel of a hybrid search."""
    search_min_similarity: float = 0.15
    """The floor of a "relevance" search: a memory at least this similar to the query (or
    holding half of its topic words) is returned. The scale is the embedder's: with
    all-MiniLM-L6-v2, an English query scores memories about other things mostly below 0.15
    (some up to 0.3), and the memory it asks for from about 0.18 ("which city does alice live
    in" for "I moved from Berlin to Lisbon") to 0.65; the floor is set low, so that such a
    memory is not lost, as `Recall.episode_min_similarity` is for archived messages."""


Ranking = Literal["relevance", "recall"]
"""How `search_steps` orders memories (see the module docstring)."""

TIE_BREAK = 0.05
"""The most importance and recency add to a memory's relevance in a "relevance" search."""


def search_steps(
    namespace: tuple[str, ...],
    query: str,
    k: int,
    *,
    categories: Iterable[str] | None,
    include_superseded: bool,
    include_forgotten: bool,
    touch: bool,
    now: datetime,
    settings: RecallSettings,
    ranking: Ranking = "recall",
) -> Steps[list[ScoredMemory]]:
    """Candidates matching the query (both channels fused when the store can), ranked as
    `ranking` says, then touched."""
    if k <= 0:
        return []
    flt = status_filter(include_superseded=include_superseded, include_forgotten=include_forgotten)
    filters = [{**flt, "category": c} for c in categories] if categories else [flt]
    matches = yield from _match_steps(
        namespace, query, filters, max(k * settings.pool_factor, k), settings
    )
    readable, _ = Memory.readable(item for item, _, _ in matches)
    by_id = {m.id: m for m in readable}
    scored = []
    asked = topic_terms(query) if ranking == "relevance" else set()
    for item, similarity, relevance in matches:
        memory = by_id.get(item.key)
        if memory is None or similarity < settings.min_similarity:
            continue
        if ranking == "relevance" and not _above_floor(memory, similarity, asked, settings):
            continue
        rec = recency(_last_used(memory), now, settings.half_life_days)
        if ranking == "relevance":
            score = relevance + TIE_BREAK * (0.6 * memory.importance + 0.4 * rec)
        else:
            score = combined_score(relevance, memory.importance, rec, settings.weights)
        scored.append(ScoredMemory(memory, score, similarity, rec, relevance))
    scored.sort(key=lambda s: (s.score, s.memory.updated_at), reverse=True)
    top = scored[:k]
    if touch and top:
        touched = yield from touch_steps(namespace, [s.memory.id for s in top], now=now)
        top = [replace(s, memory=touched[s.memory.id]) for s in top if s.memory.id in touched]
    return top


def _above_floor(
    memory: Memory, similarity: float, asked: set[str], settings: RecallSettings
) -> bool:
    """Whether a "relevance" search may return `memory`: similar enough, or holding at least
    half of the query's topic words."""
    if similarity >= settings.search_min_similarity:
        return True
    terms, text = topic_terms(memory.content), memory.content.casefold()
    held = sum(term in terms or term in text for term in asked)
    return bool(asked) and 2 * held >= len(asked)


def touch_steps(
    namespace: tuple[str, ...], memory_ids: Iterable[str], *, now: datetime
) -> Steps[dict[str, Memory]]:
    """Count one recall of each memory: `access_count` + 1, `last_accessed` = now.

    The memories are read again right before the write, so that a change made since they were
    recalled (a merge, a supersede) is kept. Returns the touched memories by id (unknown ids
    are skipped).
    """
    ids = list(dict.fromkeys(memory_ids))
    if not ids:
        return {}
    found = yield [GetOp(namespace, i) for i in ids]
    stamp = now.isoformat()
    touched = [
        m.model_copy(update={"access_count": m.access_count + 1, "last_accessed": stamp})
        for m in Memory.readable(item for item in found if item is not None)[0]
    ]
    if touched:
        yield [memory_put(namespace, m) for m in touched]
    return {m.id: m for m in touched}


def episode_search_steps(
    namespace: tuple[str, ...],
    query: str,
    k: int,
    *,
    min_similarity: float,
    settings: RecallSettings,
    min_relevance: float = 0.0,
    reply_min_relevance: float | None = None,
    max_replies: int | None = None,
) -> Steps[list[SearchItem]]:
    """Archived messages best matching `query` (both channels fused when the store can), each at
    least `min_similarity` similar and, when fused, `min_relevance` relevant; their `score` is
    the relevance (without fusion: the similarity, which `min_similarity` already bounds).

    Replies (what the assistant or a tool said, not the user) can have a bar of their own,
    `reply_min_relevance` (None: `min_relevance`), and a cap, `max_replies` (None: no cap): the
    user's messages hold what the user told, a reply mostly advice that takes many tokens."""
    if k <= 0 or not query.strip():
        return []
    pool = max(k * settings.pool_factor, settings.depth)  # room for the replies left out
    matches = yield from _match_steps(namespace, query, [{}], pool, settings)
    reply_bar = min_relevance if reply_min_relevance is None else reply_min_relevance
    kept: list[tuple[SearchItem, float]] = []
    replies = 0
    for item, similarity, relevance in matches:
        reply = item.value.get("role", "user") != "user"
        bar = reply_bar if reply else min_relevance
        if similarity < min_similarity or (settings.hybrid and relevance < bar):
            continue
        if reply and max_replies is not None and replies >= max_replies:
            continue
        replies += reply
        kept.append((item, relevance))
        if len(kept) == k:
            break
    return [
        SearchItem(
            item.namespace, item.key, item.value, item.created_at, item.updated_at, relevance
        )
        for item, relevance in kept
    ]


def _match_steps(
    namespace: tuple[str, ...],
    query: str,
    filters: list[dict[str, Any]],
    pool: int,
    settings: RecallSettings,
) -> Steps[list[tuple[SearchItem, float, float]]]:
    """(item, similarity, relevance) of the items matching any of `filters`, best match first.

    With a query and a hybrid store, relevance fuses the lexical and dense channels; otherwise
    it is the similarity (the store's score; 0 without a query).
    """
    if query and settings.hybrid:
        results = yield [
            HybridSearchOp(
                namespace,
                query,
                f or None,
                pool,
                settings.depth,
                settings.fusion,
                settings.lexical_weight,
            )
            for f in filters
        ]
        hits: dict[str, HybridHit] = {}
        for hit in (h for found in results for h in found):
            if hit.item.key not in hits or hit.relevance > hits[hit.item.key].relevance:
                hits[hit.item.key] = hit
        ranked = sorted(hits.values(), key=lambda h: h.relevance, reverse=True)
        return [(h.item, h.similarity, h.relevance) for h in ranked]
    results = yield [
        SearchOp(namespace, f or None, limit=pool, query=query or None) for f in filters
    ]
    best: dict[str, SearchItem] = {}
    for item in (i for found in results for i in found):
        if item.key not in best or (item.score or 0.0) > (best[item.key].score or 0.0):
            best[item.key] = item
    ranked = sorted(best.values(), key=lambda i: i.score or 0.0, reverse=True)
    return [(item, float(item.score or 0.0), float(item.score or 0.0)) for item in ranked]


def _last_used(memory: Memory) -> datetime:
    """When the memory was last updated or recalled, whichever is later."""
    updated = parse_time(memory.updated_at)
    if memory.last_accessed is None:
        return updated
    return max(updated, parse_time(memory.last_accessed))
