"""Pure translation between LangGraph store concepts and Chroma records.

An item is one Chroma record whose metadata holds everything but its vectors. Chroma's writes
cost per metadata field, and Chroma builds a trigram full-text index over every document, which
engram never queries (its own BM25 index is the lexical channel). So a record has no document;
its metadata holds:

- `value`: the item's value as JSON;
- `record`: every other fact about the item that only Python reads (key, timestamps, digest, ...;
  `ItemRecord`), as one JSON field;
- `ns.p1`, `ns.p2`, ...: the namespace's prefixes (`ns.p1` = `["users"]`, `ns.p2` =
  `=["users", "alice"]`), the namespace itself marked with a leading `=`: matching is segment by
  segment (`("foo",)` never matches `("foobar",)`), a prefix costs Chroma one `$in` condition and
  an exact namespace one equality;
- `ns.l2`: the namespace's second label alone (engram's namespaces name their user there), so
  that every namespace of one user, whatever its first label, is one equality;
- `v:<field>`: top-level scalar fields of the value, so that filters can be pushed down to
  Chroma's `where`; the pushed-down clause is always a superset, and `matches_filter` decides
  exactly;
- `expires_at`, for items with a TTL (the sweeper selects by it).

`engram.stores.chroma.upgrade` rewrites records of earlier layouts.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any

VALUE = "value"
RECORD = "record"
EXPIRES_AT = "expires_at"
ITEM_ID = "item"
"""On an extra vector's record: the id of the item it belongs to."""
VALUE_PREFIX = "v:"
LONG_PREFIX = "v~"
SECOND_LABEL = "ns.l2"
OWN_NAMESPACE = "="
"""Leads the value of the prefix field that holds the record's whole namespace."""
MAX_METADATA_STRING = 128
RANGE_OPERATORS = {"$gt", "$gte", "$lt", "$lte"}
OPERATORS = {"$eq", "$ne", *RANGE_OPERATORS}


@dataclass(frozen=True, slots=True)
class ItemRecord:
    """What an item record says about its item beyond its value, namespace and expiry.

    Attributes:
        key: The item's key.
        created_at: When the item was first put (epoch seconds), kept across updates.
        updated_at: When it was last put.
        digest: Digest of what the item's vectors and BM25 document come from
            (`LexicalDocument.digest` of its indexed texts and context); set exactly when the
            item has vectors.
        extra_vectors: How many vectors beyond the first (records `<item id>:<n>`).
        index_paths: The put's own index fields, when they differ from the store's.
        ttl_minutes: The item's time to live, to refresh its expiry on read.
        legacy_document: The record still has the document an earlier layout wrote (the value
            then, and still); the next put empties it (`engram.stores.chroma.upgrade`).
    """

    key: str
    created_at: float
    updated_at: float
    digest: str | None = None
    extra_vectors: int = 0
    index_paths: list[str] | None = None
    ttl_minutes: float | None = None
    legacy_document: bool = False

    @property
    def has_vectors(self) -> bool:
        """Whether the item has real vectors (not a placeholder)."""
        return self.digest is not None

    def to_json(self) -> str:
        fields: dict[str, Any] = {
            "key": self.key,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }
        if self.digest is not None:
            fields["digest"] = self.digest
        if self.extra_vectors:
            fields["extra_vectors"] = self.extra_vectors
        if self.index_paths is not None:
            fields["index_paths"] = self.index_paths
        if self.ttl_minutes is not None:
            fields["ttl_minutes"] = self.ttl_minutes
        if self.legacy_document:
            fields["legacy_document"] = True
        return json.dumps(fields, ensure_ascii=False)


def value_of(meta: dict[str, Any]) -> dict[str, Any]:
    """The value of the item whose record's metadata this is."""
    return json.loads(meta[VALUE])


def record_of(meta: dict[str, Any] | None) -> ItemRecord | None:
    """The `ItemRecord` in an item record's metadata; None for no metadata or an extra vector's."""
    if not meta or RECORD not in meta:
        return None
    return ItemRecord(**json.loads(meta[RECORD]))


def checked_record(meta: dict[str, Any]) -> ItemRecord:
    """The `ItemRecord` of an item record's metadata.

    Raises:
        ForeignRecordError: The record is not of this layout.
    """
    record = record_of(meta)
    if record is None:
        raise ForeignRecordError(f"Chroma record with metadata {meta}: {FOREIGN_RECORD}")
    return record


def item_id(namespace: tuple[str, ...], key: str) -> str:
    """A stable Chroma id for the item at `(namespace, key)`."""
    raw = json.dumps([list(namespace), key], ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()[:40]


def prefix_field(depth: int) -> str:
    """The metadata field holding a namespace's first `depth` labels."""
    return f"ns.p{depth}"


def encode_labels(labels: tuple[str, ...]) -> str:
    return json.dumps(list(labels), ensure_ascii=False)


@functools.lru_cache(maxsize=4096)
def namespace_metadata(namespace: tuple[str, ...]) -> dict[str, Any]:
    """Every prefix of the namespace as one field, the last (the namespace itself) marked: a
    prefix match is one condition, and `("foo",)` can never match `("foobar",)`. Cached (a
    batch's items share a few namespaces): copy it, never change it."""
    depth = len(namespace)
    meta: dict[str, Any] = {prefix_field(d): encode_labels(namespace[:d]) for d in range(1, depth)}
    meta[prefix_field(depth)] = OWN_NAMESPACE + encode_labels(namespace)
    if depth >= 2:
        meta[SECOND_LABEL] = namespace[1]
    return meta


class ForeignRecordError(ValueError):
    """A record of the collection is not of this engram's layout."""


FOREIGN_RECORD = (
    "not a record of this engram's layout (written by an earlier engram version after the "
    "collection was upgraded, or by another program): reopen the store, which upgrades earlier "
    "engram records, and keep other programs out of engram's collection"
)


def namespace_from_metadata(meta: dict[str, Any]) -> tuple[str, ...]:
    depth = 1
    while prefix_field(depth + 1) in meta:
        depth += 1
    own = meta.get(prefix_field(depth))
    if not isinstance(own, str) or not own.startswith(OWN_NAMESPACE):
        raise ForeignRecordError(f"Chroma record with metadata {meta}: {FOREIGN_RECORD}")
    return tuple(json.loads(own[len(OWN_NAMESPACE) :]))


def value_metadata(value: dict[str, Any]) -> dict[str, Any]:
    """Top-level scalar fields of `value` as filterable metadata.

    Strings longer than `MAX_METADATA_STRING` and numbers Chroma cannot compare (infinities,
    NaN: its `where` never matches them) are not copied; a `v~<field>` flag marks them so that
    an equality or range filter still considers the item (and checks it exactly afterwards).
    """
    meta: dict[str, Any] = {}
    for field, v in value.items():
        if (isinstance(v, str) and len(v) > MAX_METADATA_STRING) or _is_non_finite(v):
            meta[LONG_PREFIX + field] = True
        elif isinstance(v, (str, bool, int, float)) and not _is_huge_int(v):
            meta[VALUE_PREFIX + field] = v
    return meta


def extra_id(item_id: str, n: int) -> str:
    """The record of an item's (n+1)-th vector; item ids are hex, so the colon marks extras."""
    return f"{item_id}:{n}"


def record_owner(record_id: str) -> str:
    """The item a record (the item's own or one of its extra vectors) belongs to."""
    return record_id.split(":", 1)[0]


def expired(meta: dict[str, Any], now: float) -> bool:
    """Whether the item whose metadata this is has outlived its TTL at `now` (epoch seconds)."""
    expires = meta.get(EXPIRES_AT)
    return expires is not None and expires <= now


def namespace_clauses(namespace: tuple[str, ...]) -> list[dict[str, Any]]:
    """Where clauses matching exactly `namespace` (not its children)."""
    return [{prefix_field(len(namespace)): OWN_NAMESPACE + encode_labels(namespace)}]


def prefix_clauses(prefix: tuple[str, ...]) -> list[dict[str, Any]]:
    """Where clauses matching every namespace that starts with `prefix` (no wildcards)."""
    if not prefix:
        return []
    labels = encode_labels(prefix)
    return [{prefix_field(len(prefix)): {"$in": [labels, OWN_NAMESPACE + labels]}}]


def literal_prefix(prefix: tuple[str, ...]) -> tuple[str, ...]:
    """The labels of a list_namespaces prefix before its first `*` wildcard."""
    return prefix[: prefix.index("*")] if "*" in prefix else prefix


def listing_clauses(prefix: tuple[str, ...]) -> list[dict[str, Any]]:
    """Where clauses narrowing a list_namespaces prefix (a superset; wildcards are checked
    afterwards): its labels before the first `*`, and a second label after a leading `*`.

    Example:
        >>> listing_clauses(("*", "alice"))
        [{'ns.l2': 'alice'}]
    """
    clauses = prefix_clauses(literal_prefix(prefix))
    if len(prefix) >= 2 and prefix[0] == "*" and prefix[1] != "*":
        clauses.append({SECOND_LABEL: prefix[1]})
    return clauses


def filter_clauses(filter: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The part of a store filter Chroma can evaluate, as where clauses (a superset)."""
    validate_filter(filter)
    clauses: list[dict[str, Any]] = []
    for field, condition in (filter or {}).items():
        ops = condition if _is_operator_dict(condition) else {"$eq": condition}
        if not isinstance(ops, dict):
            continue
        for op, operand in ops.items():
            clause = _pushdown(field, op, operand)
            if clause is not None:
                clauses.append(clause)
    return clauses


def combine(clauses: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Chroma wants no where at all, one clause alone, or `$and` of two or more."""
    if not clauses:
        return None
    if len(clauses) == 1:
        return clauses[0]
    return {"$and": clauses}


def validate_filter(filter: dict[str, Any] | None) -> None:
    """Reject operators the store does not know, naming the supported ones."""
    for field, condition in (filter or {}).items():
        if _is_operator_dict(condition):
            unknown = set(condition) - OPERATORS
            if unknown:
                raise ValueError(
                    f"unsupported filter operator {sorted(unknown)} on field {field!r}: "
                    f"use one of {sorted(OPERATORS)}"
                )


def matches_filter(value: dict[str, Any], filter: dict[str, Any] | None) -> bool:
    """Whether `value` satisfies every condition of `filter` (conditions are AND-ed).

    Missing fields and values of the wrong type never raise: they simply do not match a
    comparison (`$ne` matches them). Range operators compare numbers with numbers and
    strings with strings (ISO timestamps sort correctly); booleans are not numbers.
    """
    return all(_matches(value.get(field), cond) for field, cond in (filter or {}).items())


def _matches(actual: Any, condition: Any) -> bool:
    if _is_operator_dict(condition):
        return all(_apply(actual, op, operand) for op, operand in condition.items())
    if isinstance(condition, dict):
        return isinstance(actual, dict) and all(
            _matches(actual.get(k), v) for k, v in condition.items()
        )
    return _equal(actual, condition)


def _apply(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return _equal(actual, operand)
    if op == "$ne":
        return not _equal(actual, operand)
    if _is_number(actual) and _is_number(operand):
        pass
    elif not (isinstance(actual, str) and isinstance(operand, str)):
        return False
    if op == "$gt":
        return actual > operand
    if op == "$gte":
        return actual >= operand
    if op == "$lt":
        return actual < operand
    return actual <= operand


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    return a == b


def _pushdown(field: str, op: str, operand: Any) -> dict[str, Any] | None:
    name = VALUE_PREFIX + field
    flagged = {LONG_PREFIX + field: {"$eq": True}}
    if op in RANGE_OPERATORS:
        if not _is_comparable_number(operand):
            return None  # Chroma rejects infinities and NaN in a where: decided in Python
        return {"$or": [{name: {op: operand}}, flagged]}
    if op == "$ne":
        return None  # across types Chroma's $ne may disagree with ours: decided in Python
    if isinstance(operand, str):
        return {"$or": [{name: {"$eq": operand}}, flagged]}
    if isinstance(operand, bool) or _is_comparable_number(operand):
        return {name: {"$eq": operand}}
    return None


def _is_operator_dict(condition: Any) -> bool:
    return isinstance(condition, dict) and any(str(k).startswith("$") for k in condition)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_comparable_number(v: Any) -> bool:
    """A number Chroma's `where` can compare: finite and within 64-bit integers."""
    return _is_number(v) and not _is_huge_int(v) and not _is_non_finite(v)


def _is_non_finite(v: Any) -> bool:
    return isinstance(v, float) and not math.isfinite(v)


def _is_huge_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 2**63
