"""Concurrent calls to a `ChromaStore` are coalesced into few Chroma batches, with the answers
the same calls give one after another."""

from __future__ import annotations

import asyncio
import uuid
from concurrent.futures import ThreadPoolExecutor

import chromadb
import pytest
from fakes import NGramEmbeddings
from langgraph.store.base import PutOp

from engram.stores.chroma.store import ChromaStore


@pytest.fixture(params=["ephemeral", "persistent"])
def store(request, tmp_path):
    client = (
        chromadb.EphemeralClient()
        if request.param == "ephemeral"
        else chromadb.PersistentClient(path=str(tmp_path / "chroma"))
    )
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["text"]}
    made = ChromaStore(client, collection=f"c{uuid.uuid4().hex}", index=index)
    yield made
    made.close()


def _values(items):
    return [(tuple(i.namespace), i.key, i.value) for i in items]


def test_a_get_queued_after_a_put_reads_it_and_one_queued_before_does_not(store):
    store.put(("u",), "k", {"text": "old"})

    async def together():
        return await asyncio.gather(
            store.aget(("u",), "k"),
            store.aput(("u",), "k", {"text": "new"}),
            store.aget(("u",), "k"),
            store.asearch(("u",)),
            store.aget(("u",), "other"),
            store.aput(("u",), "other", {"text": "more"}),
        )

    before, _, after, search, other_before, _ = asyncio.run(together())
    assert before.value == {"text": "old"}
    assert after.value == {"text": "new"}
    assert (("u",), "k", {"text": "new"}) in _values(search)  # (and maybe "other": in flight)
    assert other_before is None
    assert store.get(("u",), "other").value == {"text": "more"}


def _session(n: int) -> list:
    """One caller's calls, each made after the previous one answered."""
    ns = ("users", f"u{n}")
    return [
        ("put", ns, "a", {"text": f"likes tea number {n}"}),
        ("put", ns, "b", {"text": f"works on project {n}"}),
        ("get", ns, "a"),
        ("search", ns, None),
        ("search", ns, "tea"),
        ("put", ns, "a", {"text": f"likes coffee number {n}"}),
        ("get", ns, "a"),
        ("delete", ns, "b"),
        ("search", ns, None),
        ("list", ns),
    ]


async def _play(store, calls):
    answers = []
    for kind, ns, *rest in calls:
        if kind == "put":
            answers.append(await store.aput(ns, rest[0], rest[1]))
        elif kind == "get":
            item = await store.aget(ns, rest[0])
            answers.append(item and item.value)
        elif kind == "search":
            answers.append(_values(await store.asearch(ns, query=rest[0])))
        elif kind == "delete":
            answers.append(await store.adelete(ns, rest[0]))
        else:
            answers.append(await store.alist_namespaces(prefix=ns))
    return answers


def test_concurrent_callers_get_the_answers_of_calls_made_one_after_another(store, tmp_path):
    reference = ChromaStore(
        chromadb.EphemeralClient(),
        collection=f"r{uuid.uuid4().hex}",
        index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["text"]},
    )
    sessions = [_session(n) for n in range(30)]
    expected = [asyncio.run(_play(reference, calls)) for calls in sessions]

    async def all_at_once():
        return await asyncio.gather(*(_play(store, calls) for calls in sessions))

    batches = store._coalescer.batches_run
    assert asyncio.run(all_at_once()) == expected
    assert store._coalescer.batches_run - batches < len(sessions) * len(sessions[0]) / 3
    assert sorted(store.list_namespaces()) == sorted(reference.list_namespaces())


def test_concurrent_reads_share_few_batches(store):
    for i in range(50):
        store.put(("n",), f"k{i}", {"text": f"item {i}"})

    async def reads():
        return await asyncio.gather(
            *(store.aget(("n",), f"k{i % 50}") for i in range(400)),
            *(store.asearch(("n",), limit=5) for _ in range(100)),
        )

    batches = store._coalescer.batches_run
    answers = asyncio.run(reads())
    assert [a.value["text"] for a in answers[:400]] == [f"item {i % 50}" for i in range(400)]
    assert all(len(a) == 5 for a in answers[400:])
    assert store._coalescer.batches_run - batches <= 10


def test_threads_read_their_own_writes(store):
    def worker(t: int) -> list:
        seen = []
        for i in range(20):
            store.put(("t", str(t)), f"k{i}", {"text": f"{t}-{i}"})
            seen.append(store.get(("t", str(t)), f"k{i}").value["text"])
        return seen

    with ThreadPoolExecutor(max_workers=10) as pool:
        results = list(pool.map(worker, range(10)))
    assert results == [[f"{t}-{i}" for i in range(20)] for t in range(10)]
    assert len(store.search(("t",), limit=1000)) == 200


def test_a_failing_call_fails_alone(store):
    async def mixed():
        return await asyncio.gather(
            store.aput(("ok",), "a", {"text": "kept"}),
            store.abatch([PutOp(("ok", "bad.label"), "b", {"text": "rejected"})]),
            store.aput(("ok",), "c", {"text": "kept too"}),
            return_exceptions=True,
        )

    first, failed, last = asyncio.run(mixed())
    assert first is None and last is None
    assert isinstance(failed, ValueError)
    assert sorted(i.key for i in store.search(("ok",))) == ["a", "c"]
