"""memory.md: export -> edit -> import round trips, on InMemoryStore and ChromaStore."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from engram.stores.memory.long_term import LongTermMemory, Memory, MemoryCandidate
from engram.stores.memory.manage.edit import edit_steps
from engram.stores.memory.markdown.format import MarkdownError, parse_markdown, render_markdown
from engram.stores.memory.markdown.importer import (
    Change,
    ImportPlan,
    PlanError,
    apply_import,
    plan_import,
)
from engram.stores.memory.users import memories_steps
from engram.stores.steps import run_steps

USER = "alice"
T0 = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)


def seed(store: BaseStore) -> dict[str, Memory]:
    ltm = LongTermMemory(store, clock=lambda: T0)
    texts = {
        "dark": ("The user prefers dark mode in every editor", "preference"),
        "vim": ("The user edits code in Vim", "preference"),
        "acme": ("The user works at Acme as a data engineer", "fact"),
        "multi": (
            "Deploy checklist:\n- build the image\n\n- run `helm upgrade` <b>now</b>",
            "skill",
        ),
        "rust": ("用户打算明年学 Rust", "goal"),
        "berlin": ("The user lived in Berlin", "fact"),
    }
    out = {}
    for name, (text, category) in texts.items():
        [result] = ltm.upsert(USER, [MemoryCandidate(content=text, category=category)])
        out[name] = result.memory
    ltm.forget(USER, out["berlin"].id)
    return out


def everything(store: BaseStore) -> dict[str, Memory]:
    return {m.id: m for m in run_steps(store, memories_steps(USER))}


def export(store: BaseStore, at: datetime = T0, **kwargs) -> str:
    return render_markdown(
        USER, list(everything(store).values()), exported_at=at.isoformat(), **kwargs
    )


def plan(store: BaseStore, text: str):
    return plan_import(parse_markdown(text), list(everything(store).values()), USER)


def apply(store: BaseStore, text: str, now: datetime = T0 + timedelta(days=1)):
    return apply_import(store, USER, plan(store, text), now=now.isoformat())


def test_the_file_is_readable_and_parses_back_exactly(store):
    mem = seed(store)
    text = export(store, include_forgotten=True)
    dark = f"\n- The user prefers dark mode in every editor <!-- id:{mem['dark'].id} -->\n"
    assert text.index("## Preferences\n") < text.index(dark) < text.index("## Facts\n")
    assert "# Forgotten\n\n## Facts\n\n- The user lived in Berlin <!-- id:" in text
    assert "## Lessons" in text  # empty current sections are there to add to
    doc = parse_markdown(text)
    assert doc.user_id == USER and doc.exported_at == T0.isoformat() and doc.warnings == []
    got = {b.memory_id: (b.content, b.category, b.status) for b in doc.bullets}
    assert got == {
        m.id: (m.content, m.category, "forgotten" if m.forgotten else "current")
        for m in everything(store).values()
    }
    assert len(got) == len(mem)


def test_importing_an_unedited_export_changes_nothing(store):
    seed(store)
    before = everything(store)
    for kwargs in ({}, {"include_forgotten": True}, {"include_superseded": True}):
        text = export(store, **kwargs)
        assert plan(store, text).changes == [] and plan(store, text).warnings == []
        assert apply(store, text) == [] and everything(store) == before


def test_export_edit_import_applies_edits_deletions_and_additions(store):
    mem = seed(store)
    text = export(store, include_forgotten=True)
    edited = (
        text.replace("The user edits code in Vim", "The user edits code in Neovim 0.10")
        .replace(f"- The user works at Acme as a data engineer <!-- id:{mem['acme'].id} -->\n", "")
        .replace(
            "## Lessons\n",
            "## Lessons\n\n- Docker builds need proxy-env, api_key=sk-abcdefghijklmnopqrstuvwx1234\n",
        )
    )
    # move the goal to the facts, and Berlin back up (restore)
    rust_line = f"- 用户打算明年学 Rust <!-- id:{mem['rust'].id} -->\n"
    berlin_line = f"- The user lived in Berlin <!-- id:{mem['berlin'].id} -->\n"
    edited = edited.replace(rust_line, "").replace(berlin_line, "")
    edited = edited.replace("## Facts\n\n", "## Facts\n\n" + rust_line + berlin_line, 1)

    p = plan(store, edited)
    assert p.counts() == {"edit": 2, "add": 1, "forget": 1, "restore": 1}
    forget = next(c for c in p.changes if c.action == "forget")
    assert forget.memory_id == mem["acme"].id and forget.line is None
    results = apply_import(store, USER, p, now=(T0 + timedelta(days=1)).isoformat())
    assert [r.outcome for r in results] == [
        {"edit": "edited", "add": "created", "forget": "forgotten", "restore": "restored"}[c.action]
        for c in p.changes
    ]

    after = everything(store)
    current = {m.content: m for m in LongTermMemory(store).list(USER)}
    neovim = current["The user edits code in Neovim 0.10"]
    assert neovim.supersedes == [mem["vim"].id] and after[mem["vim"].id].superseded_by == neovim.id
    assert neovim.source_message_ids == mem["vim"].source_message_ids  # provenance kept
    assert current["用户打算明年学 Rust"].category == "fact"
    assert after[mem["acme"].id].forgotten  # a removed bullet is forgotten, not deleted
    assert not after[mem["berlin"].id].forgotten
    [added] = [m for c, m in current.items() if c.startswith("Docker builds")]
    assert "sk-abcdefghij" not in added.content and added.category == "lesson"

    # the same file again: everything it asks for is already so
    again = plan(store, edited)
    assert again.changes == [] and len(again.warnings) == 1
    assert again.warnings[0].startswith("line ") and "already remembered as" in again.warnings[0]
    # a fresh export round-trips again
    assert plan(store, export(store, at=T0 + timedelta(days=2))).changes == []
    LongTermMemory(store).restore(USER, mem["acme"].id)
    assert not everything(store)[mem["acme"].id].forgotten


def test_memories_learned_after_the_export_are_kept(store):
    seed(store)
    text = export(store)
    later = LongTermMemory(store, clock=lambda: T0 + timedelta(hours=5))
    [new] = later.upsert(
        USER, [MemoryCandidate(content="The user has a dog named Rex", category="fact")]
    )
    assert plan(store, text).changes == []
    assert any("kept 1 memory created after the export" in w for w in plan(store, text).warnings)
    apply(store, text)
    assert not everything(store)[new.memory.id].forgotten


def test_a_hand_written_file_adds_and_forgets_nothing(store):
    seed(store)
    p = plan(store, "## Preferences\n\n- The user likes green tea\n- The user edits code in Vim\n")
    assert [(c.action, c.content) for c in p.changes] == [("add", "The user likes green tea")]
    assert any("already remembered" in w for w in p.warnings)
    assert any("no export header" in w for w in p.warnings)


def test_an_edit_of_a_memory_replaced_since_the_export_is_ignored(store):
    mem = seed(store)
    text = export(store)
    helix = run_steps(
        store,
        edit_steps(
            USER,
            mem["vim"].id,
            "The user edits code in Helix",
            "preference",
            (T0 + timedelta(hours=1)).isoformat(),
        ),
    )
    p = plan(store, text.replace("The user edits code in Vim", "The user edits code in Emacs"))
    assert p.changes == []  # neither the stale edit nor a forget of the Helix version
    assert any(f"{mem['vim'].id} was replaced by {helix.id}" in w for w in p.warnings)
    assert plan(store, text).changes == [] and plan(store, text).warnings == []


def test_wrong_user_and_malformed_files_are_refused_with_the_line(store):
    seed(store)
    with pytest.raises(MarkdownError, match="exported for user 'alice', not 'bob'"):
        plan_import(parse_markdown(export(store)), [], "bob")
    with pytest.raises(MarkdownError, match="line 3: unknown category heading '## Hobbies'"):
        parse_markdown("# x\n\n## Hobbies\n- chess\n")
    with pytest.raises(MarkdownError, match="line 1: a bullet before any category heading"):
        parse_markdown("- chess\n")
    with pytest.raises(MarkdownError, match="lines 2 and 3 have the same id abc"):
        parse_markdown("## Facts\n- a <!-- id:abc -->\n- b <!-- id:abc -->\n")
    doc = parse_markdown("## fact\nsome prose\n- kept\n")
    assert [b.content for b in doc.bullets] == ["kept"]
    assert doc.warnings == [
        "line 2: not a bullet, ignored (start it with '- ' to add a memory): some prose"
    ]


def test_importing_an_unedited_export_keeps_merges_made_since(store):
    mem = seed(store)
    text = export(store)
    later = LongTermMemory(store, clock=lambda: T0 + timedelta(hours=5))
    [merged] = later.upsert(
        USER,
        [MemoryCandidate(content="The user edits code in Vim daily", category="preference")],
    )
    assert (merged.action, merged.memory.id) == ("merged", mem["vim"].id)
    before = everything(store)
    assert before[mem["vim"].id].content == "The user edits code in Vim daily"

    assert plan(store, text).changes == []  # the file's older text is one the memory absorbed
    assert apply(store, text) == [] and everything(store) == before
    # an edit of that bullet is still an edit
    edited = text.replace("The user edits code in Vim", "The user edits code in Helix")
    assert [(c.action, c.before) for c in plan(store, edited).changes] == [
        ("edit", "The user edits code in Vim daily")
    ]


def test_a_plan_change_without_its_memory_id_is_refused_before_any_write(store):
    seed(store)
    before = everything(store)
    bad = ImportPlan(
        USER,
        [
            Change("add", "fact", "The user has a cat"),
            Change("forget", "fact", "The user works at Acme as a data engineer"),
        ],
    )
    with pytest.raises(PlanError, match="a 'forget' change needs the memory_id"):
        apply_import(store, USER, bad, now=T0.isoformat())
    assert everything(store) == before


@pytest.mark.parametrize("user", ["alice smith", "a | exported: x", 'say "hi" -->\n## Facts\n- x'])
def test_any_user_id_reads_back_whole_and_cannot_add_to_the_file(store, user):
    """Any string is a user id: the header keeps it whole (an older parser cut it at a space, and
    a file of another user was then imported without being refused)."""
    ltm = LongTermMemory(store, clock=lambda: T0)
    ltm.upsert(user, [MemoryCandidate(content="The user edits code in Vim", category="preference")])
    memories = list(run_steps(store, memories_steps(user)))
    doc = parse_markdown(render_markdown(user, memories, exported_at=T0.isoformat()))
    assert doc.user_id == user
    assert [b.content for b in doc.bullets] == ["The user edits code in Vim"]
    with pytest.raises(MarkdownError, match="exported for user"):
        plan_import(doc, memories, "alice")


def test_a_file_exported_before_user_ids_were_quoted_still_names_its_user():
    doc = parse_markdown("<!-- engram memory.md | user: alice | exported: 2026-05-01 -->\n")
    assert (doc.user_id, doc.exported_at) == ("alice", "2026-05-01")


def test_a_header_edited_into_bad_json_is_refused_with_what_to_do():
    with pytest.raises(MarkdownError, match="not a valid JSON string: restore it"):
        parse_markdown('<!-- engram memory.md | user: "bad\\x" | exported: 2026-05-01 -->\n')


class _HeldStore(InMemoryStore):
    """Holds against other processes as an embedded ChromaStore does, and counts its holds."""

    exclusive_across_processes = True

    def __init__(self) -> None:
        super().__init__()
        self.holds, self.held = 0, False

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        assert not self.held, "holds nest"
        self.held, self.holds = True, self.holds + 1
        try:
            yield
        finally:
            self.held = False


def test_an_import_is_held_one_change_at_a_time() -> None:
    store = _HeldStore()
    mem = seed(store)
    store.holds = 0
    changes = [
        Change("add", "fact", "The user keeps two cats"),
        Change("forget", "fact", mem["acme"].content, mem["acme"].id),
        Change("restore", "fact", mem["berlin"].content, mem["berlin"].id),
    ]
    applied = apply_import(store, USER, ImportPlan(USER, changes), now=T0.isoformat())
    assert [a.outcome for a in applied] == ["created", "forgotten", "restored"]
    assert store.holds == len(changes)  # other processes wait for one change, not the file
