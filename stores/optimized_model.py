"""onnxruntime sessions that start from a cached, already optimised copy of their model.

Building a session for all-MiniLM-L6-v2 from its `model.onnx` parses 91 MB of protobuf, copies
every weight and runs the graph optimiser, in every process that embeds (each `engram memory
search` is one). The first session built from a model also saves the optimised graph into a cache
folder, its weights in a file of their own; later sessions load that graph with the optimiser off,
and onnxruntime maps the weights file into memory instead of copying it. The vectors are the same
bit for bit: the saved graph is the one the optimiser builds at load time, run by the same
kernels.

Several processes may start at once: each builds its copy in a temporary folder of its own and
renames the folder into place, so a reader only ever sees a complete copy; when two build at once
the first rename wins and the other process keeps using its own session. A copy that does not load
(damaged, truncated) is moved aside and removed, and the session is built from the original model,
which saves a fresh copy. A copy is keyed on the model file (path, size, modification time), the
onnxruntime version and the machine type, so a changed model or another onnxruntime never loads a
stale graph. A copy whose bytes changed but that still loads is not detected, as with the original
file. Each model takes one copy of its size (about 90 MB for all-MiniLM-L6-v2); deleting the
folder is always safe.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

CACHE_ENV = "ENGRAM_EMBEDDING_CACHE"
"""Environment variable naming the folder of optimised model copies (default
`~/.cache/engram/onnx`); `off` builds every session from the original model."""

_MODEL = "model.onnx"
_WEIGHTS = "model.weights"
_ABANDONED_SECONDS = 3600.0
_FORMAT = "1"
"""Changes when what a cache entry holds changes, so older entries are never read."""


def default_cache_dir() -> Path | None:
    """`$ENGRAM_EMBEDDING_CACHE`, else `~/.cache/engram/onnx`; None when the variable is `off`."""
    configured = os.environ.get(CACHE_ENV, "").strip()
    if configured.lower() == "off":
        return None
    return Path(configured or "~/.cache/engram/onnx").expanduser()


def cached_session(
    model_file: Path, make_options: Callable[[], Any], cache_dir: Path | None
) -> Any:
    """An `onnxruntime.InferenceSession` of `model_file` on the CPU, started from the cached
    optimised copy when there is one, else built from `model_file` (saving the copy).

    Args:
        model_file: The original `.onnx` model.
        make_options: Returns fresh `onnxruntime.SessionOptions` for the session (threads,
            logging, optimisation level); called once per attempt.
        cache_dir: Folder of optimised copies; None builds from `model_file` and saves nothing.

    Raises:
        Whatever onnxruntime raises for `model_file` itself: a broken original is not hidden.
    """
    import onnxruntime as ort

    if cache_dir is None:
        return _session(model_file, make_options())
    entry = cache_dir / _entry_name(model_file, ort.__version__)
    if (entry / _MODEL).is_file():
        options = make_options()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        try:
            return _session(entry / _MODEL, options)
        except (OSError, *_load_errors()) as exc:
            logger.warning(
                "the optimised copy of %s in %s does not load (%s); removing it and building "
                "the session from the original",
                model_file,
                entry,
                exc,
            )
            _discard(entry)
    return _build(model_file, make_options, entry)


def _build(model_file: Path, make_options: Callable[[], Any], entry: Path) -> Any:
    """The session of `model_file`, saving its optimised graph as the cache entry on the way."""
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        _remove_abandoned(entry.parent)
        building = Path(tempfile.mkdtemp(prefix=f".{entry.name}.", dir=entry.parent))
    except OSError as exc:
        logger.info("cannot cache the optimised model in %s (%s)", entry.parent, exc)
        return _session(model_file, make_options())
    try:
        options = make_options()
        options.optimized_model_filepath = str(building / _MODEL)
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_file_name", _WEIGHTS
        )
        options.add_session_config_entry(
            "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
        )
        try:
            session = _session(model_file, options)
        except (OSError, *_load_errors()) as exc:  # saving failed (a full disk), or the model
            logger.info("could not save the optimised model in %s (%s)", building, exc)
            return _session(model_file, make_options())
        _publish(building, entry)
        return session
    finally:
        shutil.rmtree(building, ignore_errors=True)  # gone already once published


def _publish(building: Path, entry: Path) -> None:
    """Move the complete copy in `building` into place, unless another process was first."""
    try:
        for name in (_WEIGHTS, _MODEL):
            with open(building / name, "rb") as saved:
                os.fsync(saved.fileno())  # the rename never reaches the disk before the data
        os.rename(building, entry)  # atomic; fails when `entry` exists (another process won)
    except OSError as exc:
        if not (entry / _MODEL).is_file():
            logger.info("could not cache the optimised model as %s (%s)", entry, exc)


def _remove_abandoned(cache_dir: Path) -> None:
    """Remove temporary folders left by builds that died (killed, out of disk) over an hour ago:
    a live build takes seconds."""
    cutoff = time.time() - _ABANDONED_SECONDS
    for leftover in cache_dir.glob(".*"):
        try:
            if leftover.is_dir() and leftover.stat().st_mtime < cutoff:
                shutil.rmtree(leftover, ignore_errors=True)
        except OSError:
            continue  # removed meanwhile by another process


def _discard(entry: Path) -> None:
    """Remove a cache entry; renamed aside first, so no process sees it half removed."""
    doomed = entry.with_name(f".{entry.name}.bad-{uuid.uuid4().hex}")
    try:
        os.rename(entry, doomed)
    except OSError:
        return  # another process removed it first
    shutil.rmtree(doomed, ignore_errors=True)


def _session(model_file: Path, options: Any) -> Any:
    import onnxruntime as ort

    return ort.InferenceSession(
        str(model_file), sess_options=options, providers=["CPUExecutionProvider"]
    )


def _entry_name(model_file: Path, ort_version: str) -> str:
    resolved = model_file.resolve()
    info = resolved.stat()
    parts = (_FORMAT, resolved, info.st_size, info.st_mtime_ns, ort_version, platform.machine())
    key = "\0".join(str(part) for part in parts)
    return f"{resolved.stem}-{hashlib.sha256(key.encode()).hexdigest()[:24]}"


def _load_errors() -> tuple[type[Exception], ...]:
    """The exceptions onnxruntime raises for a model it cannot load (none subclasses a built-in
    error type but `Exception`)."""
    from onnxruntime.capi import onnxruntime_pybind11_state as state

    return (
        state.Fail,
        state.InvalidArgument,
        state.InvalidGraph,
        state.InvalidProtobuf,
        state.NoSuchFile,
        state.NoModel,
        state.NotImplemented,
        state.RuntimeException,
    )
