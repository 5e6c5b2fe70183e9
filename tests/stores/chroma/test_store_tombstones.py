"""A delete that rides on its batch's upsert as a tombstone (in a batch that also writes): gone
for every read at once, its record removed soon after, by this process or the next store opened
on the folder."""

from __future__ import annotations

import time
import uuid

import chromadb
import pytest
from fakes import NGramEmbeddings
from langgraph.store.base import PutOp

from engram.stores.chroma import metadata as md
from engram.stores.chroma import tombstones
from engram.stores.chroma.store import ChromaStore
from engram.stores.lexical.hybrid import HybridSearchOp

NS = ("users", "alice")


def _index() -> dict:
    return {"dims": 256, "embed": NGramEmbeddings(), "fields": ["text"]}


@pytest.fixture(params=["ephemeral", "persistent"])
def client(request, tmp_path):
    if request.param == "ephemeral":
        return chromadb.EphemeralClient()
    return chromadb.PersistentClient(path=str(tmp_path / "chroma"))


def _records(store: ChromaStore) -> dict[str, dict]:
    got = store._items.get(include=["metadatas"])
    return dict(zip(got["ids"], got["metadatas"]))


def _delete_leaving_tombstones(
    store: ChromaStore, *keys: str, riding_on: tuple[tuple[str, ...], str]
) -> None:
    """Delete as one uncoalesced batch that also writes (the item `riding_on`, put again as it
    is: a batch of deletes alone deletes at once), once the store's drain thread is done (it
    would remove the tombstones when it next goes idle)."""
    namespace, key = riding_on
    item = store.get(namespace, key)  # through the drain thread, which then goes idle
    assert _wait_for(lambda: store._coalescer._drainer is None)
    rider = PutOp(namespace, key, item.value if item else {"v": "rider"})
    store._run_batch([rider, *(PutOp(NS, key, None) for key in keys)])


def _wait_for(condition, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_a_deleted_item_is_gone_for_every_read_at_once_and_its_record_soon_after(client):
    store = ChromaStore(client, collection=f"c{uuid.uuid4().hex}", index=_index())
    store.put(NS, "iguana", {"text": "keeps a pet iguana called Wobbleton"})
    store.put(NS, "violin", {"text": "studied violin"})
    store.put(("users", "bob"), "parrot", {"text": "a parrot called Fandangolo"})
    store.delete(("users", "bob"), "parrot")
    deleted_id = md.item_id(NS, "iguana")
    _delete_leaving_tombstones(store, "iguana", riding_on=(NS, "violin"))

    tombstone = _records(store)[deleted_id]
    assert tombstones.is_tombstone(tombstone)
    assert "Wobbleton" not in str(tombstone)  # the value left the record with the delete
    assert store.get(NS, "iguana") is None
    assert [i.key for i in store.search(NS)] == ["violin"]
    assert [i.key for i in store.search(NS, query="pet iguana Wobbleton")] == ["violin"]
    assert [i.key for i in store.search(("users",), filter={"text": "studied violin"})] == [
        "violin"
    ]
    assert store.list_namespaces() == [NS]
    [hybrid] = store.batch([HybridSearchOp(NS, "pet iguana Wobbleton")])
    assert [h.item.key for h in hybrid] == ["violin"]

    store.put(NS, "next", {"text": "any write"})  # the store goes idle after it: removal
    assert _wait_for(lambda: deleted_id not in _records(store))
    assert sorted(_records(store)) == sorted(md.item_id(NS, k) for k in ("violin", "next"))
    store.close()


def test_a_key_deleted_and_put_again_is_a_new_item_that_the_removal_keeps(client):
    store = ChromaStore(client, collection=f"c{uuid.uuid4().hex}", index=_index())
    store.put(NS, "k", {"text": "first version"})
    first = store.get(NS, "k")
    _delete_leaving_tombstones(store, "k", riding_on=(("users", "bob"), "rider"))
    time.sleep(0.01)
    store._run_batch([PutOp(NS, "k", {"text": "second version"})])
    assert store._writer.buried  # the tombstone's id is still to remove...

    store._remove_tombstones()

    again = store.get(NS, "k")  # ...and the removal spared the item put since
    assert again.value == {"text": "second version"}
    assert again.created_at > first.created_at  # a new item, not the deleted one renewed
    assert [i.key for i in store.search(NS, query="second version")] == ["k"]
    store.close()


def test_tombstones_of_a_process_that_died_are_removed_by_the_next_store_opened(tmp_path):
    folder = tmp_path / "chroma"
    dead = ChromaStore(chromadb.PersistentClient(path=str(folder)), collection="notes")
    for key in ("a", "b", "c"):
        dead.put(NS, key, {"v": key})
    _delete_leaving_tombstones(dead, "a", "b", riding_on=(NS, "c"))  # and it "dies" here
    assert len(_records(dead)) == 3

    opened = ChromaStore(chromadb.PersistentClient(path=str(folder)), collection="notes")

    assert list(_records(opened)) == [md.item_id(NS, "c")]
    assert [i.key for i in opened.search(NS)] == ["c"]


def test_the_ttl_sweep_counts_expired_items_not_tombstones(client):
    store = ChromaStore(client, collection=f"c{uuid.uuid4().hex}", ttl={"default_ttl": None})
    store.put(NS, "brief", {"v": 1}, ttl=0.001)  # 60 ms
    store.put(NS, "kept", {"v": 2})
    store.put(NS, "deleted", {"v": 3})
    _delete_leaving_tombstones(store, "deleted", riding_on=(NS, "kept"))
    time.sleep(0.1)

    assert store.sweep_ttl() == 1
    assert list(_records(store)) == [md.item_id(NS, "kept")]
    assert not store._writer.buried
