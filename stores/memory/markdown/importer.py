"""Importing an edited `memory.md`: what changed, as a plan a person confirms, then applied.

What an edit of the file means (`plan_import` compares the file with the store):

- a bullet whose text or category changed: the memory is edited (`engram.stores.memory.manage.edit`:
  a new version supersedes the old one, which stays as history);
- a bullet removed from the file (or under `# Forgotten`): the memory is **forgotten**, not
  deleted: a file edit is a bulk operation where a slip is easy, so it stays restorable; only
  `engram memory delete` deletes for good. Only memories that existed when the file was
  exported can be missing from it: what the assistant learned since is left alone. A file
  without the export header (written by hand) adds and edits but forgets nothing;
- a bullet moved out of `# Forgotten`: the memory is restored;
- a new bullet (no id comment): added through the write policy (secrets redacted; an exact or
  near duplicate of a memory confirms it instead of adding a copy). A bullet whose id is not
  in the store (a file from another installation, or a memory deleted since) is added as new;
- `# Superseded` is history: edits there are ignored (with a warning), and so is a bullet
  edited in the file whose memory was replaced in the store after the export (edit the new
  version instead).

Importing an unedited export changes nothing, also after the write policy merged new text
into a memory since the export (a bullet holding a text the memory absorbed is unchanged), and
importing the same edited file twice changes nothing the second time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from langgraph.store.base import BaseStore

from engram.stores.memory.content import content_problem
from engram.stores.memory.manage.edit import EditError, edit_steps
from engram.stores.memory.manage.restore import restore_steps
from engram.stores.memory.markdown.format import (
    Bullet,
    MarkdownDoc,
    MarkdownError,
    display_user,
    same_text,
)
from engram.stores.memory.procedures import procedure_fields
from engram.stores.memory.types import Category, Memory, MemoryCandidate, content_hash, parse_time
from engram.stores.memory.write.policy import PolicySettings, set_forgotten_steps, upsert_steps
from engram.stores.namespaces import hash_namespace, memory_namespace
from engram.stores.secrets import redact
from engram.stores.steps import Steps, run_held
from engram.stores.text import counted

Action = Literal["edit", "forget", "restore", "add"]


class PlanError(ValueError):
    """A plan holds a change that cannot be applied (an edit, forget or restore without an id)."""


@dataclass(frozen=True)
class Change:
    """One change the import makes (every action but `add` names its memory)."""

    action: Action
    category: Category
    content: str
    """The new text (edit, add) or the memory's text (forget, restore)."""
    memory_id: str | None = None
    """None for an added memory."""
    before: str | None = None
    """The old text of an edit."""
    before_category: Category | None = None
    """The old category of an edit."""
    line: int | None = None
    """The bullet's line in the file (None for a memory missing from it)."""


@dataclass
class ImportPlan:
    """What importing a file will change, for a person to read before applying it."""

    user_id: str
    changes: list[Change] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Changes per action."""
        out: dict[str, int] = {}
        for change in self.changes:
            out[change.action] = out.get(change.action, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form."""
        return {**asdict(self), "counts": self.counts()}


@dataclass(frozen=True)
class Applied:
    """The outcome of one change."""

    change: Change
    outcome: str
    """"edited", "forgotten", "restored", or the write policy's action for an added memory
    ("created", "merged", "duplicate", ...), or "skipped"."""
    memory_id: str | None
    """The memory it produced or changed."""
    note: str = ""


def plan_import(doc: MarkdownDoc, memories: Sequence[Memory], user_id: str) -> ImportPlan:
    """Compare a parsed file with the user's memories (all of them, any state).

    Raises:
        MarkdownError: The file was exported for another user, or a bullet that adds or edits a
            memory is not one (`content_problem`: punctuation only, too long); every such line
            is named.
    """
    if doc.user_id is not None and doc.user_id != user_id:
        raise MarkdownError(
            f"this file was exported for user {doc.user_id!r}, not {user_id!r}: pass --user "
            f"{display_user(doc.user_id)}, or delete its 'engram ...' header comment line to import it as new "
            f"memories of {user_id!r}"
        )
    plan = ImportPlan(user_id, warnings=list(doc.warnings))
    by_id = {m.id: m for m in memories}
    known_hashes = {
        h: m.id for m in memories if m.current and not m.forgotten for h in m.content_hashes
    }
    covered: set[str] = set()
    problems: list[str] = []
    for bullet in doc.bullets:
        memory = by_id.get(bullet.memory_id) if bullet.memory_id else None
        if memory is None:
            digest = content_hash(redact(bullet.content).text.strip())
            if digest in known_hashes:
                covered.add(known_hashes[digest])
                plan.warnings.append(
                    f"line {bullet.line}: already remembered as {known_hashes[digest]}: "
                    "not added again"
                )
                continue
            if bullet.memory_id:
                plan.warnings.append(
                    f"line {bullet.line}: no memory {bullet.memory_id} (deleted, or from another "
                    "installation): added as a new memory"
                )
            problems += _content_problems(bullet)
            plan.changes.append(Change("add", bullet.category, bullet.content, line=bullet.line))
            continue
        chain = _successors(memory, by_id)
        covered.update(chain)
        changed = not _same(bullet, memory)
        if not memory.current:  # replaced since the export (or shown as history)
            if changed and not _same(bullet, by_id[chain[-1]]):  # not this file's own edit
                plan.warnings.append(_history_warning(bullet.line, memory))
            continue
        if bullet.status == "superseded":
            plan.warnings.append(_history_warning(bullet.line, memory))
            continue
        if bullet.status == "forgotten":
            if changed:
                plan.warnings.append(
                    f"line {bullet.line}: edits under '# Forgotten' are ignored; move the bullet "
                    "up to restore and edit it"
                )
            if not memory.forgotten:
                plan.changes.append(_change("forget", memory, bullet.line))
            continue
        if changed:
            problems += _content_problems(bullet)
            plan.changes.append(
                Change(
                    "edit",
                    bullet.category,
                    bullet.content,
                    memory.id,
                    memory.content,
                    memory.category,
                    bullet.line,
                )
            )
        elif memory.forgotten:
            plan.changes.append(_change("restore", memory, bullet.line))
    if problems:
        raise MarkdownError("; ".join(problems) + " (nothing was changed)")
    _missing(doc, memories, covered, plan)
    return plan


def _content_problems(bullet: Bullet) -> list[str]:
    problem = content_problem(bullet.content)
    return [f"line {bullet.line}: this memory {problem}"] if problem else []


def apply_import(
    store: BaseStore,
    user_id: str,
    plan: ImportPlan,
    *,
    now: str,
    policy: PolicySettings | None = None,
) -> list[Applied]:
    """Apply a plan through the write path, in order; one `Applied` per change. Each change is
    held against other processes on an embedded folder (`run_held`), one at a time as the write
    path holds its candidates, so a long file does not keep them waiting.

    Args:
        store: The store the memories are in.
        user_id: Whose memories.
        plan: From `plan_import`.
        now: The time of the writes (ISO-8601).
        policy: The write policy's thresholds for added memories (default: `PolicySettings()`).

    Raises:
        PlanError: A change other than `add` names no memory (checked before anything is
            written).
    """
    for change in plan.changes:
        if change.action != "add":
            _target(change)
    policy = policy or PolicySettings()
    return [run_held(store, _change_steps(user_id, change, now, policy)) for change in plan.changes]


def _change_steps(user_id: str, change: Change, now: str, policy: PolicySettings) -> Steps[Applied]:
    """One change of a plan, through the write path."""
    if change.action == "add":
        procedure = procedure_fields(change.content) if change.category == "skill" else {}
        candidate = MemoryCandidate(
            content=change.content, category=change.category, confidence=1.0, **procedure
        )
        result = yield from upsert_steps(
            memory_namespace(user_id),
            hash_namespace(user_id),
            candidate,
            thread_id=None,
            message_ids=[],
            now=now,
            settings=policy,
        )
        return Applied(change, result.action, result.memory.id if result.memory else None,
                       result.reason)
    memory_id = _target(change)
    if change.action == "edit":
        try:
            new = yield from edit_steps(user_id, memory_id, change.content, change.category, now)
        except EditError as exc:
            return Applied(change, "skipped", memory_id, str(exc))
        return Applied(change, "edited", new.id, f"replaces {memory_id}")
    if change.action == "forget":
        namespace = memory_namespace(user_id)
        memory = yield from set_forgotten_steps(namespace, memory_id, forgotten=True, now=now)
        return Applied(change, "forgotten" if memory else "skipped", memory_id)
    result = yield from restore_steps(user_id, memory_id, now)
    return Applied(
        change,
        "restored" if result and result.changed else "skipped",
        memory_id,
        "; ".join(result.actions) if result else "no such memory",
    )


def _target(change: Change) -> str:
    """The id of the memory a change applies to.

    Raises:
        PlanError: The change is not an `add` and names no memory.
    """
    if change.memory_id is None:
        raise PlanError(
            f"a {change.action!r} change needs the memory_id of the memory it changes (got none "
            f"for {change.content!r}); only 'add' changes have none: build plans with plan_import"
        )
    return change.memory_id


def _same(bullet: Bullet, memory: Memory) -> bool:
    """Whether a bullet says what the memory holds: its text, or a text it absorbed since (a
    merge after the export changed the memory, not the file), in the same category.

    A case or punctuation change of the current text is an edit: it has the current text's hash.
    """
    if bullet.category != memory.category:
        return False
    if same_text(bullet.content, memory.content):
        return True
    digest = content_hash(bullet.content)
    return digest in memory.content_hashes and digest != content_hash(memory.content)


def _successors(memory: Memory, by_id: dict[str, Memory]) -> list[str]:
    """The memory and the versions that replaced it since, newest last."""
    chain = [memory.id]
    while memory.superseded_by and memory.superseded_by in by_id and len(chain) < 100:
        memory = by_id[memory.superseded_by]
        chain.append(memory.id)
    return chain


def _missing(
    doc: MarkdownDoc, memories: Sequence[Memory], covered: set[str], plan: ImportPlan
) -> None:
    """Forget the active memories the file left out, if the file could have held them."""
    absent = [m for m in memories if m.current and not m.forgotten and m.id not in covered]
    if not absent:
        return
    if doc.exported_at is None:
        plan.warnings.append(
            f"no export header: kept {counted(len(absent), 'memory', 'memories')} missing from "
            "the file "
            "(only a file made by `engram memory export` can forget by leaving memories out)"
        )
        return
    exported = parse_time(doc.exported_at)
    newer = [m for m in absent if parse_time(m.created_at) > exported]
    for memory in absent:
        if parse_time(memory.created_at) <= exported:
            plan.changes.append(_change("forget", memory, None))
    if newer:
        plan.warnings.append(
            f"kept {counted(len(newer), 'memory', 'memories')} created after the export "
            f"({doc.exported_at}) and not in the file"
        )


def _change(action: Action, memory: Memory, line: int | None) -> Change:
    return Change(action, memory.category, memory.content, memory.id, line=line)


def _history_warning(line: int, memory: Memory) -> str:
    if memory.current:
        return (
            f"line {line}: memory {memory.id} is current; '# Superseded' is history, move the "
            "bullet under '# Forgotten' to forget it"
        )
    if memory.superseded_by:
        return (
            f"line {line}: memory {memory.id} was replaced by {memory.superseded_by}; this edit "
            "is ignored (export again and edit the new version)"
        )
    return f"line {line}: memory {memory.id} is history; edits to it are ignored"
