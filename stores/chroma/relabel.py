"""Moving a user's data from the label an earlier engram gave it to today's, when a store opens.

Until November 2026 a user id was its own namespace label, and any id without `.` was accepted.
Today's labels (`engram.stores.namespaces.user_label`) escape `%`, `.` and `*`, so an earlier id
that holds `*` or `%` (say `"*"` or `"50%off"`) now has another label (`"%2A"`, `"50%25off"`).
`relabel_users` finds the namespaces of engram's user roots (`USER_ROOTS`) whose second label
today's mapping never writes (`user_of_label` is None: a raw `*`, or a `%` that is no escape) and
moves their items to the label of the same id. Items are moved through the store's own ops
(memories and episodes are embedded again; the memories' own timestamps are kept, the store
items' `created_at` becomes the move's time). An old label that happens to read as an escape
(an id typed as `"a%2Eb"`) is taken as today's label of `"a.b"`: the one case that stays as it is.

It runs when a `ChromaStore` opens; once its collection holds no old label, a mark in the
lexical index says so and later opens skip the scan (a store without a lexical index scans each
time it opens a non-empty collection).
"""

from __future__ import annotations

import logging

from langgraph.store.base import BaseStore, ListNamespacesOp, Op, PutOp, SearchOp

from engram.stores.lexical.index import LexicalIndex
from engram.stores.namespaces import (
    EPISODE_NAMESPACE,
    MEMORY_NAMESPACE,
    USER_ROOTS,
    user_label,
    user_of_label,
)

logger = logging.getLogger(__name__)

LABELS_VERSION = "2"
"""Written in the lexical index once a collection holds only today's labels."""
_EMBEDDED_ROOTS = (MEMORY_NAMESPACE, EPISODE_NAMESPACE)
"""Roots whose items are indexed (the others are registries, put with `index=False`)."""
_ALL = 1_000_000


def relabel_users(store: BaseStore, *, lexical: LexicalIndex | None, collection_id: str) -> int:
    """Move every item under an old user label to today's label; returns how many moved."""
    mark = f"user-labels:{collection_id}"
    if lexical is not None and lexical.get_meta(mark) == LABELS_VERSION:
        return 0
    (namespaces,) = store.batch([ListNamespacesOp(max_depth=2, limit=_ALL)])
    old = [ns for ns in namespaces if len(ns) == 2 and ns[0] in USER_ROOTS and _is_old(ns[1])]
    moved = 0
    for root, label in old:
        moved += _move(store, (root, label), (root, user_label(label)))
    if moved:
        logger.info("moved %d items of %d old user labels to today's labels", moved, len(old))
    if lexical is not None:
        lexical.set_meta(mark, LABELS_VERSION)
    return moved


def _is_old(label: str) -> bool:
    return user_of_label(label) is None


def _move(store: BaseStore, source: tuple[str, str], target: tuple[str, str]) -> int:
    (items,) = store.batch([SearchOp(source, limit=_ALL)])
    items = [i for i in items if tuple(i.namespace) == source]
    index = None if source[0] in _EMBEDDED_ROOTS else False
    ops: list[Op] = [PutOp(target, i.key, i.value, index=index) for i in items]
    store.batch(ops)  # written under the new label before the old one is removed
    store.batch([PutOp(source, i.key, None) for i in items])
    return len(items)
