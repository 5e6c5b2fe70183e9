"""What expires is gone from every file of the data folder, as what is deleted: raw bytes."""

from __future__ import annotations

import time

from conftest import files_holding
from fakes import NGramEmbeddings

from engram.stores.chroma.store import ChromaStore

NS = ("memories", "alice")


def test_an_expired_item_leaves_its_text_in_no_file(tmp_path):
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["text"]}
    store = ChromaStore(path=tmp_path / "chroma", index=index, ttl={"default_ttl": None})
    store.put(NS, "brief", {"text": "keeps a pet iguana called Wobbleton"}, ttl=0.001)  # 60 ms
    store.put(NS, "kept", {"text": "studied violin with Krzanowski"})
    assert files_holding(tmp_path, "Wobbleton")
    time.sleep(0.1)

    assert store.sweep_ttl() == 1

    assert files_holding(tmp_path, "Wobbleton") == []
    assert files_holding(tmp_path, "Krzanowski")
    assert [i.key for i in store.search(NS, query="iguana violin")] == ["kept"]
    store.close()
