"""Moving a user's data from the label an earlier engram gave it to today's, once per collection.

Until November 2026 a user id was its own namespace label, and any id without `.` was accepted.
Today's labels (`engram.stores.namespaces.user_label`) escape `%`, `.`, `*` and NUL, so an
earlier id that holds `*` or `%` (say `"*"` or `"50%off"`) now has another label (`"%2A"`,
`"50%25off"`). `relabel_users` moves the items of each such label, in engram's user roots
(`USER_ROOTS`), to the label of the same id, through the store's own ops (memories and episodes
are embedded again; the memories' own timestamps are kept, the store items' `created_at` becomes
the move's time).

Which labels are an earlier engram's:

- in a collection that held records of the earliest layout when it opened (`upgrade`: engram
  before November 2026, which never escaped), every label is an id as typed: each one today's
  mapping writes differently moves, the longest first, so `"50%25off"` (an id as typed) moves to
  `"50%2525off"` before `"50%off"` moves to `"50%25off"`, and two users never merge;
- in a later collection, only a label today's mapping never writes (`user_of_label` is None: a
  raw `*`, a `%` that is no escape); one whose target already holds items is left where it is,
  with a warning, rather than merged into them.

The collection's metadata records that the move ran (`LABELS_MARK`); a collection engram
creates is marked from the start, so a store opens without listing anything. A mark the
previous engram wrote in the lexical index counts too.
"""

from __future__ import annotations

import logging

from chromadb.api.models.Collection import Collection
from langgraph.store.base import BaseStore, ListNamespacesOp, Op, PutOp, SearchOp

from engram.stores.chroma import upgrade
from engram.stores.lexical.index import LexicalIndex
from engram.stores.namespaces import (
    EPISODE_NAMESPACE,
    MEMORY_NAMESPACE,
    USER_ROOTS,
    user_id_problem,
    user_label,
    user_of_label,
)

logger = logging.getLogger(__name__)

LABELS_MARK = "engram:user-labels"
"""The collection metadata key recording the labels' version."""
LABELS_VERSION = "2"
_EMBEDDED_ROOTS = (MEMORY_NAMESPACE, EPISODE_NAMESPACE)
"""Roots whose items are indexed (the others are registries, put with `index=False`)."""
_PAGE = 1000


def relabel_users(
    store: BaseStore,
    collection: Collection,
    *,
    as_typed: bool,
    lexical: LexicalIndex | None = None,
) -> int:
    """Move every item under an earlier engram's user label to today's label, once; returns
    how many moved.

    Args:
        store: The store over `collection`.
        collection: Its Chroma collection, whose metadata records that the move ran.
        as_typed: Every label is an id as typed (the collection held the earliest layout).
        lexical: The store's lexical index, where the previous engram marked the move done.
    """
    if labels_current(collection):
        return 0
    previous_mark = f"user-labels:{collection.id}"
    moved = 0
    if lexical is None or lexical.get_meta(previous_mark) != LABELS_VERSION:
        labels = _user_namespaces(store)
        moves = [(ns, (ns[0], user_label(ns[1]))) for ns in labels if _moves(ns[1], as_typed)]
        for source, target in sorted(moves, key=lambda move: -len(move[0][1])):
            if not as_typed and _holds_items(store, target):
                logger.warning(
                    "namespace %s holds an earlier engram's label of the user whose items are in "
                    "%s; left where it is rather than merged (move it by hand)",
                    source,
                    target,
                )
                continue
            moved += _move(store, source, target)
        if moved:
            logger.info("moved %d items of %d old user labels to today's labels", moved, len(moves))
    upgrade.mark(collection, LABELS_MARK, LABELS_VERSION)
    return moved


def labels_current(collection: Collection) -> bool:
    """Whether the collection's metadata says its labels are today's."""
    return upgrade.marked(collection, LABELS_MARK, LABELS_VERSION)


def _moves(label: str, as_typed: bool) -> bool:
    if user_id_problem(label) is not None:  # no id today: stays where it is
        return False
    if as_typed:
        return user_label(label) != label
    return user_of_label(label) is None


def _user_namespaces(store: BaseStore) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    offset = 0
    while True:
        (page,) = store.batch([ListNamespacesOp(max_depth=2, limit=_PAGE, offset=offset)])
        found.extend((ns[0], ns[1]) for ns in page if len(ns) == 2 and ns[0] in USER_ROOTS)
        if len(page) < _PAGE:
            return found
        offset += _PAGE


def _holds_items(store: BaseStore, namespace: tuple[str, str]) -> bool:
    (items,) = store.batch([SearchOp(namespace, limit=1)])
    return bool(items)


def _move(store: BaseStore, source: tuple[str, str], target: tuple[str, str]) -> int:
    """Move the items of `source` and of the namespaces below it to `target`'s label."""
    index = None if source[0] in _EMBEDDED_ROOTS else False
    moved = 0
    while True:
        (items,) = store.batch([SearchOp(source, limit=_PAGE)])
        if not items:
            return moved
        ops: list[Op] = [
            PutOp((*target, *i.namespace[2:]), i.key, i.value, index=index) for i in items
        ]
        store.batch(ops)  # written under the new label before the old one is removed
        store.batch([PutOp(tuple(i.namespace), i.key, None) for i in items])
        moved += len(items)
