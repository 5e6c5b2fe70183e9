"""The optimised copy of the embedding model (`engram.stores.optimized_model`): the same vectors
as the original, a damaged copy replaced, several processes creating it at once, and no copy
when the cache folder cannot be written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engram.stores.embeddings import LocalEmbeddings, resolve_model_dir
from engram.stores.optimized_model import CACHE_ENV, default_cache_dir

TEXTS = [
    "project 3",
    "I prefer dark mode in every editor I use.",
    "我喜欢在编辑器里使用深色模式。",
    " ".join(["The meeting about the quarterly budget moved to Thursday afternoon."] * 12),
]


def entries(cache: Path) -> list[Path]:
    """The cache's entries, temporary and discarded folders included."""
    return sorted(cache.iterdir()) if cache.is_dir() else []


def vectors(cache: Path | None) -> np.ndarray:
    emb = LocalEmbeddings(cache_size=0, model_cache=cache if cache is not None else False)
    return np.array(emb.embed_documents(TEXTS))


@pytest.fixture(scope="module")
def original() -> np.ndarray:
    """The vectors of a session built from `model.onnx` itself, as before the cache."""
    return vectors(None)


def assert_same(found: np.ndarray, original: np.ndarray) -> None:
    cosines = (found * original).sum(axis=1)  # both L2-normalised
    assert cosines.min() > 0.999999
    assert np.abs(found - original).max() < 1e-6


def test_the_cached_copy_gives_the_original_vectors(tmp_path: Path, original: np.ndarray) -> None:
    cache = tmp_path / "onnx"

    assert_same(vectors(cache), original)  # builds the copy on the way
    [entry] = entries(cache)
    assert sorted(p.name for p in entry.iterdir()) == ["model.onnx", "model.weights"]
    assert (entry / "model.weights").stat().st_size > 80_000_000  # the weights are out of the graph
    assert (entry / "model.onnx").stat().st_size < 1_000_000

    built = entry.stat().st_mtime_ns
    assert_same(vectors(cache), original)  # starts from the copy
    assert entries(cache) == [entry] and entry.stat().st_mtime_ns == built


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda e: (e / "model.onnx").write_bytes(b"\x08garbage" * 100), id="graph"),
        pytest.param(lambda e: os.truncate(e / "model.weights", 1_000_000), id="truncated-weights"),
        pytest.param(lambda e: (e / "model.weights").unlink(), id="missing-weights"),
    ],
)
def test_a_damaged_copy_is_replaced_and_the_vectors_stay_right(
    tmp_path: Path, original: np.ndarray, damage, caplog: pytest.LogCaptureFixture
) -> None:
    cache = tmp_path / "onnx"
    vectors(cache)
    [entry] = entries(cache)
    damage(entry)

    assert_same(vectors(cache), original)

    assert "does not load" in caplog.text
    assert entries(cache) == [entry]  # rebuilt in place, nothing left aside
    assert_same(vectors(cache), original)  # and the rebuilt copy loads


def test_processes_creating_the_copy_at_once_all_succeed(
    tmp_path: Path, original: np.ndarray
) -> None:
    cache = tmp_path / "onnx"
    go = tmp_path / "go"
    script = (
        "import json, os, sys, time\n"
        "from engram.stores.embeddings import LocalEmbeddings\n"
        "emb = LocalEmbeddings(cache_size=0, model_cache=sys.argv[1])\n"
        "while not os.path.exists(sys.argv[2]):\n    time.sleep(0.005)\n"
        f"print(json.dumps(emb.embed_documents({TEXTS!r})))\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(cache), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    go.touch()  # all four start loading the model together
    outputs = [p.communicate(timeout=300) for p in procs]

    for proc, (stdout, stderr) in zip(procs, outputs, strict=True):
        assert proc.returncode == 0, stderr
        assert_same(np.array(json.loads(stdout)), original)
    [entry] = entries(cache)  # one copy, no temporary folder left behind
    assert sorted(p.name for p in entry.iterdir()) == ["model.onnx", "model.weights"]
    assert_same(vectors(cache), original)


def test_folders_of_builds_that_died_are_removed(tmp_path: Path, original: np.ndarray) -> None:
    cache = tmp_path / "onnx"
    dead, live = cache / ".model-0123.died", cache / ".model-4567.building"
    for folder in (dead, live):
        folder.mkdir(parents=True)
        (folder / "model.weights").write_bytes(b"\0" * 1000)
    os.utime(dead, (1_000_000_000, 1_000_000_000))  # long ago

    assert_same(vectors(cache), original)

    assert not dead.exists() and live.exists()  # another process may still be writing that one
    assert len([e for e in entries(cache) if not e.name.startswith(".")]) == 1


def test_a_changed_model_file_gets_a_new_copy(tmp_path: Path, original: np.ndarray) -> None:
    model = tmp_path / "model"
    model.mkdir()
    for name in ("model.onnx", "tokenizer.json"):
        shutil.copyfile(resolve_model_dir() / name, model / name)
    cache = tmp_path / "onnx"
    emb = LocalEmbeddings(model, cache_size=0, model_cache=cache)
    assert_same(np.array(emb.embed_documents(TEXTS)), original)
    [first] = entries(cache)

    os.utime(model / "model.onnx", ns=(1_000_000_000, 1_000_000_000))  # a newer download, say
    LocalEmbeddings(model, cache_size=0, model_cache=cache).embed_query("x")

    assert len(entries(cache)) == 2 and first in entries(cache)


def test_an_unwritable_cache_folder_only_costs_the_copy(
    tmp_path: Path, original: np.ndarray
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")

    assert_same(vectors(blocked / "onnx"), original)
    assert blocked.read_text() == "not a folder"


def test_the_cache_folder_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    assert LocalEmbeddings().model_cache == tmp_path / "here"
    monkeypatch.setenv(CACHE_ENV, "off")
    assert default_cache_dir() is None and LocalEmbeddings().model_cache is None
    monkeypatch.delenv(CACHE_ENV)
    assert default_cache_dir() == Path.home() / ".cache" / "engram" / "onnx"
    assert LocalEmbeddings(model_cache=False).model_cache is None


def test_vectors_without_prepacked_weights_equal_the_original(
    tmp_path: Path, original: np.ndarray
) -> None:
    """What `engram memory search` and `add` use: the weights left as loaded."""
    for cache in (tmp_path / "onnx", tmp_path / "onnx", False):  # builds, reuses, no copy
        emb = LocalEmbeddings(cache_size=0, model_cache=cache, prepack_weights=False)
        found = np.array(emb.embed_documents(TEXTS))
        assert ((found * original).sum(axis=1)).min() > 0.999999
        assert np.abs(found - original).max() < 1e-5
