"""The pointer an offloaded tool result leaves in the context (`OffloadedPointer`): its
id, a summary, a preview and its length, as the JSON the model reads.

The summary is the memory model's (`engram.nodes.offload.summary`) or, offline, the extractive
one here: what kind of text it is and how long, then the lines that say something went wrong
(errors, failures, warnings), else its first lines.

Example:
    >>> summary = extractive_summary("GET /a 200\\nGET /b 500 error: timeout\\n", tool="logs")
    >>> print(summary)
    Text from logs: 37 characters, 2 lines. 1 line mentions an error or warning, such as: GET /b 500 error: timeout
    >>> pointer = OffloadedPointer(memoryId="r1", summary=summary, preview="GET /a", totalLength=37)
    >>> pointer_of(pointer_content(pointer))["memoryId"]
    'r1'
"""

from __future__ import annotations

import json
import re
from typing import Any, TypedDict

from engram.nodes.prompts import OFFLOADED_RESULT_NOTE
from engram.stores.working import looks_binary

OFFLOADED_KEY = "_OFFLOADED_"
"""The key that holds the pointer in the JSON left in the result's place."""
PREVIEW_CHARS = 500
"""Characters of the result's beginning shown in the pointer."""
SUMMARY_CHARS = 600
"""A pointer's summary is cut to this many characters, whoever wrote it."""
EXAMPLE_CHARS = 160
"""Each line quoted by the extractive summary is cut to this many characters."""

_NOTABLE = re.compile(
    r"\b(error|errors|exception|fail|failed|failure|fatal|panic|traceback|warn|warning|denied|"
    r"timeout|timed out)\b|错误|失败|异常|警告",
    re.IGNORECASE,
)


class OffloadedPointer(TypedDict):
    """What the model reads in place of an offloaded result (its keys are camelCase)."""

    memoryId: str
    summary: str
    preview: str
    totalLength: int


def pointer_content(pointer: OffloadedPointer) -> str:
    """The tool message's new content: `{"_OFFLOADED_": pointer, "note": how to read it}`."""
    return json.dumps({OFFLOADED_KEY: pointer, "note": OFFLOADED_RESULT_NOTE}, ensure_ascii=False)


def pointer_of(content: Any) -> OffloadedPointer | None:
    """The pointer a tool message's content holds, or None when it holds none."""
    if not isinstance(content, str) or OFFLOADED_KEY not in content:
        return None
    try:
        value = json.loads(content)
    except ValueError:
        return None
    pointer = value.get(OFFLOADED_KEY) if isinstance(value, dict) else None
    return pointer if isinstance(pointer, dict) and "memoryId" in pointer else None  # type: ignore[return-value]


def preview_of(text: str) -> str:
    """The result's first `PREVIEW_CHARS` characters, ending at a line's end when one is near."""
    if len(text) <= PREVIEW_CHARS:
        return text
    head = text[:PREVIEW_CHARS]
    end = head.rfind("\n")
    return (head[:end] if end > PREVIEW_CHARS // 2 else head) + " …"


def extractive_summary(text: str, *, tool: str, total_length: int | None = None) -> str:
    """What the text is, offline (module docstring); at most `SUMMARY_CHARS` characters.

    Args:
        text: The kept text (cleaned and redacted).
        tool: The tool's name.
        total_length: Characters the tool returned (default: the text's).
    """
    total = len(text) if total_length is None else total_length
    lines = text.splitlines()
    if looks_binary(text):
        return _cut(f"Binary-looking content from {tool}: {total:,} characters, mostly not text.")
    parts = [f"{_kind(text)} from {tool}: {total:,} characters, {len(lines):,} lines."]
    notable = [line.strip() for line in lines if _NOTABLE.search(line)]
    if notable:
        examples = "; ".join(_line(line) for line in notable[:2])
        many = "line mentions" if len(notable) == 1 else "lines mention"
        parts.append(f"{len(notable):,} {many} an error or warning, such as: {examples}")
    else:
        first = [_line(line) for line in lines if line.strip()][:2]
        if first:
            parts.append("It begins: " + " / ".join(first))
    return _cut(" ".join(parts))


def _kind(text: str) -> str:
    start = text.lstrip()[:1]
    if start in ("{", "["):
        try:
            value = json.loads(text)
        except ValueError:
            return "Text"
        if isinstance(value, dict):
            keys = ", ".join(list(value)[:8])
            return f"A JSON object (keys: {_line(keys)})"
        if isinstance(value, list):
            return f"A JSON list of {len(value):,} items"
    return "Text"


def _line(line: str) -> str:
    line = " ".join(line.split())
    return line if len(line) <= EXAMPLE_CHARS else line[: EXAMPLE_CHARS - 1] + "…"


def _cut(text: str) -> str:
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"
