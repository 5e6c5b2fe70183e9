"""Forgetting and maintenance of a user's long-term memories.

A maintenance run looks at the user's active memories (current and not forgotten) and, in order:

1. **expiry**: a category given a TTL (`ttl_days={"goal": 180}`) forgets its memories not
   written or confirmed for that many days (`updated_at`: created, merged, restated, edited or
   restored);
2. **relevance**: `exp(-0.01 · idle days) × (1 + ln(1 + access_count)) × importance`,
   where idle days count from the last recall or the last write that confirmed the memory,
   whichever is later (for a memory never recalled nor confirmed: its creation). Below 0.1 the
   memory is forgotten; below 0.3 its importance is multiplied by `lower_factor` (0.5), once.
   The lowered importance ranks the memory lower in recall; the formula keeps using the
   importance from before the lowering, so forgetting follows the formula and not a second
   decay, and running maintenance twice in a row changes nothing the second time;
3. **compression**: active memories idle for 90 days or more, recalled fewer than 5
   times and without a `key` (a keyed memory is the current value of an attribute and must stay
   supersedable), grouped by category, at least 3 per group and at most 20 per call, are
   compressed by the memory model into 1-3 new memories; the originals become superseded by
   them (`valid_until`, `superseded_by`), and the new ones list them in `supersedes`. Without a
   compressor (no memory model) this step is skipped and the report says so;
4. **cap**: when more than `max_memories` (10000) stay active, the lowest-importance,
   least recently written ones are forgotten;
5. **episode cap**: every session is archived verbatim (`engram.nodes.episodes`); when a user
   has more than `max_episodes` (20000) archived messages, the oldest are deleted and purged
   from the store's files (the one step that deletes: an archive beyond the cap is not kept).

Memories are never deleted: forgetting is the soft delete, restorable. Each change is recorded in the
user's maintenance journal `("memory_maintenance", U)` (key: the memory id): the importance
before it was lowered, why a memory was forgotten, what it was compressed into. `restore`
(`engram.stores.memory.manage.restore`) reads it to undo the change. Forgetting and lowering keep a
memory's `updated_at`, so they change neither recall's recency nor the next run's idle days;
the originals of a compression, like any superseded memory, get `updated_at` = the run's time
with their `valid_until`, and the new memories are created at it.

A memory written by anything else while the run decides (a merge, a recall, a new value of its
key; the model may take a while) keeps that write: just before writing, the run reads back the
memories it changes and skips those that differ from what it loaded (`report.skipped`), with
the whole compression they belong to.

`maintain` / `amaintain` run it (`dry_run=True` reports without writing or calling the model).
Both drive the same steps and differ only in the compressor call: `start_steps` loads and
decides, `compression_groups` says what to compress, `MaintenanceRun.compress` applies the
model's answer, `finish_steps` caps and writes. `MaintenanceRun` holds one run's decisions
without any I/O, for other drivers and for tests.

Example:
    >>> from datetime import datetime, timedelta, timezone
    >>> now = datetime(2026, 6, 1, tzinfo=timezone.utc)
    >>> m = Memory.new("I use Vim", "preference", 0.9, now=(now - timedelta(days=100)).isoformat())
    >>> round(relevance(m, now), 4)  # exp(-1) * (1 + ln 1) * 0.9
    0.3311
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from langgraph.store.base import BaseStore, GetOp, Op, PutOp

from engram.stores.maintenance.types import (
    Compressed,
    CompressedDraft,
    CompressionError,
    Compressor,
    Lowered,
    MaintenanceReport,
    MaintenanceSettings,
)
from engram.stores.memory.manage.journal import ForgetReason, JournalEntry
from engram.stores.memory.types import (
    CATEGORIES,
    Memory,
    content_hash,
    memory_put,
    parse_time,
    utc_now,
)
from engram.stores.memory.users import apurge_store, items_steps, memories_steps, purge_store
from engram.stores.memory.write.policy import MAX_SOURCE_IDS
from engram.stores.namespaces import (
    episode_namespace,
    hash_namespace,
    journal_namespace,
    memory_namespace,
)
from engram.stores.steps import Steps, arun_steps, run_steps
from engram.stores.text import counted

# -- the formula --------------------------------------------------------------------------------


def idle_days(memory: Memory, now: datetime) -> float:
    """Days since the memory was last recalled or confirmed by a write (never negative)."""
    last = parse_time(memory.updated_at)
    if memory.last_accessed:
        last = max(last, parse_time(memory.last_accessed))
    return max(0.0, (now - last).total_seconds() / 86400.0)


def relevance(
    memory: Memory, now: datetime, decay_per_day: float = 0.01, importance: float | None = None
) -> float:
    """A memory's relevance: `exp(-decay · idle days) × (1 + ln(1 + access_count)) × importance`.

    Args:
        memory: The memory.
        now: The time to measure idle days at.
        decay_per_day: The `0.01` of the formula.
        importance: Overrides `memory.importance` (maintenance passes the importance from
            before it lowered it).
    """
    return (
        math.exp(-decay_per_day * idle_days(memory, now))
        * (1.0 + math.log1p(memory.access_count))
        * (memory.importance if importance is None else importance)
    )


# -- one run, as pure state -----------------------------------------------------------------------


class MaintenanceRun:
    """The decisions of one run and the store writes they need; no I/O.

    `__init__` decides expiry and relevance and picks the compression groups; `compress` applies
    one group's drafts; `cap` runs last; `skip_stale` drops what the store changed meanwhile;
    `ops` are the writes.
    """

    def __init__(
        self,
        user_id: str,
        memories: Sequence[Memory],
        journal: Mapping[str, JournalEntry],
        now: datetime,
        settings: MaintenanceSettings,
        *,
        dry_run: bool,
    ) -> None:
        self.user_id = user_id
        self.namespace = memory_namespace(user_id)
        self.settings = settings
        self.now = now
        self.stamp = now.isoformat()
        self.journal = dict(journal)
        self.loaded = {m.id: m for m in memories}
        """The memories as loaded: a write is skipped when the store's copy differs by then."""
        self.changed: dict[str, Memory] = {}
        self.entries: dict[str, JournalEntry] = {}
        self.hash_records: dict[str, str] = {}
        active = [m for m in memories if m.current and not m.forgotten]
        self.report = MaintenanceReport(user_id, self.stamp, dry_run, len(active))
        self.active: dict[str, Memory] = {}
        for memory in sorted(active, key=lambda m: m.id):
            self._decay(memory)
        self.groups = self._compression_groups()

    def _decay(self, memory: Memory) -> None:
        settings = self.settings
        ttl = settings.ttl_days.get(memory.category)
        lowering = self._lowering(memory)
        own = lowering.importance_before if lowering else memory.importance
        score = relevance(memory, self.now, settings.decay_per_day, own)
        age = (self.now - parse_time(memory.updated_at)).total_seconds() / 86400.0
        if ttl is not None and age >= ttl:
            self._forget(memory, "ttl", score)
            self.report.expired.append(memory.id)
        elif score < settings.forget_below:
            self._forget(memory, "relevance", score)
            self.report.forgotten.append(memory.id)
        elif score < settings.lower_below and lowering is None:
            lowered = memory.importance * settings.lower_factor
            self.entries[memory.id] = self._entry(memory).model_copy(
                update={
                    "importance_before": memory.importance,
                    "lowered_to": lowered,
                    "relevance": score,
                }
            )
            self.report.lowered.append(Lowered(memory.id, memory.importance, lowered, score))
            self.active[memory.id] = self._change(memory, importance=lowered)
        else:
            self.active[memory.id] = memory

    def _compression_groups(self) -> list[tuple[str, list[Memory]]]:
        settings = self.settings
        by_category: dict[str, list[Memory]] = {}
        for memory in self.active.values():
            if (
                memory.key is None
                and memory.access_count < settings.compress_max_access
                and idle_days(memory, self.now) >= settings.compress_after_days
            ):
                by_category.setdefault(memory.category, []).append(memory)
        groups = []
        for category in CATEGORIES:
            eligible = sorted(by_category.get(category, []), key=lambda m: (m.created_at, m.id))
            if len(eligible) < settings.compress_min_group:
                continue
            chunks = math.ceil(len(eligible) / settings.compress_max_group)
            size = math.ceil(len(eligible) / chunks)
            groups.extend((category, eligible[i : i + size]) for i in range(0, len(eligible), size))
        return [(c, g) for c, g in groups if len(g) >= settings.compress_min_group]

    def compress(
        self, category: str, group: Sequence[Memory], drafts: Sequence[CompressedDraft]
    ) -> None:
        """Apply one group's drafts: new memories, originals superseded by them.

        Raises:
            CompressionError: No draft names a source from the group, or one is empty.
        """
        # loaded here: a run without compression redacts nothing (as in `memory_put`)
        from engram.stores.secrets import redact

        by_id = {m.id: m for m in group}
        created: list[Memory] = []
        sources: dict[str, str] = {}
        for draft in drafts[:3]:
            ids = [i for i in dict.fromkeys(draft.sources) if i in by_id and i not in sources]
            content = redact(draft.content).text.strip()
            if not ids or not content:
                continue
            olds = [by_id[i] for i in ids]
            importance = (
                draft.importance
                if draft.importance is not None
                else max(m.importance for m in olds)
            )
            message_ids = list(dict.fromkeys(i for m in olds for i in m.source_message_ids))
            new = Memory.new(
                content,
                category,
                importance,
                now=self.stamp,
                supersedes=ids,  # type: ignore[arg-type]
                confidence=min(m.confidence for m in olds),
                source_message_ids=message_ids[-MAX_SOURCE_IDS:],
            )
            created.append(new)
            sources.update({i: new.id for i in ids})
        if not created:
            raise CompressionError(
                f"the model's answer for {counted(len(group), 'memory', 'memories')} of "
                f"category {category} named none of them as "
                "a source: nothing was compressed"
            )
        for memory_id, new_id in sources.items():
            old = self.active.pop(memory_id)
            self.entries[old.id] = self._entry(old).model_copy(update={"compressed_into": new_id})
            self._change(
                old, valid_until=self.stamp, superseded_by=new_id, replaced_as="compressed",
                updated_at=self.stamp,
            )
        for new in created:
            self.active[new.id] = new
            self.changed[new.id] = new
            self.entries[new.id] = JournalEntry(compressed_from=new.supersedes, at=self.stamp)
            self.hash_records[content_hash(new.content)] = new.id
        self.report.compressed.append(Compressed(category, list(sources), [m.id for m in created]))

    def cap(self) -> None:
        """Forget the lowest-importance, least recently written memories above `max_memories`."""
        limit = self.settings.max_memories
        if limit is None or len(self.active) <= limit:
            return
        order = sorted(
            self.active.values(), key=lambda m: (m.importance, parse_time(m.updated_at), m.id)
        )
        for memory in order[: len(self.active) - limit]:
            self.active.pop(memory.id)
            self._forget(memory, "cap", relevance(memory, self.now, self.settings.decay_per_day))
            self.report.capped.append(memory.id)

    def changed_since_loading(self) -> list[str]:
        """The loaded memories the run changes: `skip_stale` needs their copies in the store."""
        return [i for i in self.changed if i in self.loaded]

    def skip_stale(self, stored: Mapping[str, Memory | None]) -> None:
        """Leave out the changes of memories written (merged, recalled, superseded, edited,
        deleted) since the run loaded them: writing the loaded copy would undo that write.

        A compression with such an original is left out as a whole (its new memories too). The
        skipped ids go to `report.skipped`; the next run looks at them again.

        Args:
            stored: The store's copy (None: deleted) of each id of `changed_since_loading`.
        """
        stale = {i for i, memory in stored.items() if memory != self.loaded[i]}
        if not stale:
            return
        dropped: set[str] = set()
        kept = []
        for compression in self.report.compressed:
            if stale.intersection(compression.sources):
                stale.update(compression.sources)
                dropped.update(compression.created)
            else:
                kept.append(compression)
        gone = stale | dropped
        for memory_id in gone:
            self.changed.pop(memory_id, None)
            self.entries.pop(memory_id, None)
            self.active.pop(memory_id, None)
        self.hash_records = {h: i for h, i in self.hash_records.items() if i not in gone}
        report = self.report
        report.compressed = kept
        report.expired = [i for i in report.expired if i not in gone]
        report.forgotten = [i for i in report.forgotten if i not in gone]
        report.capped = [i for i in report.capped if i not in gone]
        report.lowered = [x for x in report.lowered if x.memory_id not in gone]
        report.skipped = sorted(stale)

    def ops(self) -> list[Op]:
        """The writes: changed memories, journal entries, duplicate-registry records."""
        hashes = hash_namespace(self.user_id)
        journal = journal_namespace(self.user_id)
        return [
            *(memory_put(self.namespace, m) for m in self.changed.values()),
            *(
                PutOp(journal, key, e.model_dump(mode="json"), index=False)
                for key, e in self.entries.items()
            ),
            *(
                PutOp(hashes, digest, {"memory_id": memory_id}, index=False)
                for digest, memory_id in self.hash_records.items()
            ),
        ]

    # -- helpers

    def _lowering(self, memory: Memory) -> JournalEntry | None:
        """The journal entry of a lowering still in effect (the importance is what it set)."""
        entry = self.entries.get(memory.id) or self.journal.get(memory.id)
        if entry is None or entry.lowered_to is None:
            return None
        return entry if math.isclose(entry.lowered_to, memory.importance) else None

    def _entry(self, memory: Memory) -> JournalEntry:
        """A fresh entry that keeps a lowering still in effect and the link of a compressed
        memory to its originals."""
        lowering = self._lowering(memory)
        previous = self.entries.get(memory.id) or self.journal.get(memory.id)
        return JournalEntry(
            importance_before=lowering.importance_before if lowering else None,
            lowered_to=lowering.lowered_to if lowering else None,
            compressed_from=previous.compressed_from if previous else [],
            at=self.stamp,
        )

    def _forget(self, memory: Memory, reason: ForgetReason, score: float) -> None:
        self.entries[memory.id] = self._entry(memory).model_copy(
            update={"forgotten_by": reason, "relevance": score}
        )
        self._change(memory, forgotten=True)

    def _change(self, memory: Memory, **updates: Any) -> Memory:
        changed = memory.model_copy(update=updates)
        self.changed[memory.id] = changed
        return changed


# -- drivers --------------------------------------------------------------------------------------


def load_steps(user_id: str) -> Steps[tuple[list[Memory], dict[str, JournalEntry]]]:
    """All of a user's memories and their journal entries."""
    memories = yield from memories_steps(user_id)
    items = yield from items_steps(journal_namespace(user_id))
    return memories, {i.key: JournalEntry.model_validate(i.value) for i in items}


def start_steps(
    user_id: str, *, settings: MaintenanceSettings, now: datetime, dry_run: bool
) -> Steps[MaintenanceRun]:
    """Load the user's memories and decide expiry, relevance and the compression groups."""
    memories, journal = yield from load_steps(user_id)
    return MaintenanceRun(user_id, memories, journal, now, settings, dry_run=dry_run)


def compression_groups(
    run: MaintenanceRun, compressor: Compressor | None
) -> list[tuple[str, list[Memory]]]:
    """The groups to send to the compressor; sets the report's `compression` line."""
    eligible = sum(len(g) for _, g in run.groups)
    if not run.groups:
        run.report.compression = "nothing to compress"
        return []
    if compressor is None:
        run.report.compression = (
            f"skipped: no memory model configured ({counted(eligible, 'memory', 'memories')} "
            f"in {counted(len(run.groups), 'group')} eligible)"
        )
        return []
    if run.report.dry_run:
        run.report.compression = "dry run: the model was not called"
        run.report.compressed = [Compressed(c, [m.id for m in g], []) for c, g in run.groups]
        return []
    run.report.compression = "llm"
    return run.groups


def finish_steps(run: MaintenanceRun) -> Steps[MaintenanceReport]:
    """Apply the cap, then write the run's changes (nothing in a dry run), except those of
    memories written since the run loaded them (`MaintenanceRun.skip_stale`)."""
    run.cap()
    if not run.report.dry_run:
        if ids := run.changed_since_loading():
            items = yield [GetOp(run.namespace, i) for i in ids]
            run.skip_stale({i: Memory.from_item(it) if it else None for i, it in zip(ids, items)})
        if ops := run.ops():
            yield ops
    run.report.episodes_deleted = yield from episode_cap_steps(
        run.user_id, run.settings.max_episodes, dry_run=run.report.dry_run
    )
    return run.report


def episode_cap_steps(user_id: str, limit: int | None, *, dry_run: bool) -> Steps[list[str]]:
    """Delete the user's oldest episodes above `limit` (not in a dry run); their keys, oldest
    first."""
    if limit is None:
        return []
    items = yield from items_steps(episode_namespace(user_id))
    if len(items) <= limit:
        return []
    oldest = sorted(
        items, key=lambda i: (str(i.value.get("created_at") or i.created_at.isoformat()), i.key)
    )
    drop = [i.key for i in oldest[: len(items) - limit]]
    if not dry_run:
        yield [PutOp(episode_namespace(user_id), key, None) for key in drop]
    return drop


async def amaintain(
    store: BaseStore,
    user_id: str,
    *,
    settings: MaintenanceSettings | None = None,
    compressor: Compressor | None = None,
    clock: Callable[[], datetime] = utc_now,
    dry_run: bool = False,
) -> MaintenanceReport:
    """One maintenance run over a user's memories (see the module docstring).

    Args:
        store: The store holding the memories.
        user_id: Whose memories.
        settings: Thresholds, cap, TTLs, compression (default: `MaintenanceSettings()`).
        compressor: Compresses old memories (`engram.nodes.model.compress.make_compressor`); None
            skips compression.
        clock: Returns the current time (timezone-aware); tests move it.
        dry_run: Report what would change; write nothing and call no model.
    """
    run = await arun_steps(store, _start(user_id, settings, clock, dry_run))
    for category, group in compression_groups(run, compressor):
        with _recording_failure(run, category, group):
            run.compress(category, group, await compressor.acompress(category, group))  # type: ignore[union-attr]
    report = await arun_steps(store, finish_steps(run))
    if report.episodes_deleted and not dry_run:
        await apurge_store(store)
    return report


def maintain(
    store: BaseStore,
    user_id: str,
    *,
    settings: MaintenanceSettings | None = None,
    compressor: Compressor | None = None,
    clock: Callable[[], datetime] = utc_now,
    dry_run: bool = False,
) -> MaintenanceReport:
    """Sync `amaintain`."""
    run = run_steps(store, _start(user_id, settings, clock, dry_run))
    for category, group in compression_groups(run, compressor):
        with _recording_failure(run, category, group):
            run.compress(category, group, compressor.compress(category, group))  # type: ignore[union-attr]
    report = run_steps(store, finish_steps(run))
    if report.episodes_deleted and not dry_run:
        purge_store(store)
    return report


def _start(
    user_id: str,
    settings: MaintenanceSettings | None,
    clock: Callable[[], datetime],
    dry_run: bool,
) -> Steps[MaintenanceRun]:
    return start_steps(
        user_id, settings=settings or MaintenanceSettings(), now=clock(), dry_run=dry_run
    )


@contextmanager
def _recording_failure(run: MaintenanceRun, category: str, group: list[Memory]) -> Iterator[None]:
    """A compression that fails goes into the report; its memories stay as they are."""
    try:
        yield
    except CompressionError as exc:
        run.report.failures.append(
            f"{category} ({counted(len(group), 'memory', 'memories')}): {exc}"
        )
