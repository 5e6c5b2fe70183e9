"""Test session setup: offline model assets from ../shared, shared fixtures."""

from __future__ import annotations

import os
from pathlib import Path

_SHARED = Path(__file__).resolve().parents[1].parent / "shared"

os.environ.setdefault(
    "ENGRAM_EMBEDDING_MODEL_DIR", str(_SHARED / "models" / "all-MiniLM-L6-v2" / "onnx")
)
os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(_SHARED / "tiktoken"))
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
