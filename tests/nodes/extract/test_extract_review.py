"""The review extractor: the offline rules propose, the memory model keeps and classifies."""

from __future__ import annotations

import pytest
from fakes import StructuredFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import ValidationError

from engram.nodes.extract.llm import ExtractionError
from engram.nodes.extract.review import REVIEW_CONFIDENCE, ReviewExtractor, review_schema
from engram.nodes.extract.rules import RuleExtractor

WINDOW = [
    HumanMessage("I prefer Svelte over React now.", id="m1"),
    AIMessage("Noted.", id="m2"),
    HumanMessage("we deploy relay with ArgoCD 2.9, my password is hunter2-Xq93kfT0pLm", id="m3"),
    AIMessage("Got it.", id="m4"),
]


def review(n: int, keep: bool, category: str) -> dict:
    return {"n": n, "keep": keep, "category": category}


async def test_the_model_reviews_each_candidate_the_rules_propose():
    proposed = RuleExtractor().extract(WINDOW)
    assert len(proposed) == 2 and proposed[0].key == "preference.frontend_framework"
    model = StructuredFakeChatModel(structured_responses=[{"reviews": [
        review(1, True, "preference"),
        review(2, False, "project"),
    ]}])
    [kept] = await ReviewExtractor(model).aextract(WINDOW)
    assert (kept.content, kept.category, kept.key, kept.confidence) == (
        proposed[0].content, "preference", "preference.frontend_framework", REVIEW_CONFIDENCE
    )
    [(_, sent)] = model.structured_calls
    prompt = "\n".join(m.text for m in sent)
    # the numbered candidates with the rules' guess, the request right after them; no transcript
    assert prompt.index("1. [preference] I prefer Svelte") < prompt.index("2. [fact] we deploy relay")
    assert prompt.index("2. [fact] we deploy relay") < prompt.rindex("answer as JSON")
    assert "Noted." not in prompt and "Got it." not in prompt
    # secrets never reach the model (a clause that only holds one is no part of a candidate)
    assert "hunter2" not in prompt and "my password" not in prompt


async def test_kept_candidates_take_the_models_category_and_keep_the_users_words():
    proposed = RuleExtractor().extract(WINDOW)
    model = StructuredFakeChatModel(structured_responses=[{"reviews": [
        review(1, True, "fact"),
        review(2, True, "project"),
    ]}])
    first, second = await ReviewExtractor(model).aextract(WINDOW)
    assert (first.content, first.category) == ("I prefer Svelte over React now.", "fact")
    assert (second.content, second.category) == (proposed[1].content, "project")
    assert proposed[1].category == "fact" and second.key == proposed[1].key
    assert second.content.startswith("we deploy relay with ArgoCD 2.9")
    assert "hunter2" not in second.content


async def test_no_candidate_means_no_model_call():
    model = StructuredFakeChatModel(structured_responses=[])
    found = await ReviewExtractor(model).aextract([HumanMessage("thanks, that's all!", id="m1")])
    assert found == [] and model.structured_calls == []


async def test_an_unusable_answer_is_retried_once_then_raises():
    model = StructuredFakeChatModel(structured_responses=[
        {"reviews": [review(1, True, "fact")]},  # one verdict for two candidates
        {"reviews": [review(1, True, "mood"), review(2, True, "fact")]},
    ])
    with pytest.raises(ExtractionError):
        await ReviewExtractor(model).aextract(WINDOW)
    assert len(model.structured_calls) == 2
    assert "could not be used" in model.structured_calls[1][1][-1].text


def test_the_schema_asks_for_exactly_one_verdict_per_candidate_and_no_wording():
    schema = review_schema(2)
    one = review(1, True, "fact")
    assert len(schema.model_validate({"reviews": [one, one]}).reviews) == 2
    for wrong in ([one], [one, one, one]):
        with pytest.raises(ValidationError):
            schema.model_validate({"reviews": wrong})
    json_schema = schema.model_json_schema()
    items = json_schema["properties"]["reviews"]
    assert (items["minItems"], items["maxItems"]) == (2, 2)
    # the model answers a number, a category and keep: nothing it could write a memory with
    [verdict] = json_schema["$defs"].values()
    assert set(verdict["properties"]) == {"n", "category", "keep"}


async def test_what_a_change_names_reaches_the_write_policy_reviewed_or_offered_as_an_update():
    window = [
        HumanMessage("change of plans. scratch the ingress-nginx idea, we go with the AWS Load "
                     "Balancer Controller", id="m1"),
        HumanMessage("潜店就换成仙本那的一家 叫海猫潜水 也是中文教练", id="m2"),
        HumanMessage("the coffee machine died again lol", id="m3"),
    ]
    proposed = RuleExtractor().extract(window)
    reviewed = [c for c in proposed if not c.update_only]
    model = StructuredFakeChatModel(structured_responses=[{"reviews": [
        review(i, True, "project") for i in range(1, len(reviewed) + 1)
    ]}])
    found = {c.message_ids[0]: c for c in await ReviewExtractor(model).aextract(window)}
    assert found["m1"].replaces == "the ingress-nginx idea" and not found["m1"].update_only
    # the rules keep nothing else of m2: it is offered once, as an update naming what it changes
    assert found["m2"].update_only and found["m2"].replaces == "潜店就 仙本那的一家"
    # m3 names nothing: offered as an update only the merge decider can place
    assert found["m3"].update_only and found["m3"].replaces is None
    assert len(found) == len(await ReviewExtractor(StructuredFakeChatModel(structured_responses=[
        {"reviews": [review(i, True, "project") for i in range(1, len(reviewed) + 1)]}
    ])).aextract(window))
