"""The long-term write policy and recall ranking, as pure steps over store operations.

Every function here is a generator that yields a batch of store operations (`GetOp`, `SearchOp`,
`PutOp`) and receives their results. `LongTermMemory` drives it with `store.batch` (sync) or
`await store.abatch` (async): the logic exists once and only the I/O line differs.
Only the `BaseStore` op contract is used, so any store works (InMemoryStore, ChromaStore, ...).

With a merge decider (`engram.stores.memory.write.decision`), the write policy (`upsert_steps`)
may also yield a `MergeQuestion` instead of operations; the driver answers it
(`run_steps(..., answer=...)`) with the decider's `MergeDecision` or the `MergeDecisionError` it
raised.

Exact duplicates are found through a registry of normalised text hashes under
`("memory_hashes", <user_id>)` (key: hash, value: `{"memory_id": ...}`, not indexed): a get by
key works the same on every store, while filtering on a list field does not.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from langgraph.store.base import GetOp, Op, PutOp, SearchOp

from engram.stores.lexical.index import topic_terms
from engram.stores.memory.procedures import counted_use, is_procedure, same_procedure
from engram.stores.memory.types import (
    MAX_CONTENT_CHARS,
    Memory,
    MemoryCandidate,
    WriteResult,
    content_hash,
    hash_put,
    joined_content,
    memory_put,
    merge_content,
    normalize_text,
    parse_time,
)
from engram.stores.memory.write.decision import (
    Answer,
    MergeDecision,
    MergeQuestion,
    merge_problem,
)
from engram.stores.memory.write.specifics import conflict
from engram.stores.steps import AskingSteps, Steps

MAX_SOURCE_IDS = 100
"""Provenance kept per memory: the most recent source message ids."""
SUBJECT_TERMS = frozenset({"user", "用户"})
"""Terms every memory a model writes may share ("The user prefers ..."): not a shared topic."""


@dataclass(frozen=True)
class PolicySettings:
    """Thresholds of the write policy (`upsert_steps`)."""

    duplicate_threshold: float = 0.9
    min_importance: float = 0.5
    merge_pool: int = 3
    """How many similar memories the merge (step 4 of `upsert_steps`) looks at (of the candidate's
    category), and a merge decider is asked about at most (step 4b, of any category)."""
    replace_floor: float = 0.4
    """Similarity from which a question the user answered with a change names a memory (step
    3b of `upsert_steps`)."""
    decision_floor: float | None = None
    """Similarity from which a merge decider is asked about a candidate the rules would not
    merge (`engram.stores.memory.write.decision.DECISION_FLOOR`); None: there is no decider."""


def status_filter(*, include_superseded: bool, include_forgotten: bool) -> dict[str, Any]:
    """The store filter that keeps current and/or non-forgotten memories."""
    flt: dict[str, Any] = {}
    if not include_superseded:
        flt["current"] = True
    if not include_forgotten:
        flt["forgotten"] = False
    return flt


def upsert_steps(
    namespace: tuple[str, ...],
    hash_namespace: tuple[str, ...],
    candidate: MemoryCandidate,
    *,
    thread_id: str | None,
    message_ids: list[str],
    now: str,
    settings: PolicySettings,
) -> AskingSteps[WriteResult]:
    """The write policy for one candidate. Its steps, numbered as in the code below:

    1. redact secrets; drop a candidate that was only a secret or is below `min_importance`;
    2. exact duplicate: confirm the memory that says the same;
    3. same `key`, different value: supersede the memory that has the key;
    3b. a stated change: supersede the memory that `MemoryCandidate.replaces` names;
    4. near duplicate in the same category: merge;
    4b. similar, but not for the rules to merge: ask the merge decider, when there is one;
    5. add.

    An update-only candidate (`MemoryCandidate.update_only`) is written only where it retires
    the memory its `replaces` names (3b) or the merge decider says it replaces one (4b), else
    dropped."""
    # 1. secrets never reach the store (the rules load on the first write, as in `memory_put`)
    from engram.stores.secrets import redact, redact_data

    redacted = redact(candidate.content)
    if redacted.only_secret or not redacted.text.strip():
        return WriteResult("dropped", reason="the candidate was only a secret")
    content = redacted.text.strip()
    structured = redact_data(candidate.structured_data)
    if candidate.key:  # compared with stored keys, which are redacted (`memory_put`)
        candidate = candidate.model_copy(update={"key": redact(candidate.key).text})
    importance = candidate.effective_importance()
    if importance < settings.min_importance:
        return WriteResult("dropped", reason=f"importance {importance} < {settings.min_importance}")
    sources = list(candidate.message_ids or message_ids)
    digest = content_hash(content)

    # 2. exact duplicate (or a replay of messages already written). A new memory's id derives
    #    from its text, so two processes that both find no duplicate write one memory, not two
    #    (a new id only when that one is taken: a superseded or forgotten memory said the same)
    derived = derived_id(namespace, digest)
    record, taken = yield [GetOp(hash_namespace, digest), GetOp(namespace, derived)]
    new_id = None if taken is not None else derived
    if record is not None:
        (item,) = yield [GetOp(namespace, record.value["memory_id"])]
        if item is not None:
            existing = Memory.from_item(item)
            if sources and set(sources) <= set(existing.source_message_ids):
                return WriteResult("unchanged", existing, reason="already written from these messages")
            if existing.current and same_procedure(existing.structured_data, structured):
                return (yield from _merge_into(namespace, hash_namespace, existing, content, digest,
                                               importance, candidate, sources, structured, now))
            both_procedures = is_procedure(existing.structured_data) and is_procedure(structured)
            if existing.current and not both_procedures:
                updated = _absorb(existing, importance, candidate.confidence, sources, now)
                if updated == existing:
                    return WriteResult("unchanged", existing, reason="exact duplicate")
                yield [memory_put(namespace, updated)]
                return WriteResult("duplicate", updated, reason="exact duplicate")

    new_fields: dict[str, Any] = {
        "valid_from": candidate.said_at,
        "confidence": candidate.confidence,
        "source_thread_id": thread_id,
        "source_message_ids": sources[-MAX_SOURCE_IDS:],
        "key": candidate.key,
        "structured_data": structured,
    }

    # 3. same key, different value: supersede (the old one stays, with valid_until);
    #    the same value, or a near-identical text, confirms the memory instead. A procedure's key
    #    is its tools: it confirms the one done for the same task (`same_procedure`) and
    #    supersedes none, as another task done with the same tools is a memory of its own
    if candidate.key:
        (found,) = yield [
            SearchOp(namespace, {"key": candidate.key, "current": True}, limit=50, query=content)
        ]
        found = Memory.only_readable(found)
        olds = [Memory.from_item(i) for i in found]
        if is_procedure(structured):
            same = [old for old in olds if same_procedure(old.structured_data, structured)]
        else:
            same = [
                old
                for old, item in zip(olds, found)
                if _same_value(old, content, structured)
                or (
                    item.score is not None
                    and item.score >= settings.duplicate_threshold
                    and _mergeable(old.content, content)
                )
            ]
        if same:
            return (yield from _merge_into(namespace, hash_namespace, same[0], content, digest,
                                           importance, candidate, sources, structured, now))
        if olds and not is_procedure(structured):
            new = Memory.new(content, candidate.category, importance, now=now, id=new_id,
                             supersedes=[o.id for o in olds], **new_fields)
            return (yield from _supersede(namespace, hash_namespace, olds, new, digest, now,
                                          reason=f"new value for {candidate.key}"))

    # a procedure no memory holds yet (another task, or other tools) is a memory of its own
    #    (`engram.stores.memory.procedures`): the rules below compare texts, not workflows
    if is_procedure(structured):
        new = Memory.new(content, candidate.category, importance, now=now, id=new_id, **new_fields)
        yield [memory_put(namespace, new), hash_put(hash_namespace, digest, new.id)]
        return WriteResult("created", new, reason="a new procedure")

    # 3b. a statement of what changed: an answer that changes what the assistant asked about
    #     ("Still saving for the GPU?" - "scratch the gpu, ..."), or a clause that names what it
    #     retires ("we're ditching Docker Hub"): the memory it names is superseded; an update-only
    #     candidate takes that memory's category
    if candidate.replaces:
        flt = {"current": True, "forgotten": False}
        (named,) = yield [SearchOp(namespace, flt, limit=3, query=candidate.replaces)]
        old = _named(named, candidate.replaces, settings.replace_floor, sources)
        if old is not None:
            category = old.category if candidate.update_only else candidate.category
            new = Memory.new(content, category, importance, now=now, id=new_id,
                             supersedes=[old.id], **{**new_fields, "key": candidate.key or old.key})
            return (yield from _supersede(namespace, hash_namespace, [old], new, digest, now,
                                          reason="the user said it changed"))

    # 4. near duplicate in the same category, stating no other number, name or identifier
    #    (`engram.stores.memory.write.specifics`) and short enough together: merge
    flt = {"category": candidate.category, "current": True, "forgotten": False}
    similar = []
    if not candidate.update_only:
        (similar,) = yield [SearchOp(namespace, flt, limit=settings.merge_pool, query=content)]
        similar = Memory.only_readable(similar)
    for item in similar:
        if item.score is None or item.score < settings.duplicate_threshold:
            continue
        existing = Memory.from_item(item)
        if existing.key and candidate.key and existing.key != candidate.key:
            continue
        if not _mergeable(existing.content, content):
            continue
        return (yield from _merge_into(namespace, hash_namespace, existing, content, digest,
                                       importance, candidate, sources, structured, now))

    # 4b. similar, but not for the rules to merge: a merge decider (when there is one) is asked
    #     about the most similar current memories of any category that share a topic term with the
    #     candidate, best first, until it names one
    #     the candidate updates (replace) or details (merge); a change the user states in words no
    #     rule key knows ("we dropped buildium, its turbotenant now") then still retires the old
    #     memory. Without a usable answer the rule stands (add). An update-only candidate (which
    #     skipped step 4's rule merge) takes the category of the memory it replaces, and is
    #     dropped when the decider names none
    decision, reason = None, ""
    if settings.decision_floor is not None:
        flt = {"current": True, "forgotten": False}
        (nearby,) = yield [SearchOp(namespace, flt, limit=settings.merge_pool, query=content)]
        nearby = Memory.only_readable(nearby)
        for question in _questions(nearby, content, candidate.key, settings.decision_floor):
            answer: Answer = yield question
            existing = question.existing
            problem = _answer_problem(answer, question)
            if problem is None and answer.action == "replace":
                key = candidate.key or existing.key  # the replacement takes over the old one's key
                category = existing.category if candidate.update_only else candidate.category
                new = Memory.new(content, category, importance, now=now, id=new_id,
                                 supersedes=[existing.id], **{**new_fields, "key": key})
                result = yield from _supersede(
                    namespace, hash_namespace, [existing], new, digest, now,
                    reason="the merge decider: it replaces a similar memory",
                )
                return replace(result, decision="replace")
            if candidate.update_only and isinstance(answer, MergeDecision):
                decision, reason = "keep_both", "the merge decider found no memory it updates"
                continue
            if problem is None and answer.action == "merge":
                result = yield from _merge_into(namespace, hash_namespace, existing, content,
                                                digest, importance, candidate, sources, structured,
                                                now, merged_text=_merged_text(answer))
                return replace(result, decision="merge", reason="the merge decider merged them")
            if problem is not None:  # a model that failed once is not asked again for this one
                kept = "not written" if candidate.update_only else "kept both"
                decision, reason = "failed", f"{problem}: {kept}"
                break
            decision, reason = "keep_both", "the merge decider kept both"

    # 5. add
    if candidate.update_only:
        return WriteResult("dropped", reason=reason or "an update of no similar memory",
                           decision=decision)
    new = Memory.new(content, candidate.category, importance, now=now, id=new_id, **new_fields)
    yield [memory_put(namespace, new), hash_put(hash_namespace, digest, new.id)]
    return WriteResult("created", new, reason=reason, decision=decision)


def derived_id(namespace: tuple[str, ...], digest: str) -> str:
    """The id a new memory of this text gets in this namespace (unless another memory has it).

    Example:
        >>> derived_id(("memories", "alice"), "ab12") == derived_id(("memories", "alice"), "ab12")
        True
        >>> derived_id(("memories", "alice"), "ab12") == derived_id(("memories", "bob"), "ab12")
        False
    """
    return str(uuid5(NAMESPACE_URL, "engram/memory/" + json.dumps([*namespace, digest])))


def get_steps(namespace: tuple[str, ...], memory_id: str) -> Steps[Memory | None]:
    """One memory by id, or None (also for an item there that is not a memory)."""
    (item,) = yield [GetOp(namespace, memory_id)]
    found, _ = Memory.readable([item] if item is not None else [])
    return found[0] if found else None


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
    found, _ = Memory.readable(i for r in results for i in r)
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
        yield [memory_put(namespace, memory)]
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
    merged_text: str | None = None,
) -> Steps[WriteResult]:
    """`existing` absorbs the candidate; its text becomes `merged_text` (default:
    `merge_content`, which keeps the text that contains the other). A procedure that worked again
    for the same task takes the newer text and calls, its uses counted
    (`engram.stores.memory.procedures.counted_use`)."""
    data = existing.structured_data or structured
    if is_procedure(existing.structured_data) and is_procedure(structured):
        merged_text = content
        data = counted_use(existing.structured_data or {}, structured or {})
    merged_text = merged_text or merge_content(existing.content, content)
    merged = _absorb(existing, importance, candidate.confidence, sources, now).model_copy(
        update={
            "content": merged_text,
            "key": existing.key or candidate.key,
            "structured_data": data,
            "content_hashes": _extend(existing.content_hashes, [digest, content_hash(merged_text)]),
            "updated_at": now,
        }
    )
    yield [
        memory_put(namespace, merged),
        *(hash_put(hash_namespace, h, merged.id) for h in {digest, content_hash(merged_text)}),
    ]
    return WriteResult("merged", merged, reason="near duplicate")


def _supersede(
    namespace: tuple[str, ...],
    hash_namespace: tuple[str, ...],
    olds: list[Memory],
    new: Memory,
    digest: str,
    now: str,
    *,
    reason: str,
) -> Steps[WriteResult]:
    """Write `new` and close `olds` (`valid_until`, `superseded_by`): they stay as history."""
    replaced = [
        o.model_copy(update={"valid_until": now, "superseded_by": new.id, "updated_at": now})
        for o in olds
    ]
    yield [*(memory_put(namespace, o) for o in replaced), memory_put(namespace, new),
           hash_put(hash_namespace, digest, new.id)]
    return WriteResult("superseded", new, tuple(replaced), reason=reason)


def _named(found: list[Any], topic: str, floor: float, sources: list[str]) -> Memory | None:
    """The memory a change names: the most similar of `found`, at least `floor` similar to what
    the change names (`topic`) and sharing a topic term with it (`topic_terms`: stemmed words,
    Chinese bigrams without a function character), so that an embedding's vague likeness never
    retires a memory alone;
    never one taken from the same messages (another statement of the same message)."""
    terms = topic_terms(topic)
    for item in found:
        similar = item.score is not None and item.score >= floor
        sibling = set(sources) & set(item.value.get("source_message_ids") or ())
        if similar and not sibling and terms & topic_terms(item.value["content"]):
            return Memory.from_item(item)
    return None


def _questions(
    nearby: list[Any], content: str, key: str | None, floor: float
) -> list[MergeQuestion]:
    """The merge decider's questions, most similar memory first: one per memory at least `floor`
    similar that shares a topic term with the candidate (`topic_terms`: stemmed words, Chinese
    bigrams without a function character), with no other `key` (a keyed value is the rules' to
    supersede).

    The shared term is what keeps an embedding's vague likeness from retiring a memory, as in
    step 3b: all-MiniLM-L6-v2 scores unrelated Chinese sentences 0.4-0.66 ("我青霉素过敏" and
    a hospital app's password: 0.47), and a small model asked about such a pair answers `update`
    for most of them, while an update names what it changes ("we dropped buildium ..."). A
    shared "我不" or "现在" is no topic: the 1.5B model retired "我不吃香菜 也不吃羊肉" for
    "力量训练我不太会", and a weight for a bench press, on that alone."""
    terms = topic_terms(content) - SUBJECT_TERMS
    questions = []
    for item in sorted(nearby, key=lambda i: -(i.score or 0.0)):
        if item.score is None or item.score < floor:
            continue
        existing = Memory.from_item(item)
        if existing.key and key and existing.key != key:
            continue
        if not terms & topic_terms(existing.content):
            continue
        questions.append(MergeQuestion(existing, content, item.score))
    return questions


def _answer_problem(answer: Answer, question: MergeQuestion) -> str | None:
    """Why the decider's answer cannot be applied, or None."""
    if not isinstance(answer, MergeDecision):
        return f"no merge decision ({str(answer) or type(answer).__name__})"
    if answer.action != "merge":
        return None
    if not _merged_text(answer):
        return "the merge decider merged without a merged text"
    problem = merge_problem(_merged_text(answer), question.existing.content, question.incoming)
    return f"merge rejected: {problem}" if problem else None


def _merged_text(decision: MergeDecision) -> str:
    """The decider's merged text, secrets redacted (a model may copy one from elsewhere)."""
    from engram.stores.secrets import redact

    return redact(decision.merged_content or "").text.strip()


def _mergeable(existing: str, incoming: str) -> bool:
    """Whether two similar texts may become one memory: they state no different numbers, names
    or identifiers (`specifics.conflict`), and together stay within `MAX_CONTENT_CHARS`."""
    if conflict(existing, incoming):
        return False
    return len(joined_content(existing, incoming)) <= max(MAX_CONTENT_CHARS, len(existing))


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


def _extend(ids: list[str], more: Iterable[str]) -> list[str]:
    out = list(ids)
    out.extend(i for i in dict.fromkeys(more) if i not in ids)
    return out

