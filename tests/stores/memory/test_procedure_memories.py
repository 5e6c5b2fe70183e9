"""Procedures in the store: the same task done with the same tools twice is one memory with its
uses counted, a replay counts nothing, another workflow or another task done with the same tools is
a memory of its own, an edit re-reads the steps, and `learnings.md` round-trips through export and
import without touching other memories."""

from __future__ import annotations

from langgraph.store.memory import InMemoryStore

from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.manage.edit import edit_steps
from engram.stores.memory.markdown.importer import apply_import, plan_import
from engram.stores.memory.markdown.learnings import (
    is_learnings,
    parse_learnings,
    procedures_of,
    render_learnings,
)
from engram.stores.memory.procedures import (
    Procedure,
    is_procedure,
    parse_procedure,
    same_task,
)
from engram.stores.memory.types import MemoryCandidate
from engram.stores.memory.users import memories_steps
from engram.stores.steps import run_steps

NOW = "2026-11-27T10:00:00+00:00"


def _candidate(task: str, *calls: str) -> MemoryCandidate:
    procedure = Procedure(task, calls)
    return MemoryCandidate(content=procedure.content, category="skill", key=procedure.key,
                           structured_data=procedure.data())


def _procedures(store: InMemoryStore, user: str = "alice") -> list:
    return [m for m in LongTermMemory(store).list(user) if is_procedure(m.structured_data)]


def test_the_same_workflow_twice_is_one_memory_with_its_uses_counted() -> None:
    store = InMemoryStore()
    ltm = LongTermMemory(store)
    [first] = ltm.upsert("alice", [_candidate("Fix the checkout outage", 'logs(service="checkout")',
                                              "restart()")], message_ids=["m1", "m2"])
    assert first.action == "created"
    [again] = ltm.upsert("alice", [_candidate("Please fix the checkout outage again.",
                                              'logs(service="cart")', "restart()")],
                         message_ids=["m7", "m8"])
    assert again.action == "merged" and again.memory.id == first.memory.id
    [kept] = _procedures(store)
    assert kept.structured_data["uses"] == 2
    assert kept.structured_data["workflow"] == [
        {"step": 1, "tool": "logs", "call": 'logs(service="cart")'},
        {"step": 2, "tool": "restart", "call": "restart()"},
    ]
    assert kept.content.startswith("Steps that worked for: Please fix the checkout outage again.")
    # the same run written again (a replay) counts nothing
    [replay] = ltm.upsert("alice", [_candidate("Please fix the checkout outage again.",
                                               'logs(service="cart")', "restart()")],
                          message_ids=["m7", "m8"])
    assert replay.action == "unchanged"
    # the same text from another run is a use too
    [same] = ltm.upsert("alice", [_candidate("Please fix the checkout outage again.",
                                             'logs(service="cart")', "restart()")],
                        message_ids=["m9"])
    assert same.action == "merged"
    assert _procedures(store)[0].structured_data["uses"] == 3
    # another workflow for a similar task is a procedure of its own
    [other] = ltm.upsert("alice", [_candidate("Fix the checkout outage", "logs()", "rollback()")],
                         message_ids=["m20"])
    assert other.action == "created" and len(_procedures(store)) == 2
    # and nobody else's
    assert _procedures(store, "bob") == []


def test_other_tasks_done_with_the_same_tools_are_memories_of_their_own() -> None:
    store = InMemoryStore()
    ltm = LongTermMemory(store)
    [flights] = ltm.upsert("alice", [_candidate("Find flights to Paris for Friday",
                                                'search(q="flights Paris")', "fetch(url=1)")],
                           message_ids=["f1"])
    [weather] = ltm.upsert("alice", [_candidate("Check the weather in Paris",
                                                'search(q="weather Paris")', "fetch(url=2)")],
                           message_ids=["w1"])
    [news] = ltm.upsert("alice", [_candidate("Summarize today's news about Paris",
                                             'search(q="Paris news")', "fetch(url=3)")],
                        message_ids=["n1"])
    assert [r.action for r in (flights, weather, news)] == ["created"] * 3
    assert len({flights.memory.id, weather.memory.id, news.memory.id}) == 3
    # none superseded the other: all three are current, each with its own task and one use
    kept = {m.structured_data["skill_name"]: m.structured_data["uses"] for m in _procedures(store)}
    assert kept == {"Find flights to Paris for Friday": 1, "Check the weather in Paris": 1,
                    "Summarize today's news about Paris": 1}
    # the flights task again counts a use of the flights procedure only
    [again] = ltm.upsert("alice", [_candidate("find flights to Paris for Friday please",
                                              'search(q="Paris flights")', "fetch(url=4)")],
                         message_ids=["f2"])
    assert again.action == "merged" and again.memory.id == flights.memory.id
    uses = {m.id: m.structured_data["uses"] for m in _procedures(store)}
    assert uses == {flights.memory.id: 2, weather.memory.id: 1, news.memory.id: 1}
    assert "weather" not in again.memory.content


def test_the_same_task_is_judged_by_its_terms() -> None:
    assert same_task("Fix the checkout outage", "please fix the checkout outage again")
    assert same_task("帮我查一下去巴黎的航班", "帮我查一下去巴黎的航班！")
    assert not same_task("Fix the checkout outage", "Fix the payments outage")
    assert not same_task("find flights", "check the weather")
    assert not same_task("查一下巴黎的天气", "帮我订去巴黎的机票")


def test_a_secret_in_a_call_never_reaches_the_store() -> None:
    store = InMemoryStore()
    [result] = LongTermMemory(store).upsert("alice", [_candidate(
        "Deploy the API", 'login(password="hunter22-Quokka")', "deploy()"
    )])
    stored = str(store.get(("memories", "alice"), result.memory.id).value)
    assert "hunter22" not in stored and "[REDACTED]" in stored


def test_an_edit_reads_the_new_steps_and_keeps_the_uses() -> None:
    store = InMemoryStore()
    ltm = LongTermMemory(store)
    [r] = ltm.upsert("alice", [_candidate("Ship it", "build()", "deploy()")], message_ids=["a"])
    ltm.upsert("alice", [_candidate("Ship it now", "build()", "deploy()")], message_ids=["b"])
    edited = Procedure("Ship it now", ("test()", "build()", "deploy()")).content
    new = run_steps(store, edit_steps("alice", r.memory.id, edited, "skill", NOW))
    assert [s["tool"] for s in new.structured_data["workflow"]] == ["test", "build", "deploy"]
    assert new.structured_data["uses"] == 2 and new.key == "skill.procedure.test.build.deploy"


def test_learnings_md_round_trips_and_applies_edits() -> None:
    store = InMemoryStore()
    ltm = LongTermMemory(store)
    ltm.upsert("alice", [MemoryCandidate(content="I prefer dark mode", category="preference")])
    ltm.upsert("alice", [_candidate("Fix the checkout outage", "logs()", "restart()")],
               message_ids=["a"])
    ltm.upsert("alice", [_candidate("Publish the docs", "build_docs()", "upload()")],
               message_ids=["b"])
    memories = run_steps(store, memories_steps("alice"))
    text = render_learnings("alice", memories, exported_at="2099-01-01T00:00:00+00:00")
    assert is_learnings(text) and "dark mode" not in text
    assert "## Fix the checkout outage <!-- id:" in text and "1. logs()" in text

    unchanged = plan_import(parse_learnings(text), procedures_of(memories), "alice")
    assert unchanged.changes == []

    edited = (
        text.replace("2. restart()", "2. restart()\n3. check_health()")
        .split("## Publish the docs")[0]  # the docs procedure is left out: forgotten
        + "## Rotate the logs\n\n1. compress_logs(days=7)\n2. upload()\n"
    )
    plan = plan_import(parse_learnings(edited), procedures_of(memories), "alice")
    assert sorted(c.action for c in plan.changes) == ["add", "edit", "forget"]
    apply_import(store, "alice", plan, now=NOW)

    current = {m.content.splitlines()[0]: m for m in _procedures(store)}
    assert sorted(current) == [
        "Steps that worked for: Fix the checkout outage",
        "Steps that worked for: Rotate the logs",
    ]
    fixed = current["Steps that worked for: Fix the checkout outage"].structured_data
    assert [s["tool"] for s in fixed["workflow"]] == ["logs", "restart", "check_health"]
    added = current["Steps that worked for: Rotate the logs"]
    assert added.category == "skill" and added.structured_data["workflow"][0]["call"] == (
        "compress_logs(days=7)"
    )
    # the other memories are memory.md's: untouched
    assert [m.content for m in LongTermMemory(store).list("alice", categories=["preference"])] == [
        "I prefer dark mode"
    ]


def test_a_section_without_steps_is_refused_with_its_line() -> None:
    import pytest

    from engram.stores.memory.markdown.format import MarkdownError

    with pytest.raises(MarkdownError, match="line 3: a procedure needs a task"):
        parse_learnings("# Learnings of alice\n\n## Deploy the API\nrun the thing\n")
    assert parse_procedure("I use Vim") is None
