"""A real `langgraph dev` server for the tests, loading the repository's langgraph.json: the
engram graph with a fake model chosen by ENGRAM_MODEL, the ChromaStore factory whose memories the
/store API serves, and the memory API and page (`engram.graph.http`).

The server runs in the environment a user has, as the README's command shows it: none of the
variables the test session sets for offline assets (`TIKTOKEN_CACHE_DIR`,
`ENGRAM_EMBEDDING_MODEL_DIR`, ...). What a user's machine has instead is simulated with files:

- tiktoken's encodings in its default cache, `$TMPDIR/data-gym-cache` (where tiktoken puts them
  on the first run with network): the server gets its own `TMPDIR` holding copies of
  `../shared/tiktoken`, so the default path (`tempfile.gettempdir()`) is the one exercised;
- the all-MiniLM-L6-v2 ONNX files in chromadb's cache, `~/.cache/chroma/onnx_models/...` (where
  chromadb downloads them on the first run with network): the server gets its own `HOME` whose
  cache folder links to `../shared/models/all-MiniLM-L6-v2`. This machine has no network, so
  without these files the embedder could not load at all; the link is the one concession, and
  it goes through the same lookup a user's machine does.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import free_port

REPO = Path(__file__).resolve().parents[1]
RUNTIME_FOLDER = REPO / ".langgraph_api"
STARTUP_SECONDS = 120
SHARED = REPO.parent / "shared"
SESSION_ONLY_VARIABLES = frozenset(
    {
        "TIKTOKEN_CACHE_DIR",
        "DATA_GYM_CACHE_DIR",
        "ENGRAM_EMBEDDING_MODEL_DIR",
        "ENGRAM_CHROMA_URL",
        "ENGRAM_MEMORY_MODEL",
        "PYTEST_CURRENT_TEST",
        "PYTEST_VERSION",
    }
)
"""Variables of the test session that a user running `langgraph dev` would not have."""


@dataclass(frozen=True)
class LangGraphDev:
    """A running `langgraph dev`."""

    url: str
    data: Path
    """Its engram data folder (`ENGRAM_DATA_DIR`)."""
    env: dict[str, str]
    """Its environment: a user's, with the data folder and the offline caches; a command run
    with it (`engram memory ...`) works on the same data."""


@contextmanager
def langgraph_dev(
    data: Path, *, config: Path | None = None, graph_env: dict[str, str] | None = None
) -> Iterator[LangGraphDev]:
    """`langgraph dev` on 127.0.0.1 with its data in `data`, no browser, reload or analytics;
    stopped with its process group on leaving.

    Args:
        data: The engram data folder.
        config: A langgraph.json of its own (default: the repository's).
        graph_env: More variables for the server (what its graphs read).
    """
    log_path = data / "langgraph-dev.log"
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in SESSION_ONLY_VARIABLES},
        "HOME": str(_home_with_chroma_cache(data / "home")),
        "TMPDIR": str(_tmpdir_with_tiktoken_cache(data / "tmp")),
        "ENGRAM_MODEL": "tests/fakes.py:studio_chat_model",
        "ENGRAM_DATA_DIR": str(data),
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
        **(graph_env or {}),
    }
    command = [
        sys.executable,
        "-m",
        "langgraph_cli",
        "dev",
        "--no-browser",
        "--no-reload",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *(["--config", str(config)] if config is not None else []),
    ]
    had_runtime_folder = RUNTIME_FOLDER.exists()
    with log_path.open("w") as log:
        process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_until_up(url, process, log_path)
        yield LangGraphDev(url, data, env)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if not had_runtime_folder:  # the in-memory server's persistence, written to the cwd
            shutil.rmtree(RUNTIME_FOLDER, ignore_errors=True)


def _home_with_chroma_cache(home: Path) -> Path:
    """A home folder whose chromadb cache holds the ONNX model, as after chromadb's download."""
    cache = home / ".cache" / "chroma" / "onnx_models" / "all-MiniLM-L6-v2"
    cache.mkdir(parents=True)
    (cache / "onnx").symlink_to(SHARED / "models" / "all-MiniLM-L6-v2" / "onnx")
    return home


def _tmpdir_with_tiktoken_cache(tmp: Path) -> Path:
    """A temporary folder whose `data-gym-cache` holds tiktoken's encodings, as after its
    download."""
    shutil.copytree(SHARED / "tiktoken", tmp / "data-gym-cache")
    return tmp


def _wait_until_up(url: str, process: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(
                f"langgraph dev exited with {process.returncode}:\n{log_path.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(f"{url}/ok", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.5)
    pytest.fail(
        f"langgraph dev did not answer within {STARTUP_SECONDS}s:\n{log_path.read_text()[-3000:]}"
    )
