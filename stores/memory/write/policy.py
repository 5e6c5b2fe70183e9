"""The long-term write policy and recall ranking, as pure steps over store operations.

Every function here is a generator that yields a batch of store operations (`GetOp`, `SearchOp`,
`PutOp`) and receives their results. `LongTermMemory` drives it with `store.batch` (sync) or
`await store.abatch` (async): the logic exists once and only the I/O line differs.
Only the `BaseStore` op contract is used, so any store works (InMemoryStore, ChromaStore, ...).

The write policy (`upsert_steps`) runs one function per step, in order: each writes and says what
it did (a `WriteResult`), or passes the candidate on to the next. With a merge decider
(`engram.stores.memory.write.decision`), its step (`_ask_decider`) may also yield a
`MergeQuestion` instead of operations; the driver answers it (`run_steps(..., answer=...)`) with
the decider's `MergeDecision` or the `MergeDecisionError` it raised.

Exact duplicates are found through a registry of normalised text hashes under
`("memory_hashes", <user_id>)` (key: hash, value: `{"memory_id": ...}`, not indexed): a get by
key works the same on every store, while filtering on a list field does not.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any
from uuid import NAMESPACE_URL, uuid5

from langgraph.store.base import GetOp, Op, PutOp, SearchOp

from engram.stores.lexical.index import topic_terms
from engram.stores.memory.clauses import untouched
from engram.stores.memory.procedures import counted_use, is_procedure, same_procedure
from engram.stores.memory.types import (
    MAX_CONTENT_CHARS,
    Category,
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
    """How many similar memories the merge (`_near_duplicate`) looks at (of the candidate's
    category), and a merge decider is asked about at most (`_ask_decider`, of any category)."""
    replace_floor: float = 0.4
    """Similarity from which a question the user answered with a change names a memory
    (`_stated_change`)."""
    decision_floor: float | None = None
    """Similarity from which a merge decider is asked about a candidate the rules would not
    merge (`engram.stores.memory.write.decision.DECISION_FLOOR`); None: there is no decider."""


@dataclass(frozen=True)
class Write:
    """One candidate on its way into the store, as every step of `upsert_steps` reads it."""

    namespace: tuple[str, ...]
    hash_namespace: tuple[str, ...]
    candidate: MemoryCandidate
    """The candidate, its `key` redacted (stored keys are: `memory_put`)."""
    content: str
    """The candidate's text, secrets redacted."""
    structured: dict[str, Any] | None
    """Its `structured_data`, secrets redacted."""
    importance: float
    sources: list[str]
    """The ids of the messages it came from."""
    digest: str
    """Its text's hash (`content_hash`): its key in the hash registry."""
    thread_id: str | None
    now: str
    new_id: str | None = None
    """The id a new memory of this text gets (`derived_id`; None: a random one, as a superseded
    or forgotten memory that said the same has that one). Set by `_exact_duplicate`."""

    def new_memory(self, supersedes: Sequence[Memory] = ()) -> Memory:
        """The candidate as a new memory, replacing `supersedes`."""
        return self._memory(self.candidate.category, self.candidate.key, supersedes)

    def replacement(self, old: Memory) -> Memory:
        """The candidate as the new memory that replaces `old`: it takes over `old`'s key when it
        has none, and an update-only candidate takes `old`'s category."""
        category = old.category if self.candidate.update_only else self.candidate.category
        return self._memory(category, self.candidate.key or old.key, [old])

    def _memory(self, category: Category, key: str | None, supersedes: Sequence[Memory]) -> Memory:
        return Memory.new(
            self.content,
            category,
            self.importance,
            now=self.now,
            id=self.new_id,
            supersedes=[old.id for old in supersedes],
            valid_from=self.candidate.said_at,
            confidence=self.candidate.confidence,
            source_thread_id=self.thread_id,
            source_message_ids=self.sources[-MAX_SOURCE_IDS:],
            key=key,
            structured_data=self.structured,
        )


@dataclass(frozen=True)
class _Verdict:
    """What the merge decider said of a candidate it let neither replace nor merge: the
    `WriteResult.decision` and `reason` of the add."""

    decision: str | None = None
    reason: str = ""


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
    """The write policy for one candidate, step by step:

    1. `_redacted`: redact secrets; drop a candidate that was only a secret or is below
       `min_importance`;
    2. `_exact_duplicate`: confirm the memory that says the same;
    3. `_same_key`: same `key`, different value: supersede the memory that has the key;
    4. `_new_procedure`: add a procedure no memory holds yet;
    5. `_stated_change`: supersede the memory that `MemoryCandidate.replaces` names;
    6. `_near_duplicate`: near duplicate in the same category: merge;
    7. `_ask_decider`: similar, but not for the rules to merge: ask the merge decider, when
       there is one;
    8. `_add`.

    An update-only candidate (`MemoryCandidate.update_only`) is written only where it retires
    the memory its `replaces` names (`_stated_change`) or the merge decider says it replaces one
    (`_ask_decider`), else dropped."""
    redacted = _redacted(
        namespace, hash_namespace, candidate, thread_id, message_ids, now, settings.min_importance
    )
    if isinstance(redacted, WriteResult):
        return redacted
    write = yield from _exact_duplicate(redacted)
    if isinstance(write, WriteResult):
        return write
    rules = (
        _same_key(write, settings),
        _new_procedure(write),
        _stated_change(write, settings),
        _near_duplicate(write, settings),
    )
    for rule in rules:
        result = yield from rule
        if result is not None:
            return result
    verdict = yield from _ask_decider(write, settings)
    if isinstance(verdict, WriteResult):
        return verdict
    return (yield from _add(write, verdict))


def _redacted(
    namespace: tuple[str, ...],
    hash_namespace: tuple[str, ...],
    candidate: MemoryCandidate,
    thread_id: str | None,
    message_ids: list[str],
    now: str,
    min_importance: float,
) -> Write | WriteResult:
    """1. The candidate with its secrets redacted (they never reach the store), or why it is
    dropped: it was only a secret, or is below `min_importance`."""
    # the redaction rules load on the first write, as in `memory_put`
    from engram.stores.secrets import redact, redact_data

    redacted = redact(candidate.content)
    if redacted.only_secret or not redacted.text.strip():
        return WriteResult("dropped", reason="the candidate was only a secret")
    content = redacted.text.strip()
    structured = redact_data(candidate.structured_data)
    if candidate.key:
        candidate = candidate.model_copy(update={"key": redact(candidate.key).text})
    importance = candidate.effective_importance()
    if importance < min_importance:
        return WriteResult("dropped", reason=f"importance {importance} < {min_importance}")
    return Write(
        namespace,
        hash_namespace,
        candidate,
        content,
        structured,
        importance,
        sources=list(candidate.message_ids or message_ids),
        digest=content_hash(content),
        thread_id=thread_id,
        now=now,
    )


def _exact_duplicate(write: Write) -> Steps[WriteResult | Write]:
    """2. An exact duplicate (or a replay of messages already written) confirms the memory that
    says the same. Otherwise `write` goes on with the id a new memory of its text gets: derived
    from the text, so that two processes that both find no duplicate write one memory, not two
    (a new id only when that one is taken: a superseded or forgotten memory said the same)."""
    derived = derived_id(write.namespace, write.digest)
    record, taken = yield [
        GetOp(write.hash_namespace, write.digest),
        GetOp(write.namespace, derived),
    ]
    write = replace(write, new_id=None if taken is not None else derived)
    if record is None:
        return write
    (item,) = yield [GetOp(write.namespace, record.value["memory_id"])]
    if item is None:
        return write
    confirmed = yield from _confirm(write, Memory.from_item(item))
    return write if confirmed is None else confirmed


def _confirm(write: Write, existing: Memory) -> Steps[WriteResult | None]:
    """The memory that says the same as the candidate, confirmed; None when it is not current or
    is a procedure for another task."""
    if write.sources and set(write.sources) <= set(existing.source_message_ids):
        return WriteResult("unchanged", existing, reason="already written from these messages")
    if existing.current and same_procedure(existing.structured_data, write.structured):
        return (yield from _merge_into(write, existing))
    both_procedures = is_procedure(existing.structured_data) and is_procedure(write.structured)
    if not existing.current or both_procedures:
        return None
    updated = _absorb(existing, write)
    if updated == existing:
        return WriteResult("unchanged", existing, reason="exact duplicate")
    yield [memory_put(write.namespace, updated)]
    return WriteResult("duplicate", updated, reason="exact duplicate")


def _same_key(write: Write, settings: PolicySettings) -> Steps[WriteResult | None]:
    """3. Same key, different value: supersede (the old memory stays, with `valid_until`); the
    same value, or a near-identical text, confirms the memory instead. A procedure's key is its
    tools: it confirms the one done for the same task (`same_procedure`) and supersedes none, as
    another task done with the same tools is a memory of its own."""
    key = write.candidate.key
    if not key:
        return None
    (found,) = yield [
        SearchOp(write.namespace, {"key": key, "current": True}, limit=50, query=write.content)
    ]
    found = Memory.only_readable(found)
    olds = [Memory.from_item(item) for item in found]
    scores = [item.score for item in found]
    same = _holding_the_value(write, olds, scores, settings.duplicate_threshold)
    if same is not None:
        return (yield from _merge_into(write, same))
    if olds and not is_procedure(write.structured):
        new = write.new_memory(supersedes=olds)
        return (yield from _supersede(write, olds, new, reason=f"new value for {key}"))
    return None


def _holding_the_value(
    write: Write, olds: list[Memory], scores: list[float | None], duplicate_threshold: float
) -> Memory | None:
    """Of the memories that have the candidate's key (best first, with their similarity), the
    first the candidate confirms: for a procedure, the one done for the same task; else one with
    the same value, or a text at least `duplicate_threshold` similar that it may merge with."""
    for old, score in zip(olds, scores):
        if is_procedure(write.structured):
            same = same_procedure(old.structured_data, write.structured)
        else:
            same = _same_value(old, write.content, write.structured) or (
                score is not None
                and score >= duplicate_threshold
                and _mergeable(old.content, write.content)
            )
        if same:
            return old
    return None


def _new_procedure(write: Write) -> Steps[WriteResult | None]:
    """4. A procedure no memory holds yet (another task, or other tools) is a memory of its own
    (`engram.stores.memory.procedures`): the steps after this one compare texts, not
    workflows."""
    if not is_procedure(write.structured):
        return None
    return (yield from _create(write, reason="a new procedure"))


def _stated_change(write: Write, settings: PolicySettings) -> Steps[WriteResult | None]:
    """5. A statement of what changed supersedes the memory it names: an answer that changes what
    the assistant asked about ("Still saving for the GPU?" - "scratch the gpu, ..."), or a clause
    that names what it retires ("we're ditching Docker Hub"). An update-only candidate takes
    that memory's category."""
    topic = write.candidate.replaces
    if not topic:
        return None
    flt = {"current": True, "forgotten": False}
    (named,) = yield [SearchOp(write.namespace, flt, limit=3, query=topic)]
    old = _named(named, topic, settings.replace_floor, write.sources)
    if old is None:
        return None
    new = write.replacement(old)
    return (yield from _supersede(write, [old], new, reason="the user said it changed"))


def _near_duplicate(write: Write, settings: PolicySettings) -> Steps[WriteResult | None]:
    """6. A near duplicate in the same category, stating no other number, name or identifier
    (`engram.stores.memory.write.specifics`) and short enough together, absorbs the candidate.
    An update-only candidate is never merged by this rule."""
    candidate = write.candidate
    if candidate.update_only:
        return None
    flt = {"category": candidate.category, "current": True, "forgotten": False}
    (similar,) = yield [
        SearchOp(write.namespace, flt, limit=settings.merge_pool, query=write.content)
    ]
    for item in Memory.only_readable(similar):
        if item.score is None or item.score < settings.duplicate_threshold:
            continue
        existing = Memory.from_item(item)
        if existing.key and candidate.key and existing.key != candidate.key:
            continue
        if _mergeable(existing.content, write.content):
            return (yield from _merge_into(write, existing))
    return None


def _ask_decider(write: Write, settings: PolicySettings) -> AskingSteps[WriteResult | _Verdict]:
    """7. Similar, but not for the rules to merge: a merge decider (when there is one) is asked
    about the most similar current memories of any category that share a topic term with the
    candidate, best first, until it names one the candidate updates (replace) or details
    (merge); a change the user states in words no rule key knows ("we dropped buildium, its
    turbotenant now") then still retires the old memory. Without a usable answer the rule stands
    (add), and the verdict says why. An update-only candidate takes the category of the memory
    it replaces, and is dropped when the decider names none (`_add`)."""
    if settings.decision_floor is None:
        return _Verdict()
    flt = {"current": True, "forgotten": False}
    (nearby,) = yield [
        SearchOp(write.namespace, flt, limit=settings.merge_pool, query=write.content)
    ]
    nearby = Memory.only_readable(nearby)
    verdict = _Verdict()
    for question in _questions(nearby, write.content, write.candidate.key, settings.decision_floor):
        answer: Answer = yield question
        problem = _answer_problem(answer, question)
        if problem is None and answer.action == "replace":
            return (yield from _replace_as_decided(write, question.existing))
        if write.candidate.update_only and isinstance(answer, MergeDecision):
            verdict = _Verdict("keep_both", "the merge decider found no memory it updates")
        elif problem is None and answer.action == "merge":
            return (yield from _merge_as_decided(write, question.existing, answer))
        elif problem is not None:  # a model that failed once is not asked again for this one
            kept = "not written" if write.candidate.update_only else "kept both"
            return _Verdict("failed", f"{problem}: {kept}")
        else:
            verdict = _Verdict("keep_both", "the merge decider kept both")
    return verdict


def _replace_as_decided(write: Write, existing: Memory) -> Steps[WriteResult]:
    """The candidate supersedes `existing`, as the merge decider said."""
    result = yield from _supersede(
        write,
        [existing],
        write.replacement(existing),
        reason="the merge decider: it replaces a similar memory",
    )
    return replace(result, decision="replace")


def _merge_as_decided(
    write: Write, existing: Memory, decision: MergeDecision
) -> Steps[WriteResult]:
    """`existing` absorbs the candidate, with the merge decider's merged text."""
    result = yield from _merge_into(write, existing, merged_text=_merged_text(decision))
    return replace(result, decision="merge", reason="the merge decider merged them")


def _add(write: Write, verdict: _Verdict) -> Steps[WriteResult]:
    """8. The candidate becomes a new memory; an update-only one is dropped."""
    if write.candidate.update_only:
        reason = verdict.reason or "an update of no similar memory"
        return WriteResult("dropped", reason=reason, decision=verdict.decision)
    return (yield from _create(write, reason=verdict.reason, decision=verdict.decision))


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
    write: Write, existing: Memory, merged_text: str | None = None
) -> Steps[WriteResult]:
    """`existing` absorbs the candidate; its text becomes `merged_text` (default:
    `merge_content`, which keeps the text that contains the other). A procedure that worked again
    for the same task takes the newer text and calls, its uses counted
    (`engram.stores.memory.procedures.counted_use`)."""
    data = existing.structured_data or write.structured
    if is_procedure(existing.structured_data) and is_procedure(write.structured):
        merged_text = write.content
        data = counted_use(existing.structured_data or {}, write.structured or {})
    merged_text = merged_text or merge_content(existing.content, write.content)
    digests = [write.digest, content_hash(merged_text)]
    merged = _absorb(existing, write).model_copy(
        update={
            "content": merged_text,
            "key": existing.key or write.candidate.key,
            "structured_data": data,
            "content_hashes": _extend(existing.content_hashes, digests),
            "updated_at": write.now,
        }
    )
    yield [
        memory_put(write.namespace, merged),
        *(hash_put(write.hash_namespace, h, merged.id) for h in set(digests)),
    ]
    return WriteResult("merged", merged, reason="near duplicate")


def _supersede(write: Write, olds: list[Memory], new: Memory, *, reason: str) -> Steps[WriteResult]:
    """Write `new` and close `olds` (`valid_until`, `superseded_by`): they stay as history. What
    the change does not touch of an old memory stays current as a memory of its own
    (`_rest_of`)."""
    now = write.now
    kept: dict[str, Memory] = {}
    for old in olds:
        rest = yield from _rest_of(write, old)
        if rest is not None:
            kept[old.id] = rest
    replaced = [
        o.model_copy(
            update={
                "valid_until": now,
                "superseded_by": new.id,
                "replaced_as": "changed",
                "updated_at": now,
                "kept_as": kept[o.id].id if o.id in kept else None,
            }
        )
        for o in olds
    ]
    yield [
        *(memory_put(write.namespace, o) for o in replaced),
        memory_put(write.namespace, new),
        hash_put(write.hash_namespace, write.digest, new.id),
        *(memory_put(write.namespace, k) for k in kept.values()),
        *(hash_put(write.hash_namespace, content_hash(k.content), k.id) for k in kept.values()),
    ]
    return WriteResult("superseded", new, tuple(replaced), reason=reason, kept=tuple(kept.values()))


def _rest_of(write: Write, old: Memory) -> Steps[Memory | None]:
    """The clauses of `old` that the change leaves (`engram.stores.memory.clauses`): those not
    holding `old`'s value, nor what the change says it replaces, as a new memory with `old`'s
    category, importance, date and sources; None when the change touches all of it, the new
    memory says the rest too, or a current memory already does."""
    if is_procedure(old.structured_data):
        return None
    values = [(old.structured_data or {}).get("value"), write.candidate.replaces]
    rest = untouched(old.content, [v for v in values if isinstance(v, str)])
    if rest is None or normalize_text(rest) in normalize_text(write.content):
        return None
    (holder,) = yield [GetOp(write.hash_namespace, content_hash(rest))]
    if holder is not None:
        (same,) = yield [GetOp(write.namespace, str(holder.value.get("memory_id")))]
        if same is not None and Memory.from_item(same).current:
            return None
    return Memory.new(
        rest,
        old.category,
        old.importance,
        now=write.now,
        valid_from=old.valid_from,
        confidence=old.confidence,
        source_thread_id=old.source_thread_id,
        source_message_ids=old.source_message_ids,
    )


def _create(write: Write, *, reason: str, decision: str | None = None) -> Steps[WriteResult]:
    """Write the candidate as a new memory."""
    new = write.new_memory()
    yield [memory_put(write.namespace, new), hash_put(write.hash_namespace, write.digest, new.id)]
    return WriteResult("created", new, reason=reason, decision=decision)


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
    `_stated_change`: all-MiniLM-L6-v2 scores unrelated Chinese sentences 0.4-0.66
    ("我青霉素过敏" and a hospital app's password: 0.47), and a small model asked about such a
    pair answers `update` for most of them, while an update names what it changes ("we dropped
    buildium ..."). A shared "我不" or "现在" is no topic: the 1.5B model retired "我不吃香菜 也不吃羊肉" for
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


def _absorb(memory: Memory, write: Write) -> Memory:
    """A memory confirmed again by `write`: importance = max, provenance extended, un-forgotten."""
    ids = _extend(memory.source_message_ids, write.sources)[-MAX_SOURCE_IDS:]
    changes = {
        "importance": max(memory.importance, write.importance),
        "confidence": max(memory.confidence, write.candidate.confidence),
        "source_message_ids": ids,
        "forgotten": False,
    }
    if all(getattr(memory, k) == v for k, v in changes.items()):
        return memory
    return memory.model_copy(update={**changes, "updated_at": write.now})


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
