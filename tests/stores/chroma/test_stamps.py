"""Version stamps on a Chroma server (`engram.stores.chroma.stamps`): a store compares a
namespace with the server in full only when another store wrote to it, and never searches a
stale mirror.

Every test runs on a real `chroma run` (the session's `chroma_server`); each store has its own
`$ENGRAM_DATA_DIR`, so its lexical mirror is its own, as on separate machines.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TESTS
from fakes import NGramEmbeddings

from engram.stores.chroma import stamps as stamps_module
from engram.stores.chroma.stamps import Stamps
from engram.stores.chroma.store import ChromaStore
from engram.stores.lexical.hybrid import HybridSearchOp
from engram.stores.memory.users import delete_user
from engram.stores.namespaces import episode_namespace, memory_namespace

NS = ("memories", "ada")


def _index() -> dict:
    return {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}


class _Machines:
    """Stores on one server collection, each with a data folder of its own."""

    def __init__(self, url: str, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.url, self.root, self.monkeypatch = url, root, monkeypatch
        self.collection = f"stamps-{time.time_ns()}"
        self.opened: list[ChromaStore] = []

    def store(self, name: str) -> ChromaStore:
        self.monkeypatch.setenv("ENGRAM_DATA_DIR", str(self.root / name))
        store = ChromaStore.from_url(self.url, collection=self.collection, index=_index())
        self.opened.append(store)
        return store


@pytest.fixture
def machines(chroma_server, tmp_path, monkeypatch) -> Iterator[_Machines]:
    found = _Machines(chroma_server, tmp_path, monkeypatch)
    yield found
    for store in found.opened:
        store.close()


class _Counted:
    """Counts a store's full comparisons of a namespace with the server, and its vector
    queries that filtered by metadata."""

    def __init__(self, store: ChromaStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.compared = 0
        self.filtered = 0
        mirror = store.lexical
        reconcile, query = mirror._reconcile, store._items.query

        def counted_reconcile(namespace, now):
            self.compared += namespace is not None
            return reconcile(namespace, now)

        def counted_query(*args, **kwargs):
            self.filtered += kwargs.get("where") is not None
            return query(*args, **kwargs)

        monkeypatch.setattr(mirror, "_reconcile", counted_reconcile)
        monkeypatch.setattr(store._items, "query", counted_query)


def _found(store: ChromaStore, query: str, namespace: tuple[str, ...] = NS) -> list[str]:
    """Keys of a hybrid search (both channels, as recall asks)."""
    (hits,) = store.batch([HybridSearchOp(namespace, query)])
    return [hit.item.key for hit in hits]


def test_a_search_compares_a_namespace_again_only_after_another_store_wrote(machines, monkeypatch):
    a, b = machines.store("a"), machines.store("b")
    a.put(NS, "tea", {"content": "prefers green tea in the afternoon"})
    seen = _Counted(a, monkeypatch)
    assert _found(a, "green tea")[0] == "tea"
    assert _found(a, "afternoon tea")[0] == "tea"
    a.put(NS, "desk", {"content": "works at a standing desk"})  # its own write
    assert _found(a, "standing desk")[0] == "desk"
    assert seen.compared == 0  # nothing another store wrote: no comparison

    b.put(NS, "db", {"content": "the staging database is postgres 16"})
    assert _found(a, "staging database postgres")[0] == "db"  # both channels find it
    assert seen.compared == 1
    assert _found(a, "postgres")[0] == "db"
    assert seen.compared == 1

    b.put(NS, "tea", {"content": "switched from tea to black coffee"})
    assert _found(a, "black coffee")[0] == "tea"
    b.delete(NS, "desk")
    assert "desk" not in _found(a, "standing desk")
    assert seen.compared == 3
    assert seen.filtered == 0  # every vector search named the mirror's ids


def test_another_process_writes_and_deletes_and_the_next_search_sees_it(
    machines, monkeypatch, tmp_path
):
    a = machines.store("a")
    a.put(NS, "x", {"content": "keeps notes in a paper notebook"})
    a.put(NS, "y", {"content": "runs on tuesdays along the river"})
    seen = _Counted(a, monkeypatch)
    assert _found(a, "paper notebook")[0] == "x"
    _other_process(
        machines,
        tmp_path / "b",
        """
        store.put(NS, "z", {"content": "bakes sourdough bread every weekend"})
        store.delete(NS, "y")
    """,
    )
    assert _found(a, "sourdough bread")[0] == "z"
    assert "y" not in _found(a, "tuesdays river run")
    assert seen.compared == 1
    assert _found(a, "weekend baking sourdough")[0] == "z"
    assert seen.compared == 1


def test_a_namespace_without_a_stamp_is_compared_until_it_has_one(machines, monkeypatch):
    a, old = machines.store("a"), machines.store("old")
    old._writer.stamps = None  # writes as an engram before stamps did: announces nothing
    seen = _Counted(a, monkeypatch)
    assert _found(a, "anything") == []
    assert _found(a, "anything") == []
    assert seen.compared == 2  # no stamp, no records: compared every time, never trusted
    old.put(NS, "bike", {"content": "commutes by bicycle"})
    assert _found(a, "bicycle commute")[0] == "bike"
    assert seen.compared == 3
    assert a._stamps.read(NS) is not None  # the comparison that found records stamped it
    b = machines.store("b")
    b.put(NS, "car", {"content": "sold the car last spring"})
    assert _found(a, "sold the car")[0] == "car"
    assert _found(a, "car sold spring")[0] == "car"
    assert seen.compared == 4


def test_a_write_cut_short_is_never_trusted(machines, monkeypatch):
    a, b = machines.store("a"), machines.store("b")
    a.put(NS, "x", {"content": "reads science fiction"})
    seen = _Counted(a, monkeypatch)
    _found(a, "science fiction")
    stamp = b._stamps.stamp

    def dies_before_its_token(namespaces, *, writing=False):
        if not writing:
            raise ConnectionError("b died after its write, before announcing it done")
        stamp(namespaces, writing=True)

    monkeypatch.setattr(b._stamps, "stamp", dies_before_its_token)
    with pytest.raises(ConnectionError):
        b.put(NS, "z", {"content": "also reads fantasy novels"})
    assert _found(a, "fantasy novels")[0] == "z"  # the write landed before b died
    _found(a, "fantasy novels")
    assert seen.compared == 2  # compared every time while b's key says `writing`
    stamp([NS])  # b's key settles (b wrote again, or a day passed and a reader pruned it)
    _found(a, "fantasy novels")
    _found(a, "fantasy novels")
    assert seen.compared == 3


def test_a_store_marks_its_write_as_in_flight_until_it_has_landed(machines, monkeypatch):
    a, b = machines.store("a"), machines.store("b")
    a.put(NS, "x", {"content": "first"})
    during: list[bool] = []
    write = b._writer._write

    def watched(puts, unchanged, chunk):
        during.append(a._stamps.read(NS).settled)
        write(puts, unchanged, chunk)
        during.append(a._stamps.read(NS).settled)

    monkeypatch.setattr(b._writer, "_write", watched)
    b.put(NS, "y", {"content": "second"})
    assert during == [False, False]
    assert a._stamps.read(NS).settled
    assert b._stamps.writer in a._stamps.read(NS).others


def test_a_key_not_renewed_for_a_day_is_pruned_and_what_its_store_wrote_is_still_found(
    machines,
):
    a, b = machines.store("a"), machines.store("b")  # both mirrors began on the empty collection
    b.put(NS, "x", {"content": "an old note about lighthouses"})
    record = a._stamps.record_id(NS)
    day_ago = f"{time.time() - stamps_module.PRUNE_SECONDS - 60:.0f}-abcd"
    a._stamps.side.update(ids=[record], metadatas=[{b._stamps.writer: day_ago}])
    assert _found(a, "lighthouses") == ["x"]  # a never compared the namespace: it does now
    kept = a._stamps.side.get(ids=[record], include=["metadatas"])["metadatas"][0]
    assert b._stamps.writer not in kept and a._stamps.writer not in kept and len(kept) == 1


def test_a_new_process_on_the_same_data_folder_trusts_what_its_mirror_saw(machines, monkeypatch):
    builder = machines.store("app")  # began mirroring the empty collection
    builder.put(NS, "x", {"content": "plays the cello on sundays"})
    builder.close()
    restarted = machines.store("app")
    seen = _Counted(restarted, monkeypatch)
    assert _found(restarted, "cello") == ["x"]
    assert seen.compared == 0  # everything written since it was empty was this folder's
    other = machines.store("other")
    other.put(NS, "y", {"content": "plays the piano too"})
    assert _found(restarted, "piano")[0] == "y"
    assert seen.compared == 1
    restarted.close()
    again = machines.store("app")
    seen = _Counted(again, monkeypatch)
    assert _found(again, "piano")[0] == "y"
    assert seen.compared == 0  # the comparison the previous process made is recorded
    late = machines.store("late")  # its mirror began on a collection that held items
    seen = _Counted(late, monkeypatch)
    assert _found(late, "cello")[0] == "x"
    assert _found(late, "cello")[0] == "x"
    assert seen.compared == 1


def test_deleting_a_user_deletes_their_stamps_and_no_stamp_names_them(machines):
    a = machines.store("a")
    for user in ("alice.smith@example.com", "bob"):
        a.put(memory_namespace(user), "m", {"content": f"{user} likes jazz"})
        a.put(episode_namespace(user), "e", {"content": f"{user} said hello"})
    side = a._stamps.side
    everything = json.dumps(side.get(include=["metadatas"]))
    assert "alice" not in everything and "bob" not in everything
    alice = [
        memory_namespace("alice.smith@example.com"),
        episode_namespace("alice.smith@example.com"),
    ]
    bob = [memory_namespace("bob"), episode_namespace("bob")]
    assert len(side.get(ids=[a._stamps.record_id(ns) for ns in alice + bob])["ids"]) == 4
    delete_user(a, "alice.smith@example.com")
    assert side.get(ids=[a._stamps.record_id(ns) for ns in alice])["ids"] == []
    assert len(side.get(ids=[a._stamps.record_id(ns) for ns in bob])["ids"]) == 2
    b = machines.store("b")
    assert _found(b, "jazz", memory_namespace("alice.smith@example.com")) == []
    assert _found(b, "jazz", memory_namespace("bob")) == ["m"]


def test_deleting_one_item_keeps_the_stamp_of_a_namespace_that_still_holds_items(machines):
    a = machines.store("a")
    a.put(NS, "x", {"content": "one"})
    a.put(NS, "y", {"content": "two"})
    a.delete(NS, "x")  # a plain delete purges
    assert a._stamps.read(NS) is not None
    a.delete(NS, "y")
    assert a._stamps.read(NS) is None


def _other_process(machines: _Machines, data: Path, body: str) -> None:
    """Run `body` in a process of its own, with `store` a ChromaStore on the same collection."""
    script = (
        textwrap.dedent("""
        import sys
        from fakes import NGramEmbeddings
        from engram.stores.chroma.store import ChromaStore
        NS = ("memories", "ada")
        store = ChromaStore.from_url(sys.argv[1], collection=sys.argv[2],
            index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]})
    """)
        + textwrap.dedent(body)
        + "\nstore.close()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, machines.url, machines.collection],
        env={**os.environ, "ENGRAM_DATA_DIR": str(data), "PYTHONPATH": str(TESTS)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def test_stamps_are_written_and_dropped_in_the_clients_largest_batches(machines, monkeypatch):
    a = machines.store("a")
    small = Stamps(a.client, a._items, max_batch=2)
    sizes: list[int] = []
    upsert, delete = small.side.upsert, small.side.delete
    monkeypatch.setattr(
        small.side, "upsert", lambda **kw: sizes.append(len(kw["ids"])) or upsert(**kw)
    )
    monkeypatch.setattr(
        small.side, "delete", lambda **kw: sizes.append(len(kw["ids"])) or delete(**kw)
    )
    namespaces = [("memories", f"user{n}") for n in range(5)]
    small.stamp(namespaces)
    assert all(small.read(ns) is not None for ns in namespaces)
    small.drop(namespaces)
    assert all(small.read(ns) is None for ns in namespaces)
    assert sizes == [2, 2, 1, 2, 2, 1]
