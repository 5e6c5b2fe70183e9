"""Test session setup: offline model assets from ../shared, shared fixtures."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langgraph.store.base import BaseStore

TESTS = Path(__file__).resolve().parent
"""The tests' root: `fakes` and `conftest` import from here (a subprocess needs it on
`PYTHONPATH`)."""
_SHARED = TESTS.parents[1] / "shared"

os.environ.setdefault(
    "ENGRAM_EMBEDDING_MODEL_DIR", str(_SHARED / "models" / "all-MiniLM-L6-v2" / "onnx")
)
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_SHARED / "tiktoken"))
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


def files_holding(folder: Path, word: str) -> list[str]:
    """Files under `folder` whose bytes hold `word`, in any case (like `grep -rail`)."""
    needle = word.lower().encode()
    return sorted(
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and needle in p.read_bytes().lower()
    )


def run_engram(
    *args: str,
    cwd: Path | None = None,
    input: str | None = None,
    env: dict[str, str | None] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Run `engram ARGS` as the console script runs it, in a process of its own whose stdout
    and stderr are pipes (not a terminal), with this process's environment changed by `env`
    (None: unset) and no `$COLUMNS`."""
    changed = {**os.environ, "COLUMNS": None, **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", "from engram.graph.cli import main; main()", *args],
        cwd=cwd,
        env={name: value for name, value in changed.items() if value is not None},
        input=input,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listened on 127.0.0.1:{port} within {timeout}s")


def stop_process_group(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real `chroma run` on 127.0.0.1 and a free port, for the whole session; yields its URL."""
    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    port = free_port()
    data = tmp_path_factory.mktemp("chroma-server")
    log = open(data / "server.log", "wb")
    proc = subprocess.Popen(
        [chroma, "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(data / "db")],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process_group(proc)
        log.close()


@pytest.fixture
def unique_name() -> str:
    """A fresh Chroma collection name per test."""
    return f"t-{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=["memory", "chroma"])
def store(request: pytest.FixtureRequest) -> Iterator[BaseStore]:
    """An empty store indexed with the n-gram fake on `content`: langgraph's InMemoryStore, then
    a ChromaStore on an ephemeral client (a fresh collection). A test module's own `store`
    fixture takes precedence."""
    from fakes import NGramEmbeddings

    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    yield from _empty_store(request.param, index)


@pytest.fixture(scope="session")
def real_index() -> Any:
    """engram's default index (all-MiniLM-L6-v2 on `content`): the similarities texts really have."""
    from engram.stores.chroma.store import default_index

    return default_index()


@pytest.fixture(params=["memory", "chroma"])
def real_store(request: pytest.FixtureRequest, real_index: Any) -> Iterator[BaseStore]:
    """As `store`, indexed with the real embedder (`real_index`)."""
    yield from _empty_store(request.param, real_index)


def _empty_store(kind: str, index: Any) -> Iterator[BaseStore]:
    import chromadb  # imported here, after the environment above is set
    from langgraph.store.memory import InMemoryStore

    from engram.stores.chroma.store import ChromaStore

    if kind == "memory":
        yield InMemoryStore(index=index)
        return
    chroma = ChromaStore(
        chromadb.EphemeralClient(), collection=f"s-{uuid.uuid4().hex[:16]}", index=index
    )
    yield chroma
    chroma.close()
