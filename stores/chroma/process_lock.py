"""Several processes on one embedded Chroma folder: one lock, and a reload of what others wrote.

Chroma's `PersistentClient` is not process-safe: each process keeps the collection's vector
index in memory, loaded when it first searched, and learns only of its own writes afterwards.
A process that searches after another one wrote misses (or, with an id filter naming the new
items, fails on) the other's items; a process that writes from a stale index saves that index
over the other's vectors. engram therefore coordinates every process on a folder itself:

- every store operation (reads too) holds the folder's lock, an OS file lock (`filelock`'s
  `lock_descriptor`: `flock` on Unix, `LockFileEx` on Windows) on `<folder>/engram.lock`,
  exclusively; threads of one process wait on an in-process lock first, so a process holds the
  file lock at most once; the kernel releases the lock of a process that dies;
- before its first change, a write replaces the folder's generation, a random token in
  `<folder>/engram.generation`; a crash after that point leaves a token no other process has
  seen, which makes each of them reload;
- when a process takes the lock and finds a token it did not write (another process changed the
  folder since its last operation), it restarts its client's Chroma system in place, which
  drops what it held in memory and reads the collection from disk, before it does anything
  else. The client and its system stay the same objects: a reload frees the old state instead of
  leaving a whole Chroma system behind (the vector index, SQLite connections, threads) in
  chromadb's cache of systems per folder.

The BM25 index beside Chroma (`lexical.sqlite3`) needs no reload: SQLite is shared by design
and `LexicalMirror` drops its caches when the file's data version moves. Its reads and writes
run inside the same hold, so BM25 and Chroma never disagree in another process's eyes.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import chromadb
from chromadb.api import ClientAPI, ServerAPI
from chromadb.api.client import Client
from chromadb.config import System
from filelock import lock_descriptor, unlock_descriptor

from engram.stores.chroma import unsaved_index

LOCK_FILE = "engram.lock"
GENERATION_FILE = "engram.generation"
LOCK_TIMEOUT_SECONDS = 300.0
"""How long an operation waits for another process's before it gives up with an error."""
_POLL_SECONDS = 0.002
"""How often a waiting process retries the file lock."""
_TOKEN_BYTES = 16


class FolderLock:
    """One store's coordination with the other processes on its Chroma folder.

    Args:
        folder: The `PersistentClient`'s folder.
        reopen: Called, with the lock held, when another process changed the folder since this
            store's last operation; it must replace the store's client and collection.
    """

    def __init__(self, folder: Path, reopen: Callable[[], None]) -> None:
        self._folder = _shared_folder(folder)
        self._reopen = reopen
        self._seen: bytes | None = None
        self._closed = False

    @contextmanager
    def hold(self) -> Iterator[bytes]:
        """Hold the folder for one operation, having reloaded what other processes wrote;
        yields the folder's generation (compare two to learn whether anything was written in
        between).

        Raises:
            TimeoutError: Another process held the folder for `LOCK_TIMEOUT_SECONDS`.
        """
        if self._closed:
            raise RuntimeError(f"this store on {self._folder.path} was closed: open a new one")
        with self._folder.locked():
            token = self._folder.generation()
            if self._seen is not None and token != self._seen:
                self._reopen()
            self._seen = token
            yield token

    def writing(self) -> None:
        """Call inside `hold`, before the first change to Chroma or the BM25 index."""
        self._seen = self._folder.bump()

    def close(self) -> None:
        """Done with the folder: the last store of the process on it closes its lock and
        generation files."""
        if not self._closed:
            self._closed = True
            _release_shared_folder(self._folder)


class Unshared:
    """The coordination of a client no other process opens (in memory, a server)."""

    @contextmanager
    def hold(self) -> Iterator[bytes]:
        yield b""

    def writing(self) -> None:
        pass

    def close(self) -> None:
        pass


def open_persistent_client(folder: Path) -> ClientAPI:
    """A `PersistentClient` on `folder`, opened holding the folder's lock: Chroma creates its
    SQLite tables when it first opens a folder, and processes opening a new folder at the same
    moment would race there ("table collections already exists")."""
    shared = _shared_folder(folder)
    try:
        with shared.locked():
            return chromadb.PersistentClient(path=str(folder))
    finally:
        _release_shared_folder(shared)


def folder_lock_for(client: ClientAPI, reopen: Callable[[], None]) -> FolderLock | Unshared:
    """A `FolderLock` for a `PersistentClient`, `Unshared` for any other client."""
    settings = client.get_settings()
    if settings.is_persistent and settings.persist_directory and not settings.chroma_server_host:
        return FolderLock(Path(settings.persist_directory), reopen)
    return Unshared()


def reload_client(client: ClientAPI) -> None:
    """Make `client` read everything afresh from disk: its Chroma system's API component is
    stopped (which drops the Rust bindings: their vector indexes, SQLite connections and
    threads) and started again on the same folder. Every client of the process sharing that
    system (chromadb shares one per folder) sees the fresh state; engram's stores on the folder
    only call Chroma holding the folder, as the caller does, so none is in a call meanwhile."""
    server = client._server  # type: ignore[attr-defined]  # the system's ServerAPI component
    if hasattr(server, "bindings"):  # not when an earlier restart failed to start again
        server.stop()
    server.start()


def client_on_new_system(client: ClientAPI) -> ClientAPI:
    """A client on `client`'s folder that reads everything afresh from disk, on a new Chroma
    system; `client` keeps its old system (and its stale view) for whoever else holds it."""
    settings = client.get_settings()
    system = System(settings)
    system.instance(ServerAPI)
    system.start()
    return Client.from_system(
        system,
        tenant=getattr(client, "tenant", "default_tenant"),
        database=getattr(client, "database", "default_database"),
    )


class _SharedFolder:
    """What all stores of one process on one folder share: the in-process lock, and the lock
    and generation files, each open for the process's lifetime (a lock is then two system calls,
    a generation one)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder
        self._threads = threading.RLock()
        self._lock_fd = _open(folder / LOCK_FILE)
        self._generation_fd = _open(folder / GENERATION_FILE)
        self._depth = 0
        self._bumped: bytes | None = None
        self._closed = False
        self.users = 0
        """How many open `FolderLock`s of the process use it."""

    @contextmanager
    def locked(self) -> Iterator[None]:
        with self._threads:
            if self._closed:  # its descriptors' numbers may belong to other files by now
                raise RuntimeError(f"the stores on {self.path} were closed: open a new one")
            if self._depth == 0:
                self._acquire()
                self._bumped = None
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    try:  # Chroma may have written freed memory into an unsaved index
                        unsaved_index.scrub_unsaved_indexes(self.path)
                    finally:
                        unlock_descriptor(self._lock_fd)

    def close(self) -> None:
        """Close the lock and generation files (a lock held by a thread is waited for)."""
        with self._threads:
            if not self._closed:
                self._closed = True
                os.close(self._lock_fd)
                os.close(self._generation_fd)

    def generation(self) -> bytes:
        """The folder's current generation token (empty before any write)."""
        return os.pread(self._generation_fd, _TOKEN_BYTES * 2, 0)

    def bump(self) -> bytes:
        """Replace the generation token (once per hold); returns the new one. A crash in the
        middle of the write leaves a mix of two tokens: a token nobody has seen either."""
        if self._bumped is None:
            token = os.urandom(_TOKEN_BYTES).hex().encode()
            os.pwrite(self._generation_fd, token, 0)
            self._bumped = token
        return self._bumped

    def _acquire(self) -> None:
        self._wait_for_lock()
        if _replaced(self._lock_fd, self.path / LOCK_FILE):  # deleted, e.g. by hand: the
            unlock_descriptor(self._lock_fd)  # others lock the file now at that name
            os.close(self._lock_fd)
            self._lock_fd = _open(self.path / LOCK_FILE)
            self._wait_for_lock()
        if _replaced(self._generation_fd, self.path / GENERATION_FILE):
            os.close(self._generation_fd)
            self._generation_fd = _open(self.path / GENERATION_FILE)

    def _wait_for_lock(self) -> None:
        deadline = time.monotonic() + LOCK_TIMEOUT_SECONDS
        while not lock_descriptor(self._lock_fd, blocking=False):
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"another process has held the engram data folder {self.path} for "
                    f"{LOCK_TIMEOUT_SECONDS:.0f} s; if it hangs, stop it (a killed process "
                    "releases the lock), or move to a Chroma server (ENGRAM_CHROMA_URL) when "
                    "many processes write at once"
                )
            time.sleep(_POLL_SECONDS)


_folders: dict[tuple[int, Path], _SharedFolder] = {}
_folders_lock = threading.Lock()


def _shared_folder(folder: Path) -> _SharedFolder:
    key = (os.getpid(), folder.resolve())  # a forked child opens its own files: flock's locks
    with _folders_lock:  # belong to open files, which fork shares
        if key not in _folders:
            _folders[key] = _SharedFolder(key[1])
        _folders[key].users += 1
        return _folders[key]


def _release_shared_folder(shared: _SharedFolder) -> None:
    """One `FolderLock` fewer on `shared`: the last one closes its files."""
    with _folders_lock:
        shared.users -= 1
        if shared.users > 0:
            return
        key = (os.getpid(), shared.path)
        if _folders.get(key) is shared:
            del _folders[key]
    shared.close()


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)


def _replaced(fd: int, path: Path) -> bool:
    """Whether `path` no longer names the file open as `fd`."""
    try:
        return os.stat(path).st_ino != os.fstat(fd).st_ino
    except FileNotFoundError:
        return True
