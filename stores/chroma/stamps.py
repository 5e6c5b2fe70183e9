"""Version stamps of a Chroma server's namespaces: has another process written to one since?

On a Chroma server other machines write too, so a store's lexical mirror (its BM25 index and
the id list a vector search restricts Chroma to) can fall behind. Comparing a namespace with the
server in full costs a read of every record of it; a stamp says with one read by id whether that
is needed:

- each namespace has one record in a side collection, `<collection>.stamps`, whose id is a
  hash of the collection's id and the namespace (`record_id`) and whose metadata holds one key
  per store that wrote to the namespace (`Stamps.writer`), with a fresh random token as value;
- a store announces a write to a namespace: before it, its key says `writing`; after it (when
  the write has landed, or failed), a new token. Chroma merges the keys of an upsert into the
  record's metadata, so writers never overwrite each other's tokens;
- a store compares a namespace with the server in full only when the other stores' keys differ
  from those its mirror's index file has seen (read right before the file's last comparison of
  the namespace, plus the writes the stores using that file made since), or a key says
  `writing` (a write in flight, or one whose writer died: never recorded as seen, so never
  trusted). Reading the stamp before the items makes a race cost one comparison more, never a
  stale answer; a store's own key is left out, as its own writes reach its mirror directly;
- a namespace without a record (data written before stamps existed, or a namespace deleted
  whole) is compared in full before every search; the comparison that finds records in it
  stamps it;
- a key not renewed for `PRUNE_SECONDS` is removed by the next store that reads it (its writer
  has long finished, or died), which adds a new key of no store in the same update: the record
  never empties, and every store, the pruning one too, sees the change and compares once.

The record holds no label and no text: a hash, and tokens. Deleting a user's namespaces drops
their records (`Stamps.drop`). An engram older than stamps writes without announcing: run one
engram version against a server at a time.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Collection as Many
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from chromadb.api import ClientAPI
from chromadb.api.models.Collection import Collection

Namespace = tuple[str, ...]

SUFFIX = ".stamps"
"""The side collection's name is the store collection's name and this."""
PRUNE_SECONDS = 86_400.0
"""A writer's key not renewed for this long is removed by the next reader."""
WRITING = "writing"
"""The end of a key's value while its writer's write is in flight."""
_KEY_PREFIX = "w"
_PLACE = [1.0]
"""Every record's vector (Chroma needs one; the side collection is never queried)."""


@dataclass(frozen=True)
class Stamp:
    """A namespace's stamp as one store reads it."""

    keys: dict[str, str]
    """Every writer's key and token."""
    writer: str
    """The reading store's key."""

    @property
    def others(self) -> dict[str, str]:
        """The other stores' keys and tokens."""
        return {key: token for key, token in self.keys.items() if key != self.writer}

    def others_as_in(self, keys: dict[str, str]) -> bool:
        """Whether the other stores' keys and tokens are those of `keys` (read earlier)."""
        return self.others == Stamp(keys, self.writer).others

    @property
    def settled(self) -> bool:
        """Whether no write to the namespace is in flight (or was cut short)."""
        return not any(token.endswith(WRITING) for token in self.keys.values())


class Stamps:
    """The stamps of one store collection's namespaces, read and written as one writer.

    Args:
        client: A client of the Chroma server.
        collection: The store's collection.
        max_batch: The client's largest write.
    """

    def __init__(self, client: ClientAPI, collection: Collection, *, max_batch: int) -> None:
        self.collection_id = str(collection.id)
        self.max_batch = max_batch
        self.side = client.get_or_create_collection(
            side_name(collection.name), embedding_function=None
        )
        self.writer = _new_key()
        """This store's key: its own writes reach its mirror directly."""
        self._tokens: dict[str, str] = {}
        """Record id -> the last token this store's key got there after a write."""

    def read(self, namespace: Namespace) -> Stamp | None:
        """The namespace's stamp (None: it has none), pruned of keys not renewed for
        `PRUNE_SECONDS`."""
        record = self.record_id(namespace)
        got = self.side.get(ids=[record], include=["metadatas"])
        if not got["ids"]:
            return None
        keys = {k: str(v) for k, v in (got["metadatas"][0] or {}).items()}
        if stale := [k for k, token in keys.items() if _age(token) > PRUNE_SECONDS]:
            filler = {_new_key(): _token(writing=False)}  # a change every reader sees as one
            self.side.update(ids=[record], metadatas=[{**dict.fromkeys(stale), **filler}])
            keys = {k: v for k, v in keys.items() if k not in stale} | filler
        return Stamp(keys, self.writer)

    @contextmanager
    def announce(self, namespaces: Many[Namespace]) -> Iterator[None]:
        """Around a write to these namespaces: this store's key says `writing` before it and
        holds a new token after it, whether the write succeeded or not."""
        if not namespaces:
            yield
            return
        self.stamp(namespaces, writing=True)
        try:
            yield
        finally:
            self.stamp(namespaces)

    def stamp(self, namespaces: Many[Namespace], *, writing: bool = False) -> str:
        """Give this store's key in these namespaces' stamps a new token (creating the stamps);
        returns it."""
        ids = sorted({self.record_id(ns) for ns in namespaces})
        token = _token(writing=writing)
        for chunk in self._chunks(ids):
            self.side.upsert(
                ids=chunk,
                embeddings=[_PLACE] * len(chunk),
                metadatas=[{self.writer: token}] * len(chunk),
            )
        if not writing:
            self._tokens.update(dict.fromkeys(ids, token))
        return token

    def token(self, namespace: Namespace) -> str | None:
        """The token this store's key last got in the namespace's stamp after a write."""
        return self._tokens.get(self.record_id(namespace))

    def drop(self, namespaces: Many[Namespace]) -> None:
        """Delete these namespaces' stamps (their items are gone)."""
        for chunk in self._chunks(sorted({self.record_id(ns) for ns in namespaces})):
            self.side.delete(ids=chunk)

    def record_id(self, namespace: Namespace) -> str:
        """The id of a namespace's stamp: a hash of the collection's id and the namespace."""
        text = "\x00".join((self.collection_id, *namespace))
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def _chunks(self, ids: list[str]) -> Iterator[list[str]]:
        for start in range(0, len(ids), self.max_batch):
            yield ids[start : start + self.max_batch]


def side_name(name: str) -> str:
    """The side collection of the store collection `name` (Chroma allows 512 characters)."""
    if len(name) + len(SUFFIX) <= 512:
        return name + SUFFIX
    return f"{name[:480]}-{hashlib.sha256(name.encode()).hexdigest()[:16]}{SUFFIX}"


def _new_key() -> str:
    return f"{_KEY_PREFIX}{secrets.token_hex(8)}"


def _token(*, writing: bool) -> str:
    token = f"{time.time():.0f}-{secrets.token_hex(8)}"
    return f"{token}-{WRITING}" if writing else token


def _age(token: str) -> float:
    try:
        return time.time() - float(token.split("-", 1)[0])
    except ValueError:  # not a token of this module: left alone
        return 0.0
