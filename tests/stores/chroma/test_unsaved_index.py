"""A vector index Chroma never saved is rewritten from uninitialised memory by each new Chroma
system; engram zeroes it before it lets go of the folder. The tests read raw bytes."""

from __future__ import annotations

from pathlib import Path

import chromadb
from conftest import files_holding
from fakes import NGramEmbeddings

from engram.stores.chroma import process_lock
from engram.stores.chroma.store import ChromaStore
from engram.stores.chroma.unsaved_index import SAVED_MARK

NS = ("memories", "alice")


def plant(segment: Path, word: str) -> None:
    """Write `word` into the room of a segment's vector file, as a dirty `malloc` would."""
    data = segment / "data_level0.bin"
    with data.open("r+b") as f:
        f.seek(data.stat().st_size // 2)
        f.write(word.encode())


def only_segment(folder: Path) -> Path:
    (segment,) = [p for p in folder.iterdir() if (p / "header.bin").is_file()]
    return segment


def test_chroma_rewrites_an_unsaved_index_in_each_new_system(tmp_path):
    # The premise of the scrub: if Chroma stops doing this, unsaved_index can go. (Checked by
    # the file's size: a planted word could come back from this process's freed memory.)
    client = chromadb.PersistentClient(path=str(tmp_path))
    items = client.get_or_create_collection("raw", embedding_function=None)
    items.add(ids=["a", "b"], embeddings=[[1.0, 0.0], [0.0, 1.0]])
    segment = only_segment(tmp_path)
    assert not (segment / SAVED_MARK).exists()
    data = segment / "data_level0.bin"
    written = data.stat().st_size
    with data.open("ab") as f:
        f.write(bytes(64))

    process_lock.reload_client(client)
    client.get_collection("raw").add(ids=["c"], embeddings=[[1.0, 1.0]])

    assert data.stat().st_size == written  # the whole file was written again, room included
    assert not (segment / SAVED_MARK).exists()
    client.close()


def test_any_store_operation_leaves_an_unsaved_index_zero_past_its_elements(tmp_path):
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["text"]}
    store = ChromaStore(path=tmp_path, index=index)
    store.put(NS, "kept", {"text": "studied violin with Krzanowski"})
    segment = only_segment(tmp_path)
    plant(segment, "Wobbleton")

    assert store.get(NS, "kept") is not None  # a read scrubs too: any system may write

    assert files_holding(tmp_path, "Wobbleton") == []
    assert files_holding(tmp_path, "Krzanowski")
    assert [i.key for i in store.search(NS, query="violin")] == ["kept"]
    store.close()


def test_deleted_text_stays_gone_through_closing_and_reopening_in_one_process(tmp_path):
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["text"]}
    words = ["Wobbleton", "Quimby", "Zephyrine", "Gloxinia"]
    store = ChromaStore(path=tmp_path, index=index)
    for n, word in enumerate(words):
        store.put(NS, f"m{n}", {"text": f"has a friend called {word} from {word}ville"})
    for _ in range(3):  # the texts pass through this process's memory again and again
        assert len(store.search(NS, query="friend called", limit=10)) == len(words)
    for n in range(len(words)):
        store.delete(NS, f"m{n}")
    store.purge_deleted()
    for round_ in range(4):
        store.close()
        store = ChromaStore(path=tmp_path, index=index)
        store.put(("memories", "bob"), f"b{round_}", {"text": f"plays the theremin {round_}"})
        assert store.search(NS, query="friend called") == []
        assert [files_holding(tmp_path, w) for w in words] == [[]] * len(words)
    store.close()
