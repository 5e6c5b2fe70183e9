"""Tool calls as nodes see them: engram's own tools by name, and a call written as one step.

The names are the tools' own: `engram.graph.tools` makes the memory tools and
`engram.graph.offload` the two that read offloaded results back, both with these constants
(nodes may not import the graph, so the names live here). A step is how the task state
(`engram.nodes.task.rules`) and procedures (`engram.nodes.procedures`) write a call:
`name(key=value, ...)` on one line, each value as JSON.

Example:
    >>> call_step("fetch_logs", {"service": "checkout", "lines": 50}, limit=80)
    'fetch_logs(service="checkout", lines=50)'
    >>> call_step("restart", {}, limit=80), call_step("upload", {"path": "a" * 40}, limit=20)
    ('restart()', 'upload(path="aaaaa…)')
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

SEARCH_MEMORY = "search_memory"
REMEMBER = "remember"
FORGET_MEMORY = "forget_memory"
RESTORE_MEMORY = "restore_memory"
DELETE_MEMORY = "delete_memory"
CONFIRM_MEMORY = "confirm_memory"
MEMORY_TOOL_NAMES = frozenset(
    {SEARCH_MEMORY, REMEMBER, FORGET_MEMORY, RESTORE_MEMORY, DELETE_MEMORY, CONFIRM_MEMORY}
)
"""engram's memory tools (`engram.graph.tools`)."""

READ_TOOL_RESULT = "read_tool_result"
SEARCH_TOOL_RESULT = "search_tool_result"
READER_TOOLS = frozenset({READ_TOOL_RESULT, SEARCH_TOOL_RESULT})
"""The tools that read offloaded results back (`engram.graph.offload`): their results are never
offloaded."""


def call_step(name: str, args: Mapping[str, Any], *, limit: int) -> str:
    """A tool call on one line, `name(key=value, ...)` with each value as JSON (a model's
    arguments may hold anything, line breaks included), cut to `limit` characters."""
    shown = ", ".join(
        f"{_flat(k)}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in args.items()
    )
    call = f"{_flat(name)}({shown})"
    return call if len(call) <= limit else call[: limit - 2] + "…)"


def _flat(text: object) -> str:
    return " ".join(str(text).split())
