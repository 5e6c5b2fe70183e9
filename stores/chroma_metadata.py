"""Pure translation between LangGraph store concepts and Chroma records.

Namespaces are stored as one metadata field per prefix (`ns.p1` = `["users"]`, `ns.p2` =
`["users", "alice"]`, ...) plus `ns.depth`, so matching is segment by segment (`("foo",)` never
matches `("foobar",)`) and a prefix costs Chroma one equality condition. Top-level scalar fields of
a value are copied into metadata (`v:<field>`) so that filters can be pushed down to Chroma's
`where`; the pushed-down clause is always a superset, and `matches_filter` decides exactly.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

NS_DEPTH = "ns.depth"
KEY = "key"
CREATED_AT = "created_at"
UPDATED_AT = "updated_at"
EXPIRES_AT = "expires_at"
TTL_MINUTES = "ttl_minutes"
ITEM_ID = "item"
INDEXED = "indexed"
"""Written by earlier versions instead of `digest`; read by `has_vectors`."""
EXTRA_VECTORS = "extra_vectors"
DIGEST = "digest"
"""Digest of what the item's vectors and BM25 document come from (`LexicalDocument.digest` of
its indexed texts and context); present exactly when the item has vectors."""
INDEX_PATHS = "index_paths"
"""The put's own index fields as JSON, when they differ from the store's."""
VALUE_PREFIX = "v:"
LONG_PREFIX = "v~"
MAX_METADATA_STRING = 128
RANGE_OPERATORS = {"$gt", "$gte", "$lt", "$lte"}
OPERATORS = {"$eq", "$ne", *RANGE_OPERATORS}


def item_id(namespace: tuple[str, ...], key: str) -> str:
    """A stable Chroma id for the item at `(namespace, key)`."""
    raw = json.dumps([list(namespace), key], ensure_ascii=False)
    return hashlib.sha256(raw.encode()).hexdigest()[:40]


def prefix_field(depth: int) -> str:
    """The metadata field holding a namespace's first `depth` labels."""
    return f"ns.p{depth}"


def encode_labels(labels: tuple[str, ...]) -> str:
    return json.dumps(list(labels), ensure_ascii=False)


def namespace_metadata(namespace: tuple[str, ...]) -> dict[str, Any]:
    """Every prefix of the namespace (itself included) as one field: a prefix match is one
    equality condition, and `("foo",)` can never match `("foobar",)`."""
    meta: dict[str, Any] = {NS_DEPTH: len(namespace)}
    meta.update(
        {prefix_field(d): encode_labels(namespace[:d]) for d in range(1, len(namespace) + 1)}
    )
    return meta


def namespace_from_metadata(meta: dict[str, Any]) -> tuple[str, ...]:
    return tuple(json.loads(meta[prefix_field(int(meta[NS_DEPTH]))]))


def value_metadata(value: dict[str, Any]) -> dict[str, Any]:
    """Top-level scalar fields of `value` as filterable metadata.

    Strings longer than `MAX_METADATA_STRING` are not copied; a `v~<field>` flag marks them so
    that an equality filter still considers the item (and checks it exactly afterwards).
    """
    meta: dict[str, Any] = {}
    for field, v in value.items():
        if isinstance(v, str) and len(v) > MAX_METADATA_STRING:
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


def has_vectors(meta: dict[str, Any]) -> bool:
    """Whether the item has real vectors (not a placeholder); `indexed` is how records written
    before `digest` existed say so."""
    return bool(meta.get(DIGEST) or meta.get(INDEXED))


def expired(meta: dict[str, Any], now: float) -> bool:
    """Whether the item whose metadata this is has outlived its TTL at `now` (epoch seconds)."""
    expires = meta.get(EXPIRES_AT)
    return expires is not None and expires <= now


def namespace_clauses(namespace: tuple[str, ...]) -> list[dict[str, Any]]:
    """Where clauses matching exactly `namespace` (not its children)."""
    return [*prefix_clauses(namespace), {NS_DEPTH: len(namespace)}]


def prefix_clauses(prefix: tuple[str, ...]) -> list[dict[str, Any]]:
    """Where clauses matching every namespace that starts with `prefix` (no wildcards)."""
    return [{prefix_field(len(prefix)): encode_labels(prefix)}] if prefix else []


def literal_prefix(prefix: tuple[str, ...]) -> tuple[str, ...]:
    """The labels of a list_namespaces prefix before its first `*` wildcard."""
    return prefix[: prefix.index("*")] if "*" in prefix else prefix


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
    if op in RANGE_OPERATORS:
        return {name: {op: operand}} if _is_number(operand) and not _is_huge_int(operand) else None
    if op == "$ne":
        return None  # across types Chroma's $ne may disagree with ours: decided in Python
    if isinstance(operand, str):
        return {"$or": [{name: {"$eq": operand}}, {LONG_PREFIX + field: {"$eq": True}}]}
    if isinstance(operand, bool) or (_is_number(operand) and not _is_huge_int(operand)):
        return {name: {"$eq": operand}}
    return None


def _is_operator_dict(condition: Any) -> bool:
    return isinstance(condition, dict) and any(str(k).startswith("$") for k in condition)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _is_huge_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 2**63
