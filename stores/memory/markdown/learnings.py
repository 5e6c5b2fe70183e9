"""A user's procedures as a human-readable, editable `learnings.md` (the
procedural memory file), beside `memory.md`: render and parse.

One `##` section per procedure (`engram.stores.memory.procedures`): the task it solved as the
heading, with the memory's id in an HTML comment, how often it worked, then its steps, one
numbered line each:

    # Learnings of alice
    <!-- engram learnings.md | user: alice | exported: 2026-06-01T12:00:00+00:00 -->

    ## Find why the checkout service fails <!-- id:3f2c9a1e-... -->
    Worked 3 times.

    1. fetch_logs(service="checkout")
    2. restart_service(name="checkout")

Parsed, each section is the bullet of a `skill` memory whose text is the procedure's, so an
import (`engram.stores.memory.markdown.importer`) applies an edited file as it applies an
edited `memory.md`: a changed task or step edits the procedure (the old version stays as
history), a section left out forgets it, a section without an id adds one. Only procedures are
compared with the file: the user's other memories are `memory.md`'s.

Example:
    >>> from engram.stores.memory.types import Memory
    >>> from engram.stores.memory.procedures import Procedure
    >>> p = Procedure("Ship the app", ("build()", "deploy(env=\\"prod\\")"), uses=2)
    >>> m = Memory.new(p.content, "skill", 0.75, now="2026-01-01T00:00:00+00:00", id="m1",
    ...                structured_data=p.data())
    >>> text = render_learnings("alice", [m], exported_at="2026-01-02T00:00:00+00:00")
    >>> print(text.split("-->\\n\\n", 1)[1], end="")
    ## Ship the app <!-- id:m1 -->
    Worked 2 times.
    <BLANKLINE>
    1. build()
    2. deploy(env="prod")
    >>> [b.content == m.content for b in parse_learnings(text).bullets]
    [True]
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engram.stores.memory.markdown.format import (
    Bullet,
    MarkdownDoc,
    MarkdownError,
    display_user,
    export_header,
    read_export_header,
    status_of,
)
from engram.stores.memory.procedures import (
    PROCEDURE_PREFIX,
    Procedure,
    is_procedure,
    parse_procedure,
    uses_of,
)
from engram.stores.memory.types import Memory

HOW_TO_EDIT = """<!--
How to edit (then run `engram memory import FILE --user {user}`; it shows the changes first):
- each "## " section is a procedure: the task it solved, then its steps, one numbered line
  each (a tool call as `tool(arguments)`, or a tool's name);
- change a task or its steps to change that procedure (the old version is kept as history);
- delete a section to forget that procedure (restorable with
  `engram memory restore ID --user {user}`);
- add a section without an id comment, with at least one numbered step, to add a procedure.
Keep the id comments at the end of the headings: they link sections to memories.
-->"""

_ID = re.compile(r"\s*<!--\s*id:\s*(?P<id>[^\s>]+)\s*-->\s*$")
_USES = re.compile(r"^Worked (?:once|\d+ times)\.$")
_STEP = re.compile(r"^\s*\d{1,3}[.)]\s+\S")


def is_learnings(text: str) -> bool:
    """Whether a file is a `learnings.md` (its title or its export comment says so)."""
    head = text.removeprefix("\ufeff").lstrip()[:400]
    return head.startswith("# Learnings") or read_export_header("learnings.md", head) is not None


def procedures_of(memories: Sequence[Memory]) -> list[Memory]:
    """The memories a `learnings.md` holds: the procedures (any state)."""
    return [m for m in memories if m.category == "skill" and is_procedure(m.structured_data)]


def render_learnings(user_id: str, memories: Sequence[Memory], *, exported_at: str) -> str:
    """The `learnings.md` of the current procedures among `memories`, oldest first."""
    lines = [
        f"# Learnings of {display_user(user_id)}",
        export_header("learnings.md", user_id, exported_at),
        HOW_TO_EDIT.format(user=display_user(user_id)),
        "",
    ]
    current = [m for m in procedures_of(memories) if status_of(m) == "current"]
    for memory in sorted(current, key=lambda m: (m.created_at, m.id)):
        procedure = parse_procedure(memory.content, uses=uses_of(memory.structured_data))
        if procedure is None:  # edited elsewhere into something else: memory.md shows it
            continue
        times = "once" if procedure.uses == 1 else f"{procedure.uses} times"
        lines += [f"## {procedure.task} <!-- id:{memory.id} -->", f"Worked {times}.", ""]
        lines += [f"{n}. {call}" for n, call in enumerate(procedure.calls, 1)]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def parse_learnings(text: str) -> MarkdownDoc:
    """Read a `learnings.md` back: one `skill` bullet per section, its text the procedure's.

    Raises:
        MarkdownError: A step before any section, two sections with one id, or a section with
            a task but no numbered step (an erased section, without steps and task, is read as
            deleted).
    """
    user_id = exported_at = None
    warnings: list[str] = []
    sections: list[tuple[int, str, str | None, list[str]]] = []
    in_comment = False
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), 1):
        stripped = line.strip()
        if in_comment:
            in_comment = "-->" not in line
            continue
        if stripped.startswith("<!--"):
            if header := read_export_header("learnings.md", stripped):
                user_id, exported_at = header
            in_comment = "-->" not in stripped
            continue
        if not stripped or line.startswith("# ") or _USES.match(stripped):
            continue
        if line.startswith("## "):
            title = stripped[3:]
            found = _ID.search(title)
            memory_id = found["id"] if found else None
            task = (title[: found.start()] if found else title).strip()
            sections.append((number, task, memory_id, []))
        elif _STEP.match(line):
            if not sections:
                raise MarkdownError(f"line {number}: a step before any '## ' section (a task)")
            sections[-1][3].append(stripped)
        else:
            warnings.append(f"line {number}: not a step, ignored (number it to add a step)")
    return MarkdownDoc(_bullets(sections, warnings), user_id, exported_at, warnings)


def _bullets(
    sections: list[tuple[int, str, str | None, list[str]]], warnings: list[str]
) -> list[Bullet]:
    bullets: list[Bullet] = []
    seen: dict[str, int] = {}
    for number, task, memory_id, steps in sections:
        if memory_id is not None:
            if memory_id in seen:
                raise MarkdownError(
                    f"lines {seen[memory_id]} and {number} have the same id {memory_id}; remove "
                    "the id comment from the copy to add it as a new procedure"
                )
            seen[memory_id] = number
        if not task and not steps:
            warnings.append(f"line {number}: empty section, read as deleted")
            continue
        content = "\n".join([f"{PROCEDURE_PREFIX} {task}", *steps])
        procedure = parse_procedure(content)
        if procedure is None:
            raise MarkdownError(
                f"line {number}: a procedure needs a task after '## ' and at least one numbered "
                "step under it ('1. tool(arguments)')"
            )
        bullets.append(
            Bullet(number, Procedure(procedure.task, procedure.calls).content, "skill",
                   "current", memory_id)
        )
    return bullets
