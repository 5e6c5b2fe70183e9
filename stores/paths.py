"""Where engram keeps its data: one folder for the Chroma store and the checkpointer, or a
PostgreSQL database for the checkpoints of several machines."""

from __future__ import annotations

import os
from pathlib import Path

DATA_DIR_ENV = "ENGRAM_DATA_DIR"
DEFAULT_DATA_DIR = ".engram"
POSTGRES_URL_ENV = "ENGRAM_POSTGRES_URL"


def default_data_dir() -> Path:
    """The embedded data folder: `$ENGRAM_DATA_DIR` if set, else `./.engram`.

    It holds `chroma/` (the `ChromaStore`'s `PersistentClient`) and `checkpoints.sqlite`
    (the `SqliteSaver`), so one folder is one engram installation.
    """
    return Path(os.environ.get(DATA_DIR_ENV) or DEFAULT_DATA_DIR)


def default_chroma_path() -> Path:
    """The `PersistentClient` folder inside the data folder."""
    return default_data_dir() / "chroma"


def default_checkpoint_path() -> Path:
    """The SQLite checkpointer file inside the data folder."""
    return default_data_dir() / "checkpoints.sqlite"


def postgres_url_from_env() -> str | None:
    """`$ENGRAM_POSTGRES_URL`, or None when it is unset or empty."""
    return os.environ.get(POSTGRES_URL_ENV) or None
