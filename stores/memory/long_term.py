"""`LongTermMemory`: a user's long-term memories in any LangGraph `BaseStore`, with their read/write policy.

Recall finds candidates through two channels when the store offers hybrid search (`ChromaStore`:
BM25 over its lexical index, and embeddings), fuses them (relative score fusion) and ranks
current, non-forgotten memories: a search by relevance, above a floor; a turn's recall by a
combined score (0.6 relevance + 0.25 importance + 0.15 recency, half-life 30 days, counted from
the last update or recall; `engram.stores.memory.recall`), and updates their access statistics. Archived messages (episodes, `("episodes", user_id)`) are recalled the same way. On
a store without hybrid search, relevance is the embedding similarity alone. Writes go
through the write policy (secret redaction, exact duplicate, supersede by `key`, merge by
similarity, add), are idempotent, and record provenance (source thread and message ids). With
a `merge_decider`, a candidate similar to a memory but not for the rules to merge is decided by
it: replace, merge or keep both (`engram.stores.memory.write.decision`). Text that is not valid Unicode
(a lone surrogate) is read with U+FFFD in its place.

The logic lives once, as pure steps in `engram.stores.memory.write.policy`; the async methods drive it
with `store.abatch` and the sync ones with `store.batch`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

from langgraph.store.base import BaseStore, SearchItem

from engram.stores.lexical.fusion import DEFAULT_LEXICAL_WEIGHT, FusionMethod
from engram.stores.lexical.hybrid import supports_hybrid
from engram.stores.memory.history import MAX_EARLIER, current_versions_steps
from engram.stores.memory.manage.restore import RestoreResult, delete_memory_steps, restore_steps
from engram.stores.memory.recall import (
    Ranking,
    RecallSettings,
    episode_search_steps,
    search_steps,
    touch_steps,
)
from engram.stores.memory.types import (
    CATEGORIES,
    DEFAULT_IMPORTANCE,
    Category,
    Memory,
    MemoryCandidate,
    ScoredMemory,
    ScoreWeights,
    WriteResult,
    combined_score,
    content_hash,
    utc_now,
)
from engram.stores.memory.users import apurge_store, purge_store
from engram.stores.memory.write.decision import (
    DECISION_FLOOR,
    MergeDecider,
    aanswer_with,
    answer_with,
)
from engram.stores.memory.write.policy import (
    PolicySettings,
    get_steps,
    list_steps,
    set_forgotten_steps,
    upsert_steps,
)
from engram.stores.namespaces import (
    EPISODE_NAMESPACE,
    HASH_NAMESPACE,
    MEMORY_NAMESPACE,
    episode_namespace,
    hash_namespace,
    memory_namespace,
)
from engram.stores.steps import AskingSteps, Steps, arun_held, arun_steps, run_held, run_steps
from engram.stores.text import valid_unicode


class LongTermMemory:
    """A user's long-term memories in a LangGraph store, with recall ranking and the write policy.

    Args:
        store: Any `BaseStore` with an index on `content` (`ChromaStore`, or `InMemoryStore`
            with `index={"dims": ..., "embed": ..., "fields": ["content"]}`).
        duplicate_threshold: Similarity at or above which a candidate merges into a memory of the
            same category.
        min_importance: Candidates below this importance are dropped.
        min_similarity: Recall ignores memories less similar than this to the query. The right
            floor depends on the embedder, as each scores similarity on its own scale; 0 keeps all.
        weights: Weights of the combined recall score.
        half_life_days: Half-life of the recency term.
        pool_factor: Candidates fetched per requested result before re-ranking by the
            combined score.
        fusion: How the lexical and dense channels are fused (`engram.stores.lexical.fusion`).
        lexical_weight: The lexical channel's share of the fused relevance.
        depth: Candidates taken from each channel of a hybrid search.
        clock: Returns the current time (timezone-aware); tests pass a fixed one.
        merge_decider: Decides replace / merge / keep both for a candidate and each of its most
            similar current memories (any category) at least `decision_floor` similar but not
            for the rules to merge, best first, until it replaces or merges one
            (`engram.nodes.model.merge_decision.make_merge_decider`); None: the rules alone.
        decision_floor: Similarity from which `merge_decider` is asked; the default suits
            all-MiniLM-L6-v2 (`engram.stores.memory.write.decision.DECISION_FLOOR`).

    Example:
        >>> from langgraph.store.memory import InMemoryStore
        >>> ltm = LongTermMemory(InMemoryStore())
        >>> c = MemoryCandidate(content="I prefer dark mode in every editor", category="preference")
        >>> [r.action for r in ltm.upsert("alice", [c], thread_id="t1", message_ids=["m1"])]
        ['created']
        >>> [r.action for r in ltm.upsert("alice", [c], thread_id="t1", message_ids=["m1"])]
        ['unchanged']
    """

    def __init__(
        self,
        store: BaseStore,
        *,
        duplicate_threshold: float = 0.9,
        min_importance: float = 0.5,
        min_similarity: float = 0.0,
        weights: ScoreWeights = ScoreWeights(),
        half_life_days: float = 30.0,
        pool_factor: int = 3,
        fusion: FusionMethod = "relative",
        lexical_weight: float = DEFAULT_LEXICAL_WEIGHT,
        depth: int = 50,
        clock: Callable[[], datetime] = utc_now,
        merge_decider: MergeDecider | None = None,
        decision_floor: float = DECISION_FLOOR,
    ) -> None:
        if merge_decider is not None and not 0 <= decision_floor <= duplicate_threshold:
            raise ValueError(
                f"decision_floor must be between 0 and duplicate_threshold ({duplicate_threshold}),"
                f" got {decision_floor}"
            )
        self.store = store
        self.merge_decider = merge_decider
        self.policy = PolicySettings(
            duplicate_threshold=duplicate_threshold,
            min_importance=min_importance,
            decision_floor=decision_floor if merge_decider is not None else None,
        )
        self.recall = RecallSettings(
            weights=weights,
            half_life_days=half_life_days,
            min_similarity=min_similarity,
            pool_factor=pool_factor,
            hybrid=supports_hybrid(store),
            fusion=fusion,
            lexical_weight=lexical_weight,
            depth=depth,
        )
        self.clock = clock

    namespace = staticmethod(memory_namespace)
    """Where a user's memories live: `("memories", user_id)`."""
    episode_namespace = staticmethod(episode_namespace)
    """Where a user's archived messages live: `("episodes", user_id)`."""
    hash_namespace = staticmethod(hash_namespace)
    """Where a user's exact-duplicate registry lives: `("memory_hashes", user_id)`."""

    # -- recall -------------------------------------------------------------------------------

    async def asearch(
        self,
        user_id: str,
        query: str,
        k: int = 5,
        *,
        categories: Iterable[Category] | None = None,
        include_superseded: bool = False,
        include_forgotten: bool = False,
        touch: bool = True,
        ranking: Ranking = "relevance",
    ) -> list[ScoredMemory]:
        """The `k` memories that best match `query`, best first.

        Args:
            user_id: Whose memories.
            query: What to match (e.g. the current message and the 3 before it).
            k: How many at most.
            categories: Only these categories (all when None).
            include_superseded: Also memories replaced by a newer value of their `key`.
            include_forgotten: Also soft-deleted memories.
            touch: Count this recall in `access_count` / `last_accessed` of the results.
            ranking: "relevance" (a search box: by relevance, nothing below the floor) or
                "recall" (a turn's context: importance and recency weigh in); see
                `engram.stores.memory.recall`.
        """
        return await arun_steps(
            self.store,
            self._search(
                user_id, query, k, categories, include_superseded, include_forgotten, touch, ranking
            ),
        )

    def search(
        self,
        user_id: str,
        query: str,
        k: int = 5,
        *,
        categories: Iterable[Category] | None = None,
        include_superseded: bool = False,
        include_forgotten: bool = False,
        touch: bool = True,
        ranking: Ranking = "relevance",
    ) -> list[ScoredMemory]:
        """Sync `asearch`."""
        return run_steps(
            self.store,
            self._search(
                user_id, query, k, categories, include_superseded, include_forgotten, touch, ranking
            ),
        )

    async def arecall_for_turn(self, user_id: str, query: str, k: int = 5) -> list[ScoredMemory]:
        """What a turn's context shows for `query`: the `k` best memories by the "recall"
        ranking, among current and replaced ones, each replaced one shown as the history of its
        current version (`engram.stores.memory.history.current_versions_steps`). Not touched:
        a turn counts its recalls when it ends."""
        return await arun_steps(self.store, self.recall_steps(user_id, query, k))

    def recall_for_turn(self, user_id: str, query: str, k: int = 5) -> list[ScoredMemory]:
        """Sync `arecall_for_turn`."""
        return run_steps(self.store, self.recall_steps(user_id, query, k))

    async def asearch_episodes(
        self,
        user_id: str,
        query: str,
        k: int = 2,
        *,
        min_similarity: float = 0.0,
        min_relevance: float = 0.0,
        reply_min_relevance: float | None = None,
        max_replies: int | None = None,
    ) -> list[SearchItem]:
        """Recall archived messages: the `k` best matches of `query` that are at least
        `min_similarity` similar to it and at least `min_relevance` relevant, best first; their
        `score` is the relevance (on a hybrid store the fused score of both channels, each
        rescaled so that its best candidate scores 1; else the similarity). Replies (the
        assistant's and tools' messages) need `reply_min_relevance` instead when given, and at
        most `max_replies` of them are returned when given."""
        return await arun_steps(
            self.store,
            self.episode_steps(
                user_id, query, k, min_similarity, min_relevance, reply_min_relevance, max_replies
            ),
        )

    def search_episodes(
        self,
        user_id: str,
        query: str,
        k: int = 2,
        *,
        min_similarity: float = 0.0,
        min_relevance: float = 0.0,
        reply_min_relevance: float | None = None,
        max_replies: int | None = None,
    ) -> list[SearchItem]:
        """Sync `asearch_episodes`."""
        return run_steps(
            self.store,
            self.episode_steps(
                user_id, query, k, min_similarity, min_relevance, reply_min_relevance, max_replies
            ),
        )

    async def atouch(self, user_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        """Count a recall of these memories (`access_count`, `last_accessed`), for recalls made
        with `touch=False`; unknown ids are skipped. Returns the memories as stored now."""
        return await arun_steps(self.store, self._touch(user_id, memory_ids))

    def touch(self, user_id: str, memory_ids: Sequence[str]) -> list[Memory]:
        """Sync `atouch`."""
        return run_steps(self.store, self._touch(user_id, memory_ids))

    # -- writes -------------------------------------------------------------------------------

    async def aupsert(
        self,
        user_id: str,
        candidates: Sequence[MemoryCandidate],
        *,
        thread_id: str | None = None,
        message_ids: Sequence[str] = (),
    ) -> list[WriteResult]:
        """Write candidates through the write policy, in order; one result per candidate.

        Without a merge decider, on a store that holds several calls at once against other
        processes (an embedded folder, `engram.stores.steps.run_held`), each candidate's reads
        and the writes they decide are one compare-and-set (the folder is held for one
        candidate at a time): two processes writing the same memory at once write it once, and a
        procedure done in both counts both uses.

        Args:
            user_id: Whose memories.
            candidates: What extraction proposed (or what a person added by hand).
            thread_id: The conversation they came from (provenance).
            message_ids: The messages they came from, unless a candidate names its own.
        """
        now = self.clock().isoformat()  # one time for all: they were said together
        if self.merge_decider is None:  # no model call inside: held, one candidate at a time
            results = []
            for candidate in candidates:
                steps = self._upsert(user_id, [candidate], thread_id, message_ids, now)
                results += await arun_held(self.store, steps)
            return results
        steps = self._upsert(user_id, candidates, thread_id, message_ids, now)
        return await arun_steps(self.store, steps, aanswer_with(self.merge_decider))

    def upsert(
        self,
        user_id: str,
        candidates: Sequence[MemoryCandidate],
        *,
        thread_id: str | None = None,
        message_ids: Sequence[str] = (),
    ) -> list[WriteResult]:
        """Sync `aupsert`."""
        now = self.clock().isoformat()
        if self.merge_decider is None:
            return [
                result
                for candidate in candidates
                for result in run_held(
                    self.store, self._upsert(user_id, [candidate], thread_id, message_ids, now)
                )
            ]
        steps = self._upsert(user_id, candidates, thread_id, message_ids, now)
        return run_steps(self.store, steps, answer_with(self.merge_decider))

    # -- management ---------------------------------------------------------------------------

    async def aget(self, user_id: str, memory_id: str) -> Memory | None:
        """One memory by id (any status), or None."""
        return await arun_steps(self.store, get_steps(self.namespace(user_id), memory_id))

    def get(self, user_id: str, memory_id: str) -> Memory | None:
        """Sync `aget`."""
        return run_steps(self.store, get_steps(self.namespace(user_id), memory_id))

    async def alist(
        self,
        user_id: str,
        *,
        categories: Iterable[Category] | None = None,
        include_superseded: bool = False,
        include_forgotten: bool = False,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Memory]:
        """A user's memories, most recently updated first."""
        return await arun_steps(
            self.store,
            list_steps(
                self.namespace(user_id),
                categories=categories,
                include_superseded=include_superseded,
                include_forgotten=include_forgotten,
                limit=limit,
                offset=offset,
            ),
        )

    def list(
        self,
        user_id: str,
        *,
        categories: Iterable[Category] | None = None,
        include_superseded: bool = False,
        include_forgotten: bool = False,
        limit: int = 100,
        offset: int = 0,
    ) -> list[Memory]:
        """Sync `alist`."""
        return run_steps(
            self.store,
            list_steps(
                self.namespace(user_id),
                categories=categories,
                include_superseded=include_superseded,
                include_forgotten=include_forgotten,
                limit=limit,
                offset=offset,
            ),
        )

    async def aforget(self, user_id: str, memory_id: str) -> Memory | None:
        """Soft-delete: kept and restorable, no longer recalled. None if there is no such memory."""
        return await arun_steps(self.store, self._forget(user_id, memory_id))

    def forget(self, user_id: str, memory_id: str) -> Memory | None:
        """Sync `aforget`."""
        return run_steps(self.store, self._forget(user_id, memory_id))

    async def arestore(self, user_id: str, memory_id: str) -> RestoreResult | None:
        """Undo `forget` and what maintenance did to a memory: forgotten -> active, a lowered
        importance -> the old one, compressed -> current again (`engram.stores.memory.manage.restore`).
        None if there is no such memory."""
        return await arun_steps(self.store, self._restore(user_id, memory_id))

    def restore(self, user_id: str, memory_id: str) -> RestoreResult | None:
        """Sync `arestore`."""
        return run_steps(self.store, self._restore(user_id, memory_id))

    async def adelete(self, user_id: str, memory_id: str) -> bool:
        """Delete for good (not restorable), with its duplicate records and maintenance journal
        entry. False if there was no such memory."""
        deleted = await arun_steps(self.store, delete_memory_steps(user_id, memory_id))
        if deleted:
            await apurge_store(self.store)  # its text leaves the store's files too
        return deleted

    def delete(self, user_id: str, memory_id: str) -> bool:
        """Sync `adelete`."""
        deleted = run_steps(self.store, delete_memory_steps(user_id, memory_id))
        if deleted:
            purge_store(self.store)
        return deleted

    # -- shared step builders and the two drivers ---------------------------------------------

    def _search(
        self,
        user_id: str,
        query: str,
        k: int,
        categories: Iterable[Category] | None,
        include_superseded: bool,
        include_forgotten: bool,
        touch: bool,
        ranking: Ranking,
    ) -> Steps[list[ScoredMemory]]:
        return search_steps(
            self.namespace(user_id),
            valid_unicode(query),
            k,
            categories=list(categories) if categories else None,
            include_superseded=include_superseded,
            include_forgotten=include_forgotten,
            touch=touch,
            now=self.clock(),
            settings=self.recall,
            ranking=ranking,
        )

    def recall_steps(self, user_id: str, query: str, k: int) -> Steps[list[ScoredMemory]]:
        """The steps of `arecall_for_turn` (to run with others: `engram.stores.steps.together`)."""
        namespace, pool = self.namespace(user_id), k + MAX_EARLIER if k > 0 else 0
        matched = yield from self._search(  # room for versions of one memory, folded into one
            user_id, query, pool, None, include_superseded=True, include_forgotten=False,
            touch=False, ranking="recall",
        )
        shown = yield from current_versions_steps(namespace, matched, k)
        if len(shown) < k and len(matched) == pool:  # versions of few memories crowded it
            current = yield from self._search(
                user_id, query, k, None, include_superseded=False, include_forgotten=False,
                touch=False, ranking="recall",
            )
            both = {s.memory.id: s for s in [*current, *matched]}
            ranked = sorted(both.values(), key=lambda s: s.score, reverse=True)
            shown = yield from current_versions_steps(namespace, ranked, k)
        return shown

    def _touch(self, user_id: str, memory_ids: Sequence[str]) -> Steps[list[Memory]]:
        touched = yield from touch_steps(self.namespace(user_id), memory_ids, now=self.clock())
        return list(touched.values())

    def episode_steps(
        self,
        user_id: str,
        query: str,
        k: int,
        min_similarity: float,
        min_relevance: float,
        reply_min_relevance: float | None,
        max_replies: int | None,
    ) -> Steps[list[SearchItem]]:
        """The steps of `asearch_episodes` (to run with others: `engram.stores.steps.together`)."""
        return episode_search_steps(
            self.episode_namespace(user_id),
            valid_unicode(query),
            k,
            min_similarity=min_similarity,
            min_relevance=min_relevance,
            reply_min_relevance=reply_min_relevance,
            max_replies=max_replies,
            settings=self.recall,
        )

    def _upsert(
        self,
        user_id: str,
        candidates: Sequence[MemoryCandidate],
        thread_id: str | None,
        message_ids: Sequence[str],
        now: str,
    ) -> AskingSteps[list[WriteResult]]:
        namespace, hashes = self.namespace(user_id), self.hash_namespace(user_id)
        results = []
        for candidate in candidates:
            result = yield from upsert_steps(
                namespace,
                hashes,
                candidate,
                thread_id=thread_id,
                message_ids=list(message_ids),
                now=now,
                settings=self.policy,
            )
            results.append(result)
        return results

    def _forget(self, user_id: str, memory_id: str) -> Steps[Memory | None]:
        return set_forgotten_steps(
            self.namespace(user_id), memory_id, forgotten=True, now=self.clock().isoformat()
        )

    def _restore(self, user_id: str, memory_id: str) -> Steps[RestoreResult | None]:
        return restore_steps(user_id, memory_id, self.clock().isoformat())


__all__ = [
    "CATEGORIES",
    "DEFAULT_IMPORTANCE",
    "EPISODE_NAMESPACE",
    "HASH_NAMESPACE",
    "MEMORY_NAMESPACE",
    "Category",
    "LongTermMemory",
    "Memory",
    "MemoryCandidate",
    "ScoreWeights",
    "ScoredMemory",
    "WriteResult",
    "combined_score",
    "content_hash",
]
