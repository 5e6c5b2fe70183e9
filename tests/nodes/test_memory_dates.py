"""A memory is dated by when the user said it, and the memory block shows that day, so that
the answering model can tell which of two memories that disagree is the newer one."""

from __future__ import annotations

import itertools
import re
import uuid

import pytest
from fakes import RecordingChatModel
from langchain_core.messages import BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.base import BaseStore
from pydantic import ValidationError

from engram.graph import Context, compile_graph
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.pending import PendingMemories
from engram.stores.memory.types import MemoryCandidate

USER = "dana"


def said(text: str, when: str) -> HumanMessage:
    return HumanMessage(text, id=str(uuid.uuid4()), additional_kwargs={"timestamp": when})


def session(graph, *messages: BaseMessage, **context) -> None:
    config = {"configurable": {"thread_id": str(uuid.uuid4())}}
    graph.invoke({"messages": list(messages), "end_session": True}, config,
                 context=Context(user_id=USER, **context))


def memory_lines(model: RecordingChatModel) -> list[str]:
    system = model.calls[-1][0].text
    block = system[system.index("<user_memory>") : system.index("## Earlier Messages")
                   if "## Earlier Messages" in system else system.index("</user_memory>")]
    return [line for line in block.splitlines() if line.startswith("- ")]


@pytest.mark.parametrize("work", ["inline", "background"])
def test_a_memory_is_dated_by_its_message_and_a_later_thread_sees_both_days(
    store: BaseStore, work: str
) -> None:
    model = RecordingChatModel(messages=itertools.cycle(["noted."]))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    session(graph, said("We use Jira for tickets at work.", "2023-05-08T13:56:00"), memory_work=work)
    session(graph, said("We use Linear for tickets now, the team voted.", "2024-02-01T09:00:00+00:00"),
            memory_work=work)

    by_text = {m.content: m for m in LongTermMemory(store).list(USER)}
    assert by_text["We use Jira for tickets at work."].valid_from == "2023-05-08T13:56:00+00:00"
    assert by_text["We use Linear for tickets now, the team voted."].valid_from.startswith("2024-02-01T09:00")

    graph.invoke({"messages": [HumanMessage("which ticket tool do we use?")]},
                 {"configurable": {"thread_id": "later"}}, context=Context(user_id=USER))
    lines = memory_lines(model)
    assert "- [8 May 2023] We use Jira for tickets at work." in lines
    assert "- [1 February 2024] We use Linear for tickets now, the team voted." in lines


def test_memories_all_said_on_one_day_say_it_once(store: BaseStore) -> None:
    model = RecordingChatModel(messages=itertools.cycle(["noted."]))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    session(graph, said("We use Jira for tickets at work.", "2023-05-08T09:00:00"),
            said("I prefer dark mode in every editor.", "2023-05-08T17:30:00"))
    graph.invoke({"messages": [HumanMessage("which ticket tool and theme do I use?")]},
                 {"configurable": {"thread_id": "later"}}, context=Context(user_id=USER))
    system = model.calls[-1][0].text
    assert "# USER MEMORY (said on 8 May 2023)\n" in system
    assert set(memory_lines(model)) == {"- We use Jira for tickets at work.",
                                        "- I prefer dark mode in every editor."}


def test_the_day_is_the_one_the_user_was_in() -> None:
    from engram.nodes.consolidate import said_when

    late = said("I moved to Lisbon", "2023-05-08T23:30:00-07:00")
    [candidate] = said_when([MemoryCandidate(content="I moved to Lisbon", category="fact")], [late])
    assert candidate.said_at == "2023-05-08T23:30:00-07:00"  # not the 9th, as UTC would say


def test_without_a_message_time_a_memory_is_dated_when_written(store: BaseStore) -> None:
    from engram.nodes.consolidate import said_when

    untimed = HumanMessage("I moved to Lisbon", id="m1")
    [candidate] = said_when([MemoryCandidate(content="I moved to Lisbon", category="fact")], [untimed])
    assert candidate.said_at is None
    [result] = LongTermMemory(store).upsert(USER, [candidate])
    assert result.memory.valid_from == result.memory.created_at


def test_a_candidate_is_dated_by_its_own_message_not_the_newest_of_the_window() -> None:
    from engram.nodes.consolidate import said_when

    first = said("I'm vegan", "2023-05-08T10:00:00+00:00")
    second = said("my cat is Miso", "2023-06-01T10:00:00+00:00")
    vegan = MemoryCandidate(content="I'm vegan", category="preference", message_ids=[first.id])
    unknown = MemoryCandidate(content="my cat is Miso", category="fact", message_ids=["gone"])
    dated = said_when([vegan, unknown], [first, second])
    assert [c.said_at for c in dated] == ["2023-05-08T10:00:00+00:00", "2023-06-01T10:00:00+00:00"]


def test_an_approved_memory_keeps_the_day_it_was_said(store: BaseStore) -> None:
    model = RecordingChatModel(messages=itertools.cycle(["noted."]))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    session(graph, said("We use PostgreSQL 16 for everything.", "2023-05-08T13:56:00"),
            confirm_memories=True)
    pending = PendingMemories(store)
    [waiting] = pending.list(USER)
    assert waiting.said_at == "2023-05-08T13:56:00+00:00"
    result = pending.approve(USER, waiting.id)
    assert result.memory.valid_from == "2023-05-08T13:56:00+00:00"


@pytest.mark.parametrize("bad", ["yesterday", "2023-13-45", ""])
def test_a_said_at_that_is_not_a_time_is_refused_saying_what_to_give(bad: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(f"said_at {bad!r} is not an ISO 8601 time")):
        MemoryCandidate(content="I'm vegan", category="preference", said_at=bad)
