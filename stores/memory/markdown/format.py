"""A user's memories as a human-readable, editable `memory.md`: render and parse.

The format is plain Markdown: one `##` section per category, one bullet per memory, and the
memory's id in an HTML comment at the end of the bullet (invisible when the file is rendered):

    # Memories of alice
    <!-- engram memory.md | user: alice | exported: 2026-06-01T12:00:00+00:00 -->

    ## Preferences

    - The user prefers dark mode in every editor <!-- id:3f2c9a1e-... -->
    - A memory of several lines goes on
      indented continuation lines <!-- id:7b1d... -->

    ## Facts

    - The user works at Acme <!-- id:... -->

    # Forgotten

    ## Facts

    - The user lived in Berlin <!-- id:... -->

Current memories come first, under the title; the optional `# Forgotten` and `# Superseded`
parts hold soft-deleted memories and history. The header comment names the user and the export
time, so an import knows which memories the file could have contained (see
`engram.stores.memory.markdown.importer` for what editing the file does). Headings are matched without
regard to case; a category's name (`## preference`) works as well as its heading.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from engram.stores.memory.types import CATEGORIES, Category, Memory

Status = Literal["current", "forgotten", "superseded"]

CATEGORY_HEADINGS: dict[str, str] = {
    "preference": "Preferences",
    "fact": "Facts",
    "project": "Projects",
    "goal": "Goals",
    "lesson": "Lessons",
    "skill": "Skills",
}
"""The `##` heading of each category, in the order the sections appear."""
STATUS_HEADINGS: dict[Status, str] = {"forgotten": "Forgotten", "superseded": "Superseded"}
"""The `#` headings of the optional parts."""

HOW_TO_EDIT = """<!--
How to edit (then run `engram memory import FILE --user {user}`; it shows the changes first):
- change a bullet's text to change that memory (the old text is kept as history);
- move a bullet under another category heading to change its category;
- delete a bullet, or move it under "# Forgotten", to forget that memory (restorable with
  `engram memory restore ID --user {user}`); only `engram memory delete` deletes for good;
- move a bullet out of "# Forgotten" to restore it;
- add a bullet without an id comment to add a memory.
Keep the id comments at the end of the bullets: they link bullets to memories.
"# Superseded" is history: edits there are ignored.
-->"""

_HEADER = (
    r"<!--\s*engram {kind}\s*\|\s*user:\s*(?:(?P<quoted>\"(?:[^\"\\]|\\.)*\")|(?P<bare>\S+))"
    r"\s*\|\s*exported:\s*(?P<at>\S+)\s*-->"
)
"""An export's header comment: the user id as a JSON string (a bare word in older files)."""


def export_header(kind: str, user_id: str, exported_at: str) -> str:
    """The header comment naming whose file it is (`kind`: "memory.md" or "learnings.md"); the
    user id as a JSON string whose `<` and `>` are escaped, so any id reads back whole and none
    can close the comment.

    Example:
        >>> line = export_header("memory.md", "alice smith -->", "2026-01-01T00:00:00Z")
        >>> print(line)
        <!-- engram memory.md | user: "alice smith --\\u003e" | exported: 2026-01-01T00:00:00Z -->
        >>> read_export_header("memory.md", line)
        ('alice smith -->', '2026-01-01T00:00:00Z')
    """
    quoted = json.dumps(user_id).replace("<", "\\u003c").replace(">", "\\u003e")
    return f"<!-- engram {kind} | user: {quoted} | exported: {exported_at} -->"


def read_export_header(kind: str, line: str) -> tuple[str, str] | None:
    """(user id, exported at) of an `export_header` line of `kind`, or None."""
    found = re.search(_HEADER.format(kind=re.escape(kind)), line)
    if found is None:
        return None
    try:
        user = json.loads(found["quoted"]) if found["quoted"] else found["bare"]
    except ValueError:
        raise MarkdownError(
            f"the header's user id {found['quoted']} is not a valid JSON string: restore it as "
            "exported, or delete the header line to import the file as new memories"
        ) from None
    return user, found["at"]


def display_user(user_id: str) -> str:
    """A user id as the title and the editing hints show it: one line, quoted for a shell when
    needed, `<` and `>` as `‹` and `›` (the hints are in a comment an id could otherwise close).

    Example:
        >>> display_user("alice"), display_user("alice smith"), display_user("a -->\\n# x")
        ('alice', "'alice smith'", "'a --› # x'")
    """
    line = " ".join(user_id.split()) or user_id
    return shlex.quote(line).replace("<", "‹").replace(">", "›")
_ID = re.compile(r"\s*<!--\s*id:\s*(?P<id>[^\s>]+)\s*-->\s*$")
_BULLET = re.compile(r"^[-*] (?P<text>.*)$|^[-*]$")


class MarkdownError(ValueError):
    """The file is not a `memory.md` engram can read; the message names the line."""


@dataclass(frozen=True)
class Bullet:
    """One memory as written in the file."""

    line: int
    """1-based line of the bullet's first line."""
    content: str
    category: Category
    status: Status
    """The part it is under: current (the title's), forgotten or superseded."""
    memory_id: str | None
    """The id from its comment; None for a bullet a person added."""


@dataclass(frozen=True)
class MarkdownDoc:
    """A parsed `memory.md`."""

    bullets: list[Bullet]
    user_id: str | None
    """From the header comment; None when there is none."""
    exported_at: str | None
    warnings: list[str] = field(default_factory=list)
    """Lines that were ignored, and why."""


def render_markdown(
    user_id: str,
    memories: Sequence[Memory],
    *,
    exported_at: str,
    include_forgotten: bool = False,
    include_superseded: bool = False,
) -> str:
    """The `memory.md` of `memories` (oldest first within a category).

    Args:
        user_id: Whose memories (named in the header).
        memories: The memories; those of a part not included are left out.
        exported_at: The export time written in the header (ISO-8601).
        include_forgotten: Add the `# Forgotten` part.
        include_superseded: Add the `# Superseded` part (history).
    """
    by_status: dict[Status, list[Memory]] = {"current": [], "forgotten": [], "superseded": []}
    for memory in sorted(memories, key=lambda m: (m.created_at, m.id)):
        by_status[status_of(memory)].append(memory)
    lines = [
        f"# Memories of {display_user(user_id)}",
        export_header("memory.md", user_id, exported_at),
        HOW_TO_EDIT.format(user=display_user(user_id)),
        "",
    ]
    lines += _categories(by_status["current"], keep_empty=True)
    for status, included in (("forgotten", include_forgotten), ("superseded", include_superseded)):
        if included:
            lines += [f"# {STATUS_HEADINGS[status]}", ""]  # type: ignore[index]
            lines += _categories(by_status[status], keep_empty=False)  # type: ignore[index]
    return "\n".join(lines).rstrip() + "\n"


def parse_markdown(text: str) -> MarkdownDoc:
    """Read a `memory.md` back (a leading byte order mark, as some editors write, is skipped).

    Raises:
        MarkdownError: An unknown heading, a bullet outside a category, two bullets with one
            id, or a bullet with two ids.
    """
    parser = _Parser()
    for number, line in enumerate(text.removeprefix("\ufeff").splitlines(), 1):
        parser.feed(number, line)
    parser.close_bullet()
    return MarkdownDoc(
        bullets=parser.bullets,
        user_id=parser.user_id,
        exported_at=parser.exported_at,
        warnings=parser.warnings,
    )


def status_of(memory: Memory) -> Status:
    """The part of the file a memory belongs to (superseded wins over forgotten)."""
    if not memory.current:
        return "superseded"
    return "forgotten" if memory.forgotten else "current"


def same_text(a: str, b: str) -> bool:
    """Equal up to whitespace (editors re-wrap and trim lines)."""
    return a.split() == b.split()


# -- rendering ------------------------------------------------------------------------------------


def _categories(memories: list[Memory], *, keep_empty: bool) -> list[str]:
    lines: list[str] = []
    for category, heading in CATEGORY_HEADINGS.items():
        group = [m for m in memories if m.category == category]
        if not group and not keep_empty:
            continue
        lines += [f"## {heading}", ""]
        lines += [_bullet(m) for m in group]
        lines += [""] if group else []
    return lines


def _bullet(memory: Memory) -> str:
    first, *rest = memory.content.split("\n")
    lines = [f"- {first}"] + [f"  {line}" if line.strip() else "" for line in rest]
    lines[-1] += f" <!-- id:{memory.id} -->"
    return "\n".join(lines)


# -- parsing --------------------------------------------------------------------------------------


class _Parser:
    def __init__(self) -> None:
        self.bullets: list[Bullet] = []
        self.warnings: list[str] = []
        self.user_id: str | None = None
        self.exported_at: str | None = None
        self.status: Status = "current"
        self.category: Category | None = None
        self.in_comment = False
        self.open: tuple[int, Category, list[str]] | None = None
        """The bullet being read: its line, its category and its lines so far."""
        self.seen_ids: dict[str, int] = {}

    def feed(self, number: int, line: str) -> None:
        stripped = line.strip()
        if self.in_comment:
            self.in_comment = "-->" not in line
            return
        if stripped.startswith("<!--"):
            if header := read_export_header("memory.md", stripped):
                self.user_id, self.exported_at = header
            self.in_comment = "-->" not in stripped
            return
        if self.open and (line.startswith(("  ", "\t")) or not stripped):
            self.open[2].append(line[2:] if line.startswith("  ") else line.lstrip("\t"))
            return
        self.close_bullet()
        if not stripped:
            return
        if line.startswith("# "):
            self._part(stripped[2:].strip())
        elif line.startswith("## "):
            self.category = _category(stripped[3:].strip(), number)
        elif bullet := _BULLET.match(line):
            if self.category is None:
                raise MarkdownError(
                    f"line {number}: a bullet before any category heading; put it under one of "
                    + ", ".join(f"'## {h}'" for h in CATEGORY_HEADINGS.values())
                )
            self.open = (number, self.category, [bullet["text"] or ""])
        else:
            self.warnings.append(
                f"line {number}: not a bullet, ignored (start it with '- ' to add a memory): "
                f"{_short(stripped)}"
            )

    def close_bullet(self) -> None:
        if self.open is None:
            return
        number, category, lines = self.open
        self.open = None
        ids = []
        for i, line in enumerate(lines):
            if found := _ID.search(line):
                ids.append(found["id"])
                lines[i] = line[: found.start()]
        if len(ids) > 1:
            raise MarkdownError(f"line {number}: one bullet with two ids ({', '.join(ids)})")
        memory_id = ids[0] if ids else None
        if memory_id in self.seen_ids:
            raise MarkdownError(
                f"lines {self.seen_ids[memory_id]} and {number} have the same id {memory_id}; "
                "remove the id comment from the copy to add it as a new memory"
            )
        content = "\n".join(line.rstrip() for line in lines).strip()
        if memory_id:
            self.seen_ids[memory_id] = number
        if not content:
            if memory_id:  # text erased: like deleting the bullet
                self.seen_ids.pop(memory_id)
                self.warnings.append(f"line {number}: empty bullet, read as deleted")
            return
        self.bullets.append(Bullet(number, content, category, self.status, memory_id))

    def _part(self, title: str) -> None:
        named = {h.casefold(): s for s, h in STATUS_HEADINGS.items()}
        self.status = named.get(title.casefold(), "current")
        self.category = None


def _category(title: str, number: int) -> Category:
    wanted = title.casefold()
    for category, heading in CATEGORY_HEADINGS.items():
        if wanted in (category, heading.casefold(), heading.casefold().rstrip("s")):
            return category  # type: ignore[return-value]
    raise MarkdownError(
        f"line {number}: unknown category heading '## {title}'; use one of "
        + ", ".join(f"'## {h}'" for h in CATEGORY_HEADINGS.values())
        + f" (or a category name: {', '.join(CATEGORIES)})"
    )


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
