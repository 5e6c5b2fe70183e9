"""LongTermMemory: the write policy, recall ranking and management, on every store, sync and async.

Each test runs on langgraph's InMemoryStore and on ChromaStore (ephemeral client), through the
sync and the async API, with the deterministic n-gram embeddings.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, timezone
from typing import Any
from uuid import uuid4

import chromadb
import pytest
from fakes import NGramEmbeddings
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from engram.stores.chroma import metadata as md
from engram.stores.chroma.store import ChromaStore
from engram.stores.lexical.fusion import relative_score_fusion
from engram.stores.lexical.hybrid import supports_hybrid
from engram.stores.memory.long_term import LongTermMemory, Memory, MemoryCandidate
from engram.stores.memory.recall import search_steps
from engram.stores.memory.types import (
    combined_score,
    content_hash,
    memory_put,
    merge_content,
    recency,
)
from engram.stores.secrets import REDACTED, luhn_valid, redact

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
USER = "alice"


class Api:
    """Calls LongTermMemory's sync methods, or its async ones run to completion."""

    def __init__(self, ltm: LongTermMemory, mode: str) -> None:
        self.ltm = ltm
        self.mode = mode

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if self.mode == "sync":
            return getattr(self.ltm, name)
        method = getattr(self.ltm, "a" + name)
        return lambda *args, **kwargs: asyncio.run(method(*args, **kwargs))


@pytest.fixture(params=["memory", "chroma"])
def store(request) -> Iterator[BaseStore]:
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    if request.param == "memory":
        yield InMemoryStore(index=index)
        return
    chroma = ChromaStore(chromadb.EphemeralClient(), collection=f"m-{uuid4().hex[:16]}", index=index)
    yield chroma
    chroma.close()


@pytest.fixture(params=["sync", "async"])
def api(request, store) -> Api:
    return Api(LongTermMemory(store, clock=lambda: NOW), request.param)


def cand(content: str, category: str = "preference", **kw: Any) -> MemoryCandidate:
    return MemoryCandidate(content=content, category=category, **kw)


def all_values(store: BaseStore, user: str = USER) -> list[dict]:
    items = store.search(("memories", user), limit=1000) + store.search(("memory_hashes", user), limit=1000)
    return [i.value for i in items]


def cosine(a: str, b: str) -> float:
    x, y = NGramEmbeddings().embed_documents([a, b])
    return sum(p * q for p, q in zip(x, y))


# -- add, provenance, value model --------------------------------------------------------------

def test_add_stores_a_memory_with_provenance_and_defaults(api, store):
    [result] = api.upsert(USER, [cand("I prefer dark mode in every editor")], thread_id="t1", message_ids=["m1", "m2"])
    assert result.action == "created"
    memory = api.get(USER, result.memory.id)
    assert memory.content == "I prefer dark mode in every editor"
    assert (memory.category, memory.importance) == ("preference", 0.9)  # the category's default
    assert (memory.source_thread_id, memory.source_message_ids) == ("t1", ["m1", "m2"])
    assert memory.valid_from == memory.created_at == memory.updated_at == NOW.isoformat()
    assert memory.valid_until is None and memory.current and not memory.forgotten
    assert memory.access_count == 0 and memory.last_accessed is None
    raw = store.get(("memories", USER), memory.id).value
    assert raw["current"] is True and raw["forgotten"] is False


def test_candidate_message_ids_override_the_batch_ids(api):
    [result] = api.upsert(USER, [cand("I live in Lisbon", "fact", message_ids=["m7"])], thread_id="t", message_ids=["m1", "m2"])
    assert result.memory.source_message_ids == ["m7"]


def test_candidates_below_min_importance_are_dropped(api, store):
    [low, ok] = api.upsert(USER, [cand("I sometimes like jazz", importance=0.3), cand("I like jazz a lot", importance=0.5)])
    assert low.action == "dropped" and ok.action == "created"
    assert [v["content"] for v in all_values(store) if "content" in v] == ["I like jazz a lot"]


def test_user_ids_are_isolated_and_validated(api):
    api.upsert("bob", [cand("I prefer tabs over spaces")])
    assert api.search(USER, "tabs or spaces") == []
    assert [s.memory.content for s in api.search("bob", "tabs or spaces")] == ["I prefer tabs over spaces"]
    assert api.search("bob@example.com", "tabs or spaces") == []
    with pytest.raises(ValueError, match="non-empty string"):
        api.search("", "x")


# -- write policy ------------------------------------------------------------------------------

def test_exact_duplicate_keeps_one_memory_with_max_importance(api, store):
    [first] = api.upsert(USER, [cand("I prefer dark mode.", importance=0.6)], thread_id="t1", message_ids=["m1"])
    [again] = api.upsert(USER, [cand("  i PREFER dark   mode", importance=0.95)], thread_id="t2", message_ids=["m9"])
    assert again.action == "duplicate" and again.memory.id == first.memory.id
    assert again.memory.importance == 0.95
    assert again.memory.source_message_ids == ["m1", "m9"]
    [lower] = api.upsert(USER, [cand("I prefer dark mode", importance=0.5)], message_ids=["m9"])
    assert lower.action == "unchanged" and lower.memory.importance == 0.95
    assert len(api.list(USER)) == 1


def test_near_duplicate_in_same_category_merges(api):
    short, longer = "I always use pnpm for JavaScript projects", "I always use pnpm for JavaScript projects at work"
    assert cosine(short, longer) >= 0.9
    [a] = api.upsert(USER, [cand(short, importance=0.7)], message_ids=["m1"])
    [b] = api.upsert(USER, [cand(longer, importance=0.8)], message_ids=["m2"])
    assert b.action == "merged" and b.memory.id == a.memory.id
    assert b.memory.content == longer  # the text that contains the other wins
    assert b.memory.importance == 0.8 and b.memory.source_message_ids == ["m1", "m2"]
    assert len(api.list(USER)) == 1


def test_near_duplicate_in_another_category_is_not_merged(api):
    text = "I always use pnpm for JavaScript projects"
    api.upsert(USER, [cand(text)])
    [other] = api.upsert(USER, [cand(text + " at work", "fact")])
    assert other.action == "created"
    assert len(api.list(USER)) == 2


def test_changed_preference_supersedes_and_keeps_history(api, store):
    vue = cand("I like Vue for frontend work", key="preference.frontend_framework", structured_data={"value": "Vue"})
    react = cand("I prefer React over Vue now", key="preference.frontend_framework", structured_data={"value": "React"})
    [old] = api.upsert(USER, [vue], thread_id="t1", message_ids=["m1"])
    [new] = api.upsert(USER, [react], thread_id="t2", message_ids=["m5"])
    assert new.action == "superseded"
    assert new.memory.supersedes == [old.memory.id]
    [replaced] = new.superseded
    assert replaced.id == old.memory.id and replaced.valid_until == new.memory.valid_from
    stored_old = api.get(USER, old.memory.id)
    assert not stored_old.current and stored_old.superseded_by == new.memory.id
    assert store.get(("memories", USER), old.memory.id).value["current"] is False
    assert [s.memory.id for s in api.search(USER, "frontend framework Vue React")] == [new.memory.id]
    everything = {s.memory.id for s in api.search(USER, "frontend framework Vue React", include_superseded=True)}
    assert everything == {old.memory.id, new.memory.id}
    assert {m.id for m in api.list(USER, include_superseded=True)} == everything


def test_an_answer_that_changes_what_was_asked_about_supersedes_it(api):
    [gpu] = api.upsert(USER, [cand("saving for a new GPU, got 180 out of 600", "goal")])
    [job] = api.upsert(USER, [cand("I work shifts at the cinema on weekends", "fact")])
    deck = cand(
        "Still saving for the GPU? scratch the gpu, getting a steam deck instead",
        "goal",
        replaces="saving for the GPU?",
    )
    [new] = api.upsert(USER, [deck])
    assert new.action == "superseded" and [m.id for m in new.superseded] == [gpu.memory.id]
    assert not api.get(USER, gpu.memory.id).current and api.get(USER, job.memory.id).current


def test_a_change_answer_retires_nothing_the_question_does_not_name(api):
    [job] = api.upsert(USER, [cand("I work shifts at the cinema on weekends", "fact")])
    moved = cand("Still in the old flat? nope, we moved to Leith", "fact", replaces="in the old flat?")
    [new] = api.upsert(USER, [moved])
    assert new.action == "created" and api.get(USER, job.memory.id).current


def test_same_key_same_value_confirms_instead_of_superseding(api):
    [a] = api.upsert(USER, [cand("I prefer React", key="preference.frontend_framework", structured_data={"value": "React"})])
    [b] = api.upsert(USER, [cand("React is my favourite frontend framework", key="preference.frontend_framework",
                                 structured_data={"value": "react"})])
    assert b.action == "merged" and b.memory.id == a.memory.id and b.memory.current


def test_restating_an_old_value_supersedes_the_current_one(api):
    key = {"key": "preference.editor"}
    [vim] = api.upsert(USER, [cand("I use Vim", **key)], message_ids=["m1"])
    [code] = api.upsert(USER, [cand("I use VS Code now", **key)], message_ids=["m2"])
    [back] = api.upsert(USER, [cand("I use Vim", **key)], message_ids=["m3"])
    assert back.action == "superseded" and back.memory.id not in (vim.memory.id, code.memory.id)
    assert [m.content for m in api.list(USER)] == ["I use Vim"]
    assert len(api.list(USER, include_superseded=True)) == 3


def test_replaying_the_same_candidates_writes_nothing(api, store):
    batch = [
        cand("I like Vue for frontend work", key="preference.frontend_framework", structured_data={"value": "Vue"}),
        cand("I prefer React over Vue now", key="preference.frontend_framework", structured_data={"value": "React"}),
        cand("Docker builds need proxy-env on this network", "lesson"),
        cand("I always use pnpm for JavaScript projects"),
        cand("I always use pnpm for JavaScript projects at work"),
    ]
    first = api.upsert(USER, batch, thread_id="t1", message_ids=["m1", "m2", "m3"])
    assert [r.action for r in first] == ["created", "superseded", "created", "created", "merged"]
    before = sorted(map(repr, all_values(store)))
    second = api.upsert(USER, batch, thread_id="t1", message_ids=["m1", "m2", "m3"])
    assert [r.action for r in second] == ["unchanged"] * 5
    assert sorted(map(repr, all_values(store))) == before
    assert sorted(m.content for m in api.list(USER, categories=["preference"])) == [
        "I always use pnpm for JavaScript projects at work", "I prefer React over Vue now"]


# -- secrets -----------------------------------------------------------------------------------

SECRETS = {
    "sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv": "My OpenAI key is sk-proj-4fGh7Jk9Lm2Np5Qr8St1Uv",
    "hunter2xyz": "my password is hunter2xyz",
    "s3cr3t-pa55": "我的密码是s3cr3t-pa55",
    "4111 1111 1111 1111": "My card number is 4111 1111 1111 1111",
    "AKIAIOSFODNN7EXAMPLE": "AKIAIOSFODNN7EXAMPLE is the AWS key",
    "MIIEowIBAAKCAQEA": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
}


def test_secrets_are_never_stored(api, store):
    candidates = [cand(text, "fact") for text in SECRETS.values()]
    candidates.append(cand("I deploy staging with the token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "skill"))
    candidates.append(cand("I prefer Postgres", structured_data={"value": "Postgres", "dsn": "postgres://bob:hunter2xyz@db/x"}))
    results = api.upsert(USER, candidates, thread_id="t1", message_ids=["m1"])
    assert [r.action for r in results[: len(SECRETS)]] == ["dropped"] * len(SECRETS)
    assert [r.action for r in results[len(SECRETS):]] == ["created", "created"]
    assert results[-2].memory.content == f"I deploy staging with the token {REDACTED}"
    dump = repr(all_values(store))
    for secret in [*SECRETS, "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "hunter2xyz"]:
        assert secret not in dump


def test_a_secret_in_the_key_is_redacted_as_in_the_text(api, store):
    token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    first = cand("I deploy with the CI bot", "skill").model_copy(update={"key": f"deploy.{token}"})
    [result] = api.upsert(USER, [first], thread_id="t1", message_ids=["m1"])
    assert result.memory.key == f"deploy.{REDACTED}"
    again = cand("I deploy with the release bot", "skill").model_copy(update={"key": f"deploy.{token}"})
    [changed] = api.upsert(USER, [again], thread_id="t1", message_ids=["m2"])
    assert changed.action == "superseded"  # the same key, compared redacted
    assert token not in repr(all_values(store))


@pytest.mark.parametrize(
    ("text", "kinds"),
    [
        ("key sk-abcdefghijklmnopqrstuvwxyz", ["openai_key"]),
        ("AKIAIOSFODNN7EXAMPLE", ["aws_access_key"]),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", ["github_token"]),
        ("the password is 'correct horse'", ["password"]),
        ("password: p@ss.w0rd!", ["password"]),
        ("密码是abc123", ["password"]),
        ("card 4242-4242-4242-4242 expires soon", ["card_number"]),
        ("Authorization: Bearer abcdefghijklmnop1234", ["bearer_token"]),
        ("-----BEGIN OPENSSH PRIVATE KEY-----\nabc", ["private_key"]),
    ],
)
def test_redact_finds_each_kind(text, kinds):
    result = redact(text)
    assert result.kinds == kinds and REDACTED in result.text


@pytest.mark.parametrize(
    "text",
    ["call me at 13812345678", "the token limit is 4096", "order 1234 5678 9012 3456", "We use PostgreSQL 16", "版本号是 3.12"],
)
def test_redact_leaves_ordinary_text_alone(text):
    assert redact(text).text == text


def test_luhn():
    assert luhn_valid("4111111111111111") and luhn_valid("79927398713")
    assert not luhn_valid("4111111111111112")


# -- recall ------------------------------------------------------------------------------------

def put_memory(store: BaseStore, content: str, importance: float, age_days: float, category: str = "fact") -> Memory:
    stamp = (NOW - timedelta(days=age_days)).isoformat()
    memory = Memory.new(content, category, importance, now=stamp)
    store.put(("memories", USER), memory.id, memory.to_value(), index=["content"])
    return memory


def test_combined_score_orders_hand_computed_cases(api, store):
    query = "which database does the team use"
    cases = {
        "similar_but_old_and_minor": put_memory(store, "the team uses a database", 0.5, 120),
        "less_similar_but_important_and_fresh": put_memory(store, "the team uses PostgreSQL 16 in production", 1.0, 0),
        "unrelated": put_memory(store, "I have two cats", 0.9, 1),
    }
    relevance = {m.id: cosine(query, m.content) for m in cases.values()}
    if supports_hybrid(store):  # the BM25 channel fused in: min-max each channel, mean of both
        lexical = store.lexical.search(("memories", USER), query, 50)
        keys = {md.item_id(("memories", USER), m.id): m.id for m in cases.values()}
        dense = sorted(relevance.items(), key=lambda pair: -pair[1])
        relevance = dict(relative_score_fusion([(keys[i], s) for i, s in lexical], dense))
    expected = {}
    for name, memory in cases.items():
        expected[name] = 0.6 * relevance[memory.id] + 0.25 * memory.importance + 0.15 * 0.5 ** (
            (NOW - datetime.fromisoformat(memory.updated_at)).days / 30)
    assert cosine(query, cases["similar_but_old_and_minor"].content) > cosine(
        query, cases["less_similar_but_important_and_fresh"].content)
    results = api.search(USER, query, k=3, ranking="recall")
    by_id = {m.id: name for name, m in cases.items()}
    assert [by_id[r.memory.id] for r in results] == sorted(expected, key=expected.get, reverse=True)
    if not supports_hybrid(store):  # importance and recency outweigh a little similarity
        assert by_id[results[0].memory.id] == "less_similar_but_important_and_fresh"
    for r in results:
        assert r.score == pytest.approx(expected[by_id[r.memory.id]], abs=1e-4)
        assert r.similarity == pytest.approx(cosine(query, r.memory.content), abs=1e-4)
        assert r.relevance == pytest.approx(relevance[r.memory.id], abs=1e-4)


def test_recency_counts_from_the_last_recall_as_well_as_the_last_update(api, store):
    old = put_memory(store, "the team deploys with Helm charts", 0.8, 90)
    [before] = api.search(USER, "how do we deploy", k=1)
    assert before.recency == pytest.approx(0.5 ** 3)  # updated 90 days ago, never recalled
    [after] = api.search(USER, "how do we deploy", k=1)  # the first search recalled it now
    assert after.memory.id == old.id and after.recency == pytest.approx(1.0)


def test_combined_score_formula():
    assert combined_score(0.5, 0.8, 1.0) == pytest.approx(0.65)
    assert recency(NOW - timedelta(days=30), NOW) == pytest.approx(0.5)
    assert recency(NOW - timedelta(days=60), NOW) == pytest.approx(0.25)
    assert recency(NOW + timedelta(days=1), NOW) == 1.0
    assert math.isclose(combined_score(1.0, 1.0, 1.0), 1.0)


def test_search_counts_access_without_touching_recency(api):
    [created] = api.upsert(USER, [cand("I prefer dark mode")])
    api.search(USER, "dark mode")
    [hit] = api.search(USER, "dark mode")
    assert hit.memory.access_count == 2 and hit.memory.last_accessed == NOW.isoformat()
    stored = api.get(USER, created.memory.id)
    assert stored.access_count == 2 and stored.updated_at == created.memory.updated_at
    [quiet] = api.search(USER, "dark mode", touch=False)
    assert quiet.memory.access_count == 2 and api.get(USER, created.memory.id).access_count == 2


def test_search_filters_by_category_and_k(api):
    api.upsert(USER, [
        cand("Docker builds need proxy-env", "lesson"),
        cand("Docker is my favourite container tool"),
        cand("I run Docker Desktop on macOS", "fact"),
    ])
    assert [r.memory.category for r in api.search(USER, "docker", categories=["lesson"])] == ["lesson"]
    assert {r.memory.category for r in api.search(USER, "docker", categories=["lesson", "fact"])} == {"lesson", "fact"}
    assert len(api.search(USER, "docker", k=2)) == 2
    assert api.search(USER, "docker", k=0) == []


# -- forget, restore, delete -------------------------------------------------------------------

def test_forget_and_restore(api):
    [r] = api.upsert(USER, [cand("I prefer dark mode")], message_ids=["m1"])
    assert api.forget(USER, r.memory.id).forgotten
    assert api.search(USER, "dark mode") == [] and api.list(USER) == []
    assert [s.memory.id for s in api.search(USER, "dark mode", include_forgotten=True)] == [r.memory.id]
    restored = api.restore(USER, r.memory.id)
    assert restored.changed and not restored.memory.forgotten
    assert api.restore(USER, "no-such-id") is None
    assert [s.memory.id for s in api.search(USER, "dark mode")] == [r.memory.id]
    assert api.forget(USER, "no-such-id") is None


def test_restating_a_forgotten_memory_restores_it(api):
    [r] = api.upsert(USER, [cand("I prefer dark mode")], message_ids=["m1"])
    api.forget(USER, r.memory.id)
    [again] = api.upsert(USER, [cand("I prefer dark mode")], message_ids=["m2"])
    assert again.action == "duplicate" and not again.memory.forgotten


def test_delete_removes_the_memory_and_its_duplicate_record(api, store):
    [r] = api.upsert(USER, [cand("I prefer dark mode")])
    assert api.delete(USER, r.memory.id) is True
    assert api.get(USER, r.memory.id) is None
    assert store.get(("memory_hashes", USER), content_hash("I prefer dark mode")) is None
    assert api.delete(USER, r.memory.id) is False
    [again] = api.upsert(USER, [cand("I prefer dark mode")])
    assert again.action == "created"  # written anew (its id derives from the text: the same)
    assert api.get(USER, again.memory.id).content == "I prefer dark mode"


def test_merge_content_rules():
    assert merge_content("a b", "a b") == "a b"
    assert merge_content("I use Vim with plugins", "i use vim") == "I use Vim with plugins"
    assert merge_content("I use Vim", "I use Neovim") == "I use Vim\nI use Neovim"
    assert merge_content("x" * 1500, "y" * 600) == "y" * 600


def test_list_is_newest_first_and_filters_by_category(store):
    times = iter([NOW - timedelta(days=3), NOW - timedelta(days=1), NOW - timedelta(days=2)])
    ltm = LongTermMemory(store, clock=lambda: next(times))
    for text, category in [("I live in Lisbon", "fact"), ("I prefer dark mode", "preference"), ("I work at Acme", "fact")]:
        ltm.upsert(USER, [cand(text, category)])
    assert [m.content for m in ltm.list(USER)] == ["I prefer dark mode", "I work at Acme", "I live in Lisbon"]
    assert [m.content for m in ltm.list(USER, categories=["fact"])] == ["I work at Acme", "I live in Lisbon"]


def test_same_key_near_identical_text_confirms_instead_of_superseding(api):
    key = {"key": "preference.frontend_framework"}
    a_text, b_text = "The user always uses React for frontend work", "The user always uses React for frontend work now"
    assert cosine(a_text, b_text) >= 0.9
    [a] = api.upsert(USER, [cand(a_text, **key)])
    [b] = api.upsert(USER, [cand(b_text, **key)])
    assert b.action == "merged" and b.memory.id == a.memory.id and b.memory.content == b_text


def test_recall_finds_the_current_memory_under_a_flood_of_forgotten_ones(api, store):
    stale = [
        Memory.new(f"the team deploys service {n} to Kubernetes by hand", "fact", 0.8,
                   now=NOW.isoformat(), forgotten=True)
        for n in range(60)
    ]
    store.batch([memory_put(("memories", USER), m) for m in stale])
    [current] = api.upsert(USER, [cand("the team deploys only through Argo CD", "fact")])
    [goal] = api.upsert(USER, [cand("I want to run a marathon in 2027", "goal")])
    found = api.search(USER, "how does the team deploy to Kubernetes", k=3, ranking="recall")
    assert [s.memory.id for s in found] == [current.memory.id, goal.memory.id]
    goals = api.search(
        USER, "how does the team deploy to Kubernetes", k=3, categories=["goal"], ranking="recall"
    )
    assert [s.memory.id for s in goals] == [goal.memory.id]


def test_counting_a_recall_keeps_a_change_made_since_the_memory_was_recalled(store):
    ltm = LongTermMemory(store, clock=lambda: NOW)
    [r] = ltm.upsert(USER, [cand("I use Vim every day")])
    steps = search_steps(
        ltm.namespace(USER), "vim", 3, categories=None, include_superseded=False,
        include_forgotten=False, touch=True, now=NOW, settings=ltm.recall,
    )
    ops = next(steps)
    ops = steps.send(store.batch(ops))  # recalled; the access update reads the memory again
    ltm.forget(USER, r.memory.id)  # meanwhile, its owner forgets it
    try:
        while True:
            ops = steps.send(store.batch(ops))
    except StopIteration as done:
        [hit] = done.value
    stored = ltm.get(USER, r.memory.id)
    assert stored.forgotten and hit.memory.forgotten  # the recall did not bring it back
    assert stored.access_count == 1
