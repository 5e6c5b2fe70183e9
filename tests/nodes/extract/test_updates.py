"""Statements the rules find nothing in, offered to the memory model as updates only."""

from __future__ import annotations

from fakes import StructuredFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage

from engram.nodes.extract.review import ReviewExtractor
from engram.nodes.extract.rules import RuleExtractor
from engram.nodes.extract.updates import update_candidates

CHANGE = "rosa comes every weekday morning now, the agency found funding"
WINDOW = [
    HumanMessage("I prefer Svelte over React now.", id="m1"),
    AIMessage("Noted.", id="a1"),
    HumanMessage(CHANGE, id="m2"),
    AIMessage("That's great news.", id="a2"),
    HumanMessage("haha ok thanks!", id="m3"),
    HumanMessage("what do you think about weekday mornings?", id="m4"),
    HumanMessage("maybe we'll move to Leeds next year", id="m5"),
    HumanMessage("if we switch to Linear we'd lose the Jira history", id="m6"),
    HumanMessage("my new password is Zq8-hunter2-Lp0x", id="m7"),
    HumanMessage("ok", id="m8"),
]


def test_only_statements_the_rules_found_nothing_in_are_offered():
    proposed = RuleExtractor().extract(WINDOW)
    assert [c.message_ids for c in proposed] == [["m1"]]  # the rules miss the change
    [offered] = update_candidates(WINDOW, proposed)
    # not small talk, a question, a hedge, a hypothesis, a lone secret or a bare "ok"
    assert (offered.content, offered.message_ids, offered.update_only) == (CHANGE, ["m2"], True)


def test_an_offered_statement_is_redacted_and_loses_its_fillers_and_requests():
    said = "ugh ok. vet put her on hills z/d, the orijen is gone, my login is bob / Zq8-hunter2-Lp0x. can you plan her meals?"
    [offered] = update_candidates([HumanMessage(said, id="m1")], [])
    assert "hunter2" not in offered.content and "can you" not in offered.content
    assert offered.content.startswith("vet put her on hills z/d, the orijen is gone")


async def test_the_review_extractor_returns_updates_after_the_reviewed_candidates():
    model = StructuredFakeChatModel(structured_responses=[
        {"reviews": [{"n": 1, "keep": True, "category": "preference"}]},
    ])
    found = await ReviewExtractor(model).aextract(WINDOW)
    assert [(c.content, c.update_only) for c in found] == [
        ("I prefer Svelte over React now.", False), (CHANGE, True)
    ]
    # the model reviews only the rules' candidates; updates are for the merge decision
    [(_, sent)] = model.structured_calls
    assert CHANGE not in "\n".join(m.text for m in sent)


async def test_a_window_of_updates_only_costs_no_review_call():
    model = StructuredFakeChatModel(structured_responses=[])
    [found] = await ReviewExtractor(model).aextract([HumanMessage(CHANGE, id="m2")])
    assert found.update_only and model.structured_calls == []
