"""The run's journal: every ingestion, answer and verdict, appended to the out folder as it comes.

`journal.jsonl` holds one JSON object per line, each with a `kind` (`ingest`, `answer`,
`verdict`) and the key that says what it is the result of: the history or question, the system,
and `setup`, a digest of everything the result depends on (the data file, the models' specs,
the prompts). A rerun of the same command finds its results under the same keys and skips that
work; a changed setting changes the digest, so nothing made under another setup is reused (it
stays in the file). A line cut short by an interruption is ignored.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)

JOURNAL_FILE = "journal.jsonl"
_KEY_FIELDS = ("kind", "history", "system", "question", "setup")


class Journal:
    """Results of earlier runs of the same out folder, and the file new ones are added to."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / JOURNAL_FILE
        self._records: dict[str, dict[str, Any]] = {}
        if self.path.is_file():
            self._load()

    def find(self, **key: str) -> dict[str, Any] | None:
        """The record journaled under `key` (its `_KEY_FIELDS` that apply), or None."""
        return self._records.get(_key(key))

    def add(self, record: dict[str, Any]) -> None:
        """Journal `record` now (appended and flushed, so an interruption keeps it)."""
        self._records[_key(record)] = record
        with self.path.open("a", encoding="utf-8") as file:
            file.write(json.dumps(record, ensure_ascii=False) + "\n")
            file.flush()

    def __len__(self) -> int:
        return len(self._records)

    def _load(self) -> None:
        skipped = 0
        for line in self.path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                skipped += 1
                continue
            if isinstance(record, dict) and "kind" in record:
                self._records[_key(record)] = record
        if skipped:
            logger.warning("%s: %d unreadable lines ignored (an interrupted write)", self.path, skipped)


def setup_digest(*parts: object) -> str:
    """A short digest of the settings a result depends on.

    Example:
        >>> setup_digest("locomo", "local:0.5b") == setup_digest("locomo", "local:0.5b")
        True
    """
    text = json.dumps([str(p) for p in parts], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def file_digest(path: Path) -> str:
    """The SHA-256 of a file (the data a run read), first 16 hex digits."""
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()[:16]


def _key(fields: dict[str, Any]) -> str:
    return json.dumps([fields.get(name) for name in _KEY_FIELDS])
