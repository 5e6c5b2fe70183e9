"""Planning a store batch (pure): validation, grouping by kind, and the texts to embed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    ListNamespacesOp,
    Op,
    PutOp,
    SearchOp,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)

from engram.stores.chroma import metadata as md
from engram.stores.lexical.fusion import FUSION_METHODS
from engram.stores.lexical.hybrid import HybridSearchOp
from engram.stores.lexical.index import LexicalDocument

Fields = list[tuple[str, Any]]

CONTEXT_FIELD = "context"
"""A value's top-level string field that is BM25 context of the item (counts half)."""


@dataclass
class Plan:
    """One batch, grouped: reads see the store as it was before the batch's puts."""

    size: int
    gets: list[tuple[int, GetOp]] = field(default_factory=list)
    searches: list[tuple[int, SearchOp]] = field(default_factory=list)
    hybrids: list[tuple[int, HybridSearchOp]] = field(default_factory=list)
    list_ops: list[tuple[int, ListNamespacesOp]] = field(default_factory=list)
    puts: dict[tuple[tuple[str, ...], str], PutOp] = field(default_factory=dict)
    texts: dict[str, list[str]] = field(default_factory=dict)
    """Item id -> the texts its index fields select, in field order (the first vector rides on
    the item)."""
    queries: set[str] = field(default_factory=set)
    documents: dict[str, LexicalDocument] = field(default_factory=dict)
    """Item id -> its BM25 document (its texts and context), for items with texts."""
    ids: dict[tuple[tuple[str, ...], str], str] = field(default_factory=dict)
    """(namespace, key) of each put -> its Chroma id."""
    previous: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Item id -> the metadata of the item the batch's puts replace (read before embedding)."""
    reused: dict[str, list[float]] = field(default_factory=dict)
    """Item id -> its stored first vector, kept (with any others) because its texts did not
    change."""
    got: dict[str, dict[str, Any]] | None = None
    """Item id -> the metadata of the gets' items, when read with `previous` (one Chroma read
    for both)."""

    def flat_texts(self) -> list[str]:
        """The texts to embed: those of items whose vectors are not reused."""
        return [t for i, texts in self.texts.items() if i not in self.reused for t in texts]

    def reusable(self) -> list[str]:
        """Items whose replaced version was made from the same texts (and context): their
        vectors can stay (`previous` must have been read)."""
        return [
            item_id
            for item_id, texts in self.texts.items()
            if (record := md.record_of(self.previous.get(item_id))) is not None
            and record.digest == self.documents[item_id].digest
            and 1 + record.extra_vectors == len(texts)
        ]


def item_document(item_id: str, value: dict[str, Any], texts: Sequence[str]) -> LexicalDocument:
    """The BM25 document of an item whose index fields selected `texts`: those texts, and the
    value's `context` string as context (text that helps find the item without being it, such
    as the messages before an archived one)."""
    context = value.get(CONTEXT_FIELD)
    return LexicalDocument(item_id, "\n".join(texts), context if isinstance(context, str) else "")


def index_fields(paths: list[str] | None) -> Fields:
    """LangGraph's index `fields` as (path, tokenized path) pairs; `["$"]` when None, nothing
    for an empty list."""
    return [(p, p if p == "$" else tokenize_path(p)) for p in (["$"] if paths is None else paths)]


def plan(ops: Iterable[Op], fields: Fields | None) -> Plan:
    """Validate and group `ops`; with `fields` (an index is configured), collect texts to embed."""
    ops = list(ops)
    result = Plan(size=len(ops))
    for i, op in enumerate(ops):
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            result.gets.append((i, op))
        elif isinstance(op, SearchOp):
            md.validate_filter(op.filter)
            result.searches.append((i, op))
            if op.query:
                result.queries.add(op.query)
        elif isinstance(op, HybridSearchOp):
            _check_hybrid(op)
            result.hybrids.append((i, op))
            result.queries.add(op.query)
        elif isinstance(op, ListNamespacesOp):
            result.list_ops.append((i, op))
        elif isinstance(op, PutOp):
            if not op.namespace:
                raise ValueError(
                    "cannot put an item in the empty namespace: give at least one label"
                )
            if op.value is not None and not isinstance(op.value, dict):
                raise ValueError(f"item values must be dicts, got {type(op.value).__name__}")
            result.puts.pop((op.namespace, op.key), None)  # the last put of a key wins
            result.puts[(op.namespace, op.key)] = op
            result.ids[(op.namespace, op.key)] = md.item_id(op.namespace, op.key)
        else:
            raise ValueError(f"unknown store operation {type(op).__name__}")
    if fields is not None:
        for op in result.puts.values():
            if op.value is None or op.index is False:
                continue
            paths = fields if op.index is None else index_fields(list(op.index))
            texts = [t for _, tokens in paths for t in get_text_at_path(op.value, tokens)]
            if texts:
                item_id = result.ids[(op.namespace, op.key)]
                result.texts[item_id] = texts
                result.documents[item_id] = item_document(item_id, op.value, texts)
    return result


def _check_hybrid(op: HybridSearchOp) -> None:
    if not op.namespace:
        raise ValueError("a hybrid search needs a namespace: give at least one label")
    for label in op.namespace:
        if not isinstance(label, str) or not label or "." in label:
            raise InvalidNamespaceError(
                f"invalid namespace label {label!r} in {op.namespace}: labels are non-empty "
                "strings without '.'"
            )
    if not isinstance(op.query, str) or not op.query.strip():
        raise ValueError("a hybrid search needs a non-empty query; use SearchOp to list items")
    if op.depth < 1 or op.limit < 1:
        raise ValueError(
            f"a hybrid search's depth and limit must be >= 1, got {op.depth} and {op.limit}"
        )
    if op.fusion not in FUSION_METHODS:
        raise ValueError(f"unknown fusion method {op.fusion!r}: use one of {FUSION_METHODS}")
    if not 0.0 <= op.lexical_weight <= 1.0:
        raise ValueError(f"lexical_weight must be between 0 and 1, got {op.lexical_weight}")
    md.validate_filter(op.filter)
