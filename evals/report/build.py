"""Eval reports: targets, the `report.json` shape, and writing it with its HTML twin.

A report is a plain dict:

```
{"kind": "suite" | "locomo" | "qa",
 "mode": "offline" | "<memory model spec>" | "engine" | "graph",
 "metrics": {name: number or None, ..., "latency_p50_ms": {node: ms}, ...},
 "targets": {name: {"target": ">= 0.8", "value": 0.83, "pass": true}},
 "embedder": {...}, "versions": {...}, ...}
```

A metric whose value is None (nothing to measure) never passes its target.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from langchain_core.embeddings import Embeddings

from engram.evals.report.figures import Target, check_targets
from engram.evals.report.html import render_html
from engram.stores.secrets import redact_data

REPORT_JSON = "report.json"
REPORT_HTML = "report.html"

_PACKAGES = (
    "engram",
    "langgraph",
    "langchain-core",
    "chromadb",
    "onnxruntime",
    "tiktoken",
    "pydantic",
)


def build_report(
    *,
    kind: Literal["suite", "locomo", "qa"],
    mode: str,
    metrics: dict[str, Any],
    targets: Sequence[Target],
    embeddings: Embeddings,
    **extra: Any,
) -> dict[str, Any]:
    """The report dict (see the module docstring); `extra` keys follow the standard ones."""
    return {
        "kind": kind,
        "mode": mode,
        "metrics": metrics,
        "targets": check_targets(metrics, targets),
        "embedder": describe_embedder(embeddings),
        "versions": versions(),
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        **extra,
    }


def write_report(report: Mapping[str, Any], out: str | Path) -> tuple[Path, Path]:
    """Write `report.json` and `report.html` into `out` (created if needed); returns both paths.

    Every string in the report is redacted first (`engram.stores.secrets`): a report may quote
    what a dialog said or what was recalled, and it is a file that gets shared.

    Raises:
        NotADirectoryError: `out` exists and is not a folder.
    """
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise NotADirectoryError(f"{folder} exists and is not a folder: pass another --out")
    folder.mkdir(parents=True, exist_ok=True)
    json_path, html_path = folder / REPORT_JSON, folder / REPORT_HTML
    report = redact_data(dict(report))
    json_path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    html_path.write_text(render_html(report), encoding="utf-8")
    return json_path, html_path


def describe_embedder(embeddings: Embeddings) -> dict[str, Any]:
    """What embedded the store: class, dimensions, and for the local model its files."""
    info: dict[str, Any] = {"class": type(embeddings).__name__}
    dims = getattr(embeddings, "dims", None)
    if dims:
        info["dims"] = dims
    if type(embeddings).__name__ == "LocalEmbeddings":
        from engram.stores.embeddings import resolve_model_dir

        info["model"] = "all-MiniLM-L6-v2 (ONNX, onnxruntime)"
        info["model_dir"] = str(resolve_model_dir(getattr(embeddings, "model_dir", None)))
    return info


def versions() -> dict[str, str]:
    """Python and the versions of the packages that decide the results."""
    found = {"python": platform.python_version()}
    for name in _PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "not installed"
    return found
