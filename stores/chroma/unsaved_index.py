"""The vector index files Chroma rewrites from uninitialised memory, scrubbed before anyone looks.

Chroma (1.5, `PersistentClient`) keeps a collection's HNSW index in memory and saves it
(`index_metadata.pickle` beside hnswlib's `header.bin`, `data_level0.bin`, `length.bin`,
`link_lists.bin` in `<folder>/<segment id>/`) only once a client has applied
`hnsw:sync_threshold` (1000) writes. Until then no client loads the files: each new Chroma
system (a new process, a client opened after `ChromaStore.close`, `process_lock.reload_client`)
initialises a new index and replays Chroma's log into it. hnswlib's initialisation `malloc`s room
for 100 elements or more, does not clear it, and writes all of it to `data_level0.bin` and
`length.bin` at once. The room then carries whatever the process had freed there, texts
included: the text of a memory deleted (and purged) earlier in the same process, or only read
there before another process deleted it.

`scrub_unsaved_indexes` runs when a process releases the folder's lock, after every operation:
the files of an index never saved are overwritten with zeros past their last element (there is
none: nothing was saved), which a later system overwrites again when it initialises its own. A
saved index is loaded from its files (room included, zeros after a purge) and rewritten one
element at a time, each cleared before it is filled, so it needs nothing more than
`purge.purge_files`. A process that dies between Chroma's write and the scrub leaves the room
to the next operation of any engram process on the folder, which finds it non-zero.
"""

from __future__ import annotations

import logging
import struct
from pathlib import Path

logger = logging.getLogger(__name__)

SAVED_MARK = "index_metadata.pickle"
"""The file Chroma writes when it saves a segment's index; without it the files are not read."""
HEADER = struct.Struct("<iQQQQ")
"""The start of hnswlib's `header.bin`: version, offsetLevel0, max elements, element count,
bytes per element."""
HNSW_VERSION = 1
ROOM_FILES = (("data_level0.bin", None), ("length.bin", 4))
"""The files with room past the last element, and bytes per element (None: the header's)."""

_saved: set[Path] = set()
"""Segment folders seen saved (a saved index never goes back to unsaved)."""


def scrub_unsaved_indexes(folder: Path) -> int:
    """Zero the room of every never-saved vector index under a `PersistentClient` folder that
    is not zero already; returns the bytes overwritten. Call holding the folder's lock."""
    zeroed = 0
    for segment in _segments(folder):
        if segment in _saved:
            continue
        if (segment / SAVED_MARK).exists():
            _saved.add(segment)
            continue
        if not room_is_zero(segment):
            zeroed += zero_unused_room(segment)
    return zeroed


def room_is_zero(segment: Path) -> bool:
    """Whether an hnswlib segment's files hold only zeros past their last element."""
    for path, used in _rooms(segment):
        with path.open("rb") as f:
            f.seek(used)
            data = f.read()
        if data != bytes(len(data)):
            return False
    return True


def zero_unused_room(segment: Path) -> int:
    """Overwrite the room past the last element of an hnswlib segment's files with zeros;
    returns the bytes overwritten."""
    zeroed = 0
    for path, used in _rooms(segment):
        size = path.stat().st_size
        if size > used:
            with path.open("r+b") as f:
                f.seek(used)
                f.write(bytes(size - used))
            zeroed += size - used
    return zeroed


def _rooms(segment: Path) -> list[tuple[Path, int]]:
    """(file, bytes in use) of a segment's files with room; none for an unknown layout."""
    header_file = segment / "header.bin"
    try:
        header = header_file.read_bytes()
    except FileNotFoundError:
        return []
    if len(header) < HEADER.size:
        return []
    version, _, capacity, count, per_element = HEADER.unpack_from(header)
    if version != HNSW_VERSION or count > capacity or per_element <= 0:
        logger.warning("vector index %s has an unknown layout: its unused room is left", segment)
        return []
    return [
        (segment / name, count * (size or per_element))
        for name, size in ROOM_FILES
        if (segment / name).is_file()
    ]


def _segments(folder: Path) -> list[Path]:
    try:
        return [p for p in folder.iterdir() if (p / "header.bin").is_file()]
    except FileNotFoundError:
        return []
