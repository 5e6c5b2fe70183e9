"""The review extractor: the offline rules propose, the memory model keeps, classifies and words."""

from __future__ import annotations

import pytest
from fakes import StructuredFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from pydantic import ValidationError

from engram.nodes.extract.llm import ExtractionError
from engram.nodes.extract.review import ReviewExtractor, accepted_note, review_schema
from engram.nodes.extract.rules import RuleExtractor

WINDOW = [
    HumanMessage("I prefer Svelte over React now.", id="m1"),
    AIMessage("Noted.", id="m2"),
    HumanMessage("we deploy relay with ArgoCD 2.9, my password is hunter2-Xq93kfT0pLm", id="m3"),
    AIMessage("Got it.", id="m4"),
]


def review(n: int, keep: bool, category: str, note: str) -> dict:
    return {"n": n, "keep": keep, "category": category, "note": note}


async def test_the_model_reviews_each_candidate_the_rules_propose():
    proposed = RuleExtractor().extract(WINDOW)
    assert len(proposed) == 2 and proposed[0].key == "preference.frontend_framework"
    model = StructuredFakeChatModel(structured_responses=[{"reviews": [
        review(1, True, "preference", "Prefers Svelte over React."),
        review(2, False, "project", "Deploys relay with ArgoCD 2.9."),
    ]}])
    [kept] = await ReviewExtractor(model).aextract(WINDOW)
    assert (kept.content, kept.category, kept.key) == (
        "Prefers Svelte over React.", "preference", "preference.frontend_framework"
    )
    [(_, sent)] = model.structured_calls
    prompt = "\n".join(m.text for m in sent)
    # the numbered candidates with the rules' guess, the request right after them; no transcript
    assert prompt.index("1. [preference] I prefer Svelte") < prompt.index("2. [fact] we deploy relay")
    assert prompt.index("2. [fact] we deploy relay") < prompt.rindex("answer as JSON")
    assert "Noted." not in prompt and "Got it." not in prompt
    # secrets never reach the model (a clause that only holds one is no part of a candidate)
    assert "hunter2" not in prompt and "my password" not in prompt


async def test_the_models_category_wins_and_a_bad_wording_leaves_the_users_words():
    model = StructuredFakeChatModel(structured_responses=[{"reviews": [
        review(1, True, "fact", "The assistant noted that the user prefers Svelte."),
        review(2, True, "project", "Deploys relay with ArgoCD 3.0 on Kubernetes."),
    ]}])
    first, second = await ReviewExtractor(model).aextract(WINDOW)
    assert (first.content, first.category) == ("I prefer Svelte over React now.", "fact")
    assert second.category == "project" and second.content.startswith("we deploy relay with ArgoCD 2.9")


async def test_no_candidate_means_no_model_call():
    model = StructuredFakeChatModel(structured_responses=[])
    found = await ReviewExtractor(model).aextract([HumanMessage("thanks, that's all!", id="m1")])
    assert found == [] and model.structured_calls == []


async def test_an_unusable_answer_is_retried_once_then_raises():
    model = StructuredFakeChatModel(structured_responses=[
        {"reviews": [review(1, True, "fact", "x")]},  # one verdict for two candidates
        {"reviews": [review(1, True, "mood", "x"), review(2, True, "fact", "y")]},
    ])
    with pytest.raises(ExtractionError):
        await ReviewExtractor(model).aextract(WINDOW)
    assert len(model.structured_calls) == 2
    assert "could not be used" in model.structured_calls[1][1][-1].text


def test_the_schema_asks_for_exactly_one_verdict_per_candidate():
    schema = review_schema(2)
    one = review(1, True, "fact", "a")
    assert len(schema.model_validate({"reviews": [one, one]}).reviews) == 2
    for wrong in ([one], [one, one, one]):
        with pytest.raises(ValidationError):
            schema.model_validate({"reviews": wrong})
    items = schema.model_json_schema()["properties"]["reviews"]
    assert (items["minItems"], items["maxItems"]) == (2, 2)


@pytest.mark.parametrize(
    ("original", "note", "said", "used"),
    [
        ("we run Node 20 on EKS", "Runs Node 20 on EKS.", None, True),
        ("we run Node 20 on EKS", "Runs Node on EKS.", None, False),  # lost a detail
        ("we run Node 20 on EKS", "Runs Node 20 on EKS in us-east-1.", None, False),  # invented
        ("they put me on Harbor", "Works on Harbor, a Kotlin 1.9 service.",
         "they put me on Harbor\nkotlin 1.9, java 21", True),  # details from the user's messages
        ("I prefer tabs", "The user said in the conversation that they prefer tabs.", None, False),
        ("我妈对花生过敏", "母はピーナッツアレルギーです。", None, False),  # another script
        ("我妈对花生过敏", "用户的妈妈对花生过敏。", None, True),
        ("I like Go", "I like Go " + "very " * 30, None, False),  # much longer than the original
    ],
)
def test_the_models_wording_is_used_only_when_it_keeps_to_what_the_user_said(
    original, note, said, used
):
    assert (accepted_note(original, note, said) is not None) is used
