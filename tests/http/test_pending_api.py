"""The pending-memory endpoints: what confirmation mode keeps waiting is listed, saved through the
write policy or dismissed without a trace, for its own user only."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from api_client import Api, memory_api
from conftest import files_holding

from engram.graph.http import USER_HEADER
from engram.stores.memory.pending import PendingMemories
from engram.stores.memory.types import MemoryCandidate


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    with memory_api(tmp_path) as api:
        yield api


def waiting(api: Api, *texts: str, user: str = "alice") -> list[str]:
    proposed = PendingMemories(api.store).propose(
        user, [MemoryCandidate(content=t, category="fact") for t in texts]
    )
    return [p.id for p in proposed]


def test_list_approve_and_reject(api: Api) -> None:
    iguana, violin = waiting(api, "I have an iguana named Wobbleton", "I play the violin")
    listed = api.client.get("/api/memories/pending").json()
    assert listed["user"] == "alice"
    assert {p["id"]: p["content"] for p in listed["pending"]} == {
        iguana: "I have an iguana named Wobbleton", violin: "I play the violin",
    }
    # waiting memories are not memories yet
    assert api.client.get("/api/memories").json()["total"] == 0

    saved = api.client.post(f"/api/memories/pending/{violin}/approve")
    assert saved.status_code == 201 and saved.json()["action"] == "created"
    assert saved.json()["memory"]["content"] == "I play the violin"
    assert [m["content"] for m in api.client.get("/api/memories").json()["memories"]] == [
        "I play the violin"
    ]

    assert files_holding(api.folder, "Wobbleton")
    dismissed = api.client.delete(f"/api/memories/pending/{iguana}")
    assert dismissed.json() == {"rejected": iguana}
    assert api.client.get("/api/memories/pending").json()["pending"] == []
    assert files_holding(api.folder, "Wobbleton") == []

    for gone in (violin, iguana):  # done: answered 404, nothing changes
        assert api.client.post(f"/api/memories/pending/{gone}/approve").status_code == 404
        assert api.client.delete(f"/api/memories/pending/{gone}").status_code == 404


def test_another_users_pending_memory_is_not_found(api: Api) -> None:
    [bobs] = waiting(api, "I have a parrot named Fandangolo", user="bob")
    assert api.client.get("/api/memories/pending").json()["pending"] == []
    approve = api.client.post(f"/api/memories/pending/{bobs}/approve")
    assert approve.status_code == 404 and "GET /api/memories/pending" in approve.json()["detail"]
    assert api.client.delete(f"/api/memories/pending/{bobs}").status_code == 404
    as_bob = api.client.get("/api/memories/pending", headers={USER_HEADER: "bob"}).json()
    assert [p["id"] for p in as_bob["pending"]] == [bobs]


def test_pending_is_not_taken_for_a_memory_id(api: Api) -> None:
    # /api/memories/{id} must not answer for /api/memories/pending
    listed = api.client.get("/api/memories/pending")
    assert listed.status_code == 200 and "pending" in listed.json()


def test_a_pending_memory_is_named_by_a_prefix_of_its_id_as_the_cli_shows_it(api: Api) -> None:
    iguana, violin = waiting(api, "I have an iguana named Wobbleton", "I play the violin")
    saved = api.client.post(f"/api/memories/pending/{violin[:8]}/approve")
    assert saved.status_code == 201 and saved.json()["memory"]["content"] == "I play the violin"
    assert api.client.delete(f"/api/memories/pending/{iguana[:8]}").json() == {"rejected": iguana}

    [bobs] = waiting(api, "I have a parrot named Fandangolo", user="bob")
    assert api.client.delete(f"/api/memories/pending/{bobs[:8]}").status_code == 404
    facts = ["I own a kayak", "My sister lives in Oslo", "I am allergic to peanuts",
             "I drive a red Volvo", "My cat is called Pixel", "I work night shifts",
             "I collect vinyl records", "I was born in Recife", "I study Korean on Sundays",
             "I run a bakery", "My daughter plays chess", "I grow tomatoes on the balcony",
             "I fly to Lima in March", "I use a standing desk", "I teach yoga at noon",
             "My flat has no elevator", "I brew cider in autumn"]
    kept = waiting(api, *facts)
    assert len(kept) == len(facts)
    twins = [i for i in kept if sum(j[0] == i[0] for j in kept) > 1]  # 17 ids, 16 first digits
    ambiguous = api.client.post(f"/api/memories/pending/{twins[0][0]}/approve")
    assert ambiguous.status_code == 400 and "give more of it" in ambiguous.json()["detail"]
    assert len(api.client.get("/api/memories/pending").json()["pending"]) == len(kept)
    as_bob = api.client.get("/api/memories/pending", headers={USER_HEADER: "bob"}).json()
    assert [p["id"] for p in as_bob["pending"]] == [bobs]
