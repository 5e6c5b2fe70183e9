"""The long-term write policy and recall ranking, as pure steps over store operations.

Every function here is a generator that yields a batch of store operations (`GetOp`, `SearchOp`,
`PutOp`) and receives their results. `LongTermMemory` drives it with `store.batch` (sync) or
`await store.abatch` (async): the logic exists once and only the I/O line differs (STYLE.md).
Only the `BaseStore` op contract is used, so any store works (InMemoryStore, ChromaStore, ...).

Exact duplicates are found through a registry of normalised text hashes under
`("memory_hashes", <user_id>)` (key: hash, value: `{"memory_id": ...}`, not indexed): a get by
key works the same on every store, while filtering on a list field does not.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from langgraph.store.base import GetOp, Op, PutOp, Result, SearchItem, SearchOp

from engram.stores.fusion import DEFAULT_LEXICAL_WEIGHT, FusionMethod
from engram.stores.hybrid import HybridHit, HybridSearchOp
from engram.stores.memory_types import (
    Memory,
    MemoryCandidate,
    ScoredMemory,
    ScoreWeights,
    WriteResult,
    combined_score,
    content_hash,
    merge_content,
    normalize_text,
    parse_time,
    recency,
)
from engram.stores.secrets import redact

T = TypeVar("T")
Steps = Generator[list[Op], list[Result], T]

INDEX_FIELDS = ["content"]
"""What is embedded for a memory: its content only."""
MAX_SOURCE_IDS = 100
"""Provenance kept per memory: the most recent source message ids."""


@dataclass(frozen=True)
class PolicySettings:
    """Thresholds of the write policy (DESIGN "Defaults")."""

    duplicate_threshold: float = 0.9
    min_importance: float = 0.5
    merge_pool: int = 3
    """How many similar memories of the category step 4 looks at."""


@dataclass(frozen=True)
class RecallSettings:
    """How recall ranks (DESIGN "Defaults": combined score, half-life 30 days)."""

    weights: ScoreWeights = ScoreWeights()
    half_life_days: float = 30.0
    min_similarity: float = 0.0
    pool_factor: int = 3
    """Candidates fetched from the store per result before re-ranking (seed 002: 3 × k), on a
    store without hybrid search."""
    hybrid: bool = False
    """The store answers `HybridSearchOp`: lexical and dense candidates are fused."""
    fusion: FusionMethod = "relative"
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT
    depth: int = 50
    """Candidates per channel of a hybrid search."""


def status_filter(*, include_superseded: bool, include_forgotten: bool) -> dict[str, Any]:
    """The store filter that keeps current and/or non-forgotten memories."""
    flt: dict[str, Any] = {}
    if not include_superseded:
        flt["current"] = True
    if not include_forgotten:
        flt["forgotten"] = False
    return flt


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
) -> Steps[list[ScoredMemory]]:
    """Recall: candidates matching the query (both channels fused when the store can), re-ranked
    by the combined score, then touched."""
    if k <= 0:
        return []
    flt = status_filter(include_superseded=include_superseded, include_forgotten=include_forgotten)
    filters = [{**flt, "category": c} for c in categories] if categories else [flt]
    matches = yield from _match_steps(namespace, query, filters, max(k * settings.pool_factor, k),
                                      settings)
    scored = []
    for item, similarity, relevance in matches:
        memory = Memory.from_item(item)
        if similarity < settings.min_similarity:
            continue
        rec = recency(_last_used(memory), now, settings.half_life_days)
        score = combined_score(relevance, memory.importance, rec, settings.weights)
        scored.append(ScoredMemory(memory, score, similarity, rec, relevance))
    scored.sort(key=lambda s: (s.score, s.memory.updated_at), reverse=True)
    top = scored[:k]
    if touch and top:
        touched = yield from touch_steps(namespace, [s.memory for s in top], now=now)
        top = [replace(s, memory=m) for s, m in zip(top, touched, strict=True)]
    return top


def touch_steps(
    namespace: tuple[str, ...], memories: list[Memory], *, now: datetime
) -> Steps[list[Memory]]:
    """Count one recall of each memory: `access_count` + 1, `last_accessed` = now."""
    stamp = now.isoformat()
    touched = [
        m.model_copy(update={"access_count": m.access_count + 1, "last_accessed": stamp})
        for m in memories
    ]
    if touched:
        yield [_put(namespace, m) for m in touched]
    return touched


def episode_search_steps(
    namespace: tuple[str, ...],
    query: str,
    k: int,
    *,
    min_similarity: float,
    settings: RecallSettings,
) -> Steps[list[SearchItem]]:
    """Archived messages best matching `query` (both channels fused when the store can), each at
    least `min_similarity` similar; their `score` is the fused relevance."""
    if k <= 0 or not query.strip():
        return []
    matches = yield from _match_steps(namespace, query, [{}], k * settings.pool_factor, settings)
    kept = [(item, relevance) for item, similarity, relevance in matches
            if similarity >= min_similarity]
    return [
        SearchItem(item.namespace, item.key, item.value, item.created_at, item.updated_at, relevance)
        for item, relevance in kept[:k]
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
            HybridSearchOp(namespace, query, f or None, pool, settings.depth, settings.fusion,
                           settings.lexical_weight)
            for f in filters
        ]
        hits: dict[str, HybridHit] = {}
        for hit in (h for found in results for h in found):
            if hit.item.key not in hits or hit.relevance > hits[hit.item.key].relevance:
                hits[hit.item.key] = hit
        ranked = sorted(hits.values(), key=lambda h: h.relevance, reverse=True)
        return [(h.item, h.similarity, h.relevance) for h in ranked]
    results = yield [SearchOp(namespace, f or None, limit=pool, query=query or None) for f in filters]
    best: dict[str, SearchItem] = {}
    for item in (i for found in results for i in found):
        if item.key not in best or (item.score or 0.0) > (best[item.key].score or 0.0):
            best[item.key] = item
    ranked = sorted(best.values(), key=lambda i: i.score or 0.0, reverse=True)
    return [(item, float(item.score or 0.0), float(item.score or 0.0)) for item in ranked]


def upsert_steps(
    namespace: tuple[str, ...],
    hash_namespace: tuple[str, ...],
    candidate: MemoryCandidate,
    *,
    thread_id: str | None,
    message_ids: list[str],
    now: str,
    settings: PolicySettings,
) -> Steps[WriteResult]:
    """DESIGN's write policy for one candidate: redact, duplicate, supersede, merge, add."""
    # 1. secrets never reach the store
    redacted = redact(candidate.content)
    if redacted.only_secret or not redacted.text.strip():
        return WriteResult("dropped", reason="the candidate was only a secret")
    content = redacted.text.strip()
    structured = _redact_values(candidate.structured_data)
    importance = candidate.effective_importance()
    if importance < settings.min_importance:
        return WriteResult("dropped", reason=f"importance {importance} < {settings.min_importance}")
    sources = list(candidate.message_ids or message_ids)
    digest = content_hash(content)

    # 2. exact duplicate (or a replay of messages already written)
    (record,) = yield [GetOp(hash_namespace, digest)]
    if record is not None:
        (item,) = yield [GetOp(namespace, record.value["memory_id"])]
        if item is not None:
            existing = Memory.from_item(item)
            if sources and set(sources) <= set(existing.source_message_ids):
                return WriteResult("unchanged", existing, reason="already written from these messages")
            if existing.current:
                updated = _absorb(existing, importance, candidate.confidence, sources, now)
                if updated == existing:
                    return WriteResult("unchanged", existing, reason="exact duplicate")
                yield [_put(namespace, updated)]
                return WriteResult("duplicate", updated, reason="exact duplicate")

    new_fields: dict[str, Any] = {
        "confidence": candidate.confidence,
        "source_thread_id": thread_id,
        "source_message_ids": sources[-MAX_SOURCE_IDS:],
        "key": candidate.key,
        "structured_data": structured,
    }

    # 3. same key, different value: supersede (the old one stays, with valid_until);
    #    the same value, or a near-identical text, confirms the memory instead
    if candidate.key:
        (found,) = yield [
            SearchOp(namespace, {"key": candidate.key, "current": True}, limit=50, query=content)
        ]
        olds = [Memory.from_item(i) for i in found]
        same = [
            old
            for old, item in zip(olds, found)
            if _same_value(old, content, structured)
            or (item.score is not None and item.score >= settings.duplicate_threshold)
        ]
        if same:
            return (yield from _merge_into(namespace, hash_namespace, same[0], content, digest,
                                           importance, candidate, sources, structured, now))
        if olds:
            new = Memory.new(content, candidate.category, importance, now=now,
                             supersedes=[o.id for o in olds], **new_fields)
            replaced = [
                o.model_copy(update={"valid_until": now, "superseded_by": new.id, "updated_at": now})
                for o in olds
            ]
            yield [*(_put(namespace, o) for o in replaced), _put(namespace, new),
                   _hash_put(hash_namespace, digest, new.id)]
            return WriteResult("superseded", new, tuple(replaced), reason=f"new value for {candidate.key}")

    # 4. near duplicate in the same category: merge
    flt = {"category": candidate.category, "current": True, "forgotten": False}
    (similar,) = yield [SearchOp(namespace, flt, limit=settings.merge_pool, query=content)]
    for item in similar:
        if item.score is None or item.score < settings.duplicate_threshold:
            continue
        existing = Memory.from_item(item)
        if existing.key and candidate.key and existing.key != candidate.key:
            continue
        return (yield from _merge_into(namespace, hash_namespace, existing, content, digest,
                                       importance, candidate, sources, structured, now))

    # 5. add
    new = Memory.new(content, candidate.category, importance, now=now, **new_fields)
    yield [_put(namespace, new), _hash_put(hash_namespace, digest, new.id)]
    return WriteResult("created", new)


def get_steps(namespace: tuple[str, ...], memory_id: str) -> Steps[Memory | None]:
    """One memory by id, or None."""
    (item,) = yield [GetOp(namespace, memory_id)]
    return Memory.from_item(item) if item is not None else None


def list_steps(
    namespace: tuple[str, ...],
    *,
    categories: Iterable[str] | None,
    include_superseded: bool,
    include_forgotten: bool,
    limit: int,
    offset: int,
) -> Steps[list[Memory]]:
    """Memories filtered by status and category, most recently updated first.

    Which `offset + limit` items a plain search returns is the store's choice (ChromaStore:
    the most recently updated); this page is then sorted by the memories' `updated_at`.
    """
    flt = status_filter(include_superseded=include_superseded, include_forgotten=include_forgotten)
    filters = [{**flt, "category": c} for c in categories] if categories else [flt]
    results = yield [SearchOp(namespace, f or None, limit=offset + limit) for f in filters]
    found = [Memory.from_item(i) for r in results for i in r]
    found.sort(key=lambda m: parse_time(m.updated_at), reverse=True)
    return found[offset : offset + limit]


def set_forgotten_steps(
    namespace: tuple[str, ...], memory_id: str, *, forgotten: bool, now: str
) -> Steps[Memory | None]:
    """Soft-delete (or restore) a memory; None if there is no such memory."""
    memory = yield from get_steps(namespace, memory_id)
    if memory is None:
        return None
    if memory.forgotten != forgotten:
        memory = memory.model_copy(update={"forgotten": forgotten, "updated_at": now})
        yield [_put(namespace, memory)]
    return memory


def delete_steps(
    namespace: tuple[str, ...], hash_namespace: tuple[str, ...], memory_id: str
) -> Steps[bool]:
    """Delete a memory for good, with its entries in the hash registry; False if absent."""
    memory = yield from get_steps(namespace, memory_id)
    if memory is None:
        return False
    records = yield [GetOp(hash_namespace, h) for h in memory.content_hashes]
    ops: list[Op] = [
        PutOp(hash_namespace, r.key, None)
        for r in records
        if r is not None and r.value.get("memory_id") == memory_id
    ]
    yield [*ops, PutOp(namespace, memory_id, None)]
    return True


def _merge_into(
    namespace: tuple[str, ...],
    hash_namespace: tuple[str, ...],
    existing: Memory,
    content: str,
    digest: str,
    importance: float,
    candidate: MemoryCandidate,
    sources: list[str],
    structured: dict[str, Any] | None,
    now: str,
) -> Steps[WriteResult]:
    merged_text = merge_content(existing.content, content)
    merged = _absorb(existing, importance, candidate.confidence, sources, now).model_copy(
        update={
            "content": merged_text,
            "key": existing.key or candidate.key,
            "structured_data": existing.structured_data or structured,
            "content_hashes": _extend(existing.content_hashes, [digest, content_hash(merged_text)]),
            "updated_at": now,
        }
    )
    yield [
        _put(namespace, merged),
        *(_hash_put(hash_namespace, h, merged.id) for h in {digest, content_hash(merged_text)}),
    ]
    return WriteResult("merged", merged, reason="near duplicate")


def _absorb(
    memory: Memory, importance: float, confidence: float, sources: list[str], now: str
) -> Memory:
    """A memory confirmed again: importance = max, provenance extended, un-forgotten."""
    ids = _extend(memory.source_message_ids, sources)[-MAX_SOURCE_IDS:]
    changes = {
        "importance": max(memory.importance, importance),
        "confidence": max(memory.confidence, confidence),
        "source_message_ids": ids,
        "forgotten": False,
    }
    if all(getattr(memory, k) == v for k, v in changes.items()):
        return memory
    return memory.model_copy(update={**changes, "updated_at": now})


def _same_value(memory: Memory, content: str, structured: dict[str, Any] | None) -> bool:
    """Whether a keyed memory already holds this value (then it is confirmed, not superseded)."""
    old = (memory.structured_data or {}).get("value")
    new = (structured or {}).get("value")
    if old is not None and new is not None:
        return normalize_text(str(old)) == normalize_text(str(new))
    return normalize_text(memory.content) == normalize_text(content)


def _redact_values(data: dict[str, Any] | None) -> dict[str, Any] | None:
    if data is None:
        return None
    return {k: _redact_any(v) for k, v in data.items()}


def _redact_any(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value).text
    if isinstance(value, dict):
        return {k: _redact_any(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redact_any(v) for v in value]
    return value


def _extend(ids: list[str], more: Iterable[str]) -> list[str]:
    out = list(ids)
    out.extend(i for i in dict.fromkeys(more) if i not in ids)
    return out


def _put(namespace: tuple[str, ...], memory: Memory) -> PutOp:
    return PutOp(namespace, memory.id, memory.to_value(), index=INDEX_FIELDS)


def _hash_put(hash_namespace: tuple[str, ...], digest: str, memory_id: str) -> PutOp:
    return PutOp(hash_namespace, digest, {"memory_id": memory_id}, index=False)


def _last_used(memory: Memory) -> datetime:
    """When the memory was last updated or recalled, whichever is later."""
    updated = parse_time(memory.updated_at)
    if memory.last_accessed is None:
        return updated
    return max(updated, parse_time(memory.last_accessed))
