"""Procedures (procedural memory): `skill` memories that hold a sequence of tool calls that worked.

A procedure's text is what people read and edit (in `memory.md`, `learnings.md` and the
prompt): the task it solved, then one numbered line per tool call:

    Steps that worked for: Find why the checkout service fails since Monday
    1. fetch_logs(service="checkout")
    2. restart_service(name="checkout")

Its `structured_data` is derived from that text (`procedure_fields`):
`{"skill_name", "workflow": [{"step", "tool"}]}` with each call as written (`call`), how often
it worked (`uses`) and the workflow's signature (`value`: the tools in order). Its `key` names
the signature (`procedure_key`). The same task done again with the same tools
(`same_procedure`) is one memory whose use is counted (`counted_use`); another task done with
the same tools, or the same task with other tools, is a memory of its own
(`engram.stores.memory.write.policy`).

Example:
    >>> p = Procedure("Find why checkout fails", ('fetch_logs(service="checkout")', "restart()"))
    >>> print(p.content)
    Steps that worked for: Find why checkout fails
    1. fetch_logs(service="checkout")
    2. restart()
    >>> parse_procedure(p.content) == p, p.tools, p.key
    (True, ('fetch_logs', 'restart'), 'skill.procedure.fetch_logs.restart')
    >>> again = Procedure("Find why checkout fails again", ("fetch_logs()", "restart()"))
    >>> other = Procedure("Find flights to Paris", ("fetch_logs()", "restart()"))
    >>> same_procedure(p.data(), again.data()), same_procedure(p.data(), other.data())
    (True, False)
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

from engram.stores.lexical.index import lexical_terms
from engram.stores.memory.types import normalize_text

PROCEDURE_PREFIX = "Steps that worked for:"
"""The first line of a procedure's text starts with this."""
KEY_PREFIX = "skill.procedure."
"""A procedure's key: this, then its tools in order."""
MAX_STEPS = 12
"""Tool calls kept per procedure (the first ones)."""
MAX_CALL_CHARS = 120
"""Characters of a call as written in a step."""
MAX_TASK_CHARS = 200
"""Characters of the task a procedure solved."""
SAME_TASK_OVERLAP = 0.6
"""How much two tasks' terms overlap at least to be the same task (`same_task`)."""
_KEY_CHARS = 80
"""Longer signatures are shortened to a hash in the key."""

_STEP = re.compile(r"^\s*(\d{1,3})[.)]\s+(?P<call>\S.*)$")
_TOOL = re.compile(r"^`?(?P<tool>[A-Za-z_][\w.-]*)")


@dataclass(frozen=True)
class Procedure:
    """A task and the tool calls that did it, in order."""

    task: str
    calls: tuple[str, ...]
    """Each call as written: `tool(arguments)`, or the tool's name alone."""
    uses: int = 1
    """Times it worked."""

    @property
    def tools(self) -> tuple[str, ...]:
        """The tool of each call."""
        return tuple(tool_of(call) for call in self.calls)

    @property
    def signature(self) -> str:
        """The tools in order, `>`-joined: what makes two workflows the same."""
        return ">".join(self.tools)

    @property
    def key(self) -> str:
        """The memory key of every procedure with this signature (`procedure_key`)."""
        return procedure_key(self.tools)

    @property
    def content(self) -> str:
        """The memory's text (module docstring)."""
        steps = [f"{n}. {call}" for n, call in enumerate(self.calls, 1)]
        return "\n".join([f"{PROCEDURE_PREFIX} {self.task}", *steps])

    def data(self) -> dict[str, Any]:
        """The memory's `structured_data` (module docstring)."""
        return {
            "skill_name": self.task,
            "workflow": [
                {"step": n, "tool": tool_of(call), "call": call}
                for n, call in enumerate(self.calls, 1)
            ],
            "value": self.signature,
            "uses": self.uses,
        }


def procedure_key(tools: tuple[str, ...]) -> str:
    """`skill.procedure.` and the tools, as a key (a hash of them when that is long).

    Example:
        >>> procedure_key(("Fetch-Logs", "restart"))
        'skill.procedure.fetch_logs.restart'
    """
    slug = ".".join(re.sub(r"[^a-z0-9_]+", "_", tool.casefold()).strip("_") for tool in tools)
    if len(slug) > _KEY_CHARS:
        slug = hashlib.sha256(">".join(tools).encode()).hexdigest()[:16]
    return KEY_PREFIX + slug


def tool_of(call: str) -> str:
    """The tool a step's call names: the identifier it starts with."""
    found = _TOOL.match(call.strip())
    return found["tool"] if found else call.strip().split()[0]


def parse_procedure(content: str, *, uses: int = 1) -> Procedure | None:
    """The procedure a memory's text writes, or None when it is not one (a first line starting
    `PROCEDURE_PREFIX`, a task, and at least one numbered step)."""
    first, _, rest = content.strip().partition("\n")
    if not first.startswith(PROCEDURE_PREFIX):
        return None
    task = first[len(PROCEDURE_PREFIX) :].strip()
    calls = []
    for line in rest.splitlines():
        if step := _STEP.match(line):
            calls.append(step["call"].strip())
    if not task or not calls:
        return None
    return Procedure(task, tuple(calls[:MAX_STEPS]), uses)


def procedure_fields(content: str, previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """The `key` and `structured_data` of a memory whose text is a procedure (none for any other
    text), keeping the use count of `previous` (the data of the memory it edits): what a person
    writes in a file or an edit becomes a procedure as one learned from a run does.

    Example:
        >>> procedure_fields("Steps that worked for: ship it\\n1. build\\n2. deploy(env=1)")["key"]
        'skill.procedure.build.deploy'
        >>> procedure_fields("I use Vim")
        {}
    """
    procedure = parse_procedure(content, uses=uses_of(previous))
    if procedure is None:
        return {}
    return {"key": procedure.key, "structured_data": procedure.data()}


def uses_of(data: dict[str, Any] | None) -> int:
    """Times a procedure worked, from its `structured_data` (1 when it does not say)."""
    uses = (data or {}).get("uses")
    return uses if isinstance(uses, int) and uses > 0 else 1


def is_procedure(data: dict[str, Any] | None) -> bool:
    """Whether `structured_data` is a procedure's."""
    return isinstance(data, dict) and isinstance(data.get("workflow"), list)


def same_procedure(existing: dict[str, Any] | None, incoming: dict[str, Any] | None) -> bool:
    """Whether two procedures' `structured_data` are the same procedure: the same tools in the
    same order (`value`) for the same task (`same_task` of their `skill_name`)."""
    if not (is_procedure(existing) and is_procedure(incoming)):
        return False
    old, new = existing or {}, incoming or {}
    return old.get("value") == new.get("value") and same_task(
        str(old.get("skill_name", "")), str(new.get("skill_name", ""))
    )


def same_task(a: str, b: str) -> bool:
    """Whether two task texts are the same task: their terms (the lexical index's: stemmed words
    without stop words, Chinese character bigrams) overlap by at least `SAME_TASK_OVERLAP`
    (shared terms over all terms, Jaccard), or, with no terms, their normalised texts are equal.

    The bar is lexical so that it is deterministic and needs no model: a task asked again in
    other words around the same subject passes ("Fix the checkout outage" and "Please fix the
    checkout outage again": 3 of 4 terms), two tasks that differ in their subject do not
    ("Fix the checkout outage" and "Fix the payments outage": 2 of 4; "find flights to Paris"
    and "check the weather in Paris": 1 of 5).

    Example:
        >>> same_task("Fix the checkout outage", "Please fix the checkout outage again.")
        True
        >>> same_task("Fix the checkout outage", "Fix the payments outage")
        False
    """
    terms_a, terms_b = set(lexical_terms(a)), set(lexical_terms(b))
    if not terms_a or not terms_b:
        return normalize_text(a) == normalize_text(b)
    return len(terms_a & terms_b) / len(terms_a | terms_b) >= SAME_TASK_OVERLAP


def counted_use(existing: dict[str, Any], incoming: dict[str, Any]) -> dict[str, Any]:
    """The data of a procedure that worked again: its uses summed, the newest calls kept."""
    return {**incoming, "uses": uses_of(existing) + uses_of(incoming)}

