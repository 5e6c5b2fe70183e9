"""The Chroma release engram is tested with, checked when a store opens.

engram reads and rewrites files that Chroma 1.5 lays out: the log table `embeddings_queue` of
`chroma.sqlite3` and hnswlib's segment files, to purge what people delete
(`engram.stores.chroma.purge`) and to keep several processes on one folder safe
(`engram.stores.chroma.process_lock`). Another release may lay them out differently, and then a
delete could leave text behind or a folder could break. `pyproject.toml` pins the release; a store
refuses to open on any other (installed by hand, say) and says what to install.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

TESTED = (1, 5)
"""The `chromadb` release (major, minor) engram is tested with; any patch release of it."""


class ChromaVersionError(RuntimeError):
    """The installed `chromadb` is not the release engram is tested with."""


def requirement() -> str:
    """The pip requirement of the tested release: `chromadb>=1.5,<1.6`."""
    major, minor = TESTED
    return f"chromadb>={major}.{minor},<{major}.{minor + 1}"


def check_chroma_version(installed: str | None = None) -> None:
    """Refuse a `chromadb` other than the tested release.

    Raises:
        ChromaVersionError: naming the installed release and the command that installs the
            tested one.
    """
    if installed is None:
        import chromadb

        installed = chromadb.__version__
    parts = installed.split(".")
    if tuple(int(p) if p.isdigit() else -1 for p in parts[:2]) == TESTED:
        return
    try:
        engram = f"engram {version('engram')}"
    except PackageNotFoundError:
        engram = "engram"
    raise ChromaVersionError(
        f"{engram} is tested with chromadb {TESTED[0]}.{TESTED[1]}, and chromadb {installed} is "
        "installed: engram reads Chroma's own files to purge what people delete, and another "
        f"release may lay them out differently. Install the tested one: pip install "
        f"'{requirement()}'"
    )
