"""The settings table of `docs/configuration.md` stays true to `engram.graph.Context`.

The table is generated from the dataclass (field names, types and defaults from the source of
`nodes/context.py`, meanings from the field docstrings). To regenerate it after changing
`Context`, run ``python tests/test_settings_table.py`` and paste the output under the page's
"Settings" heading.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from pathlib import Path

import engram.nodes.context as context_module
from engram.graph import Context

PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
SETTINGS_HEADING = "## Settings (engram.graph.Context)"


def context_rows() -> list[tuple[str, str, str, str]]:
    """(name, type, default, meaning) per `Context` field, in declaration order."""
    source = inspect.getsource(context_module)
    [cls] = [
        n for n in ast.parse(source).body if isinstance(n, ast.ClassDef) and n.name == "Context"
    ]
    docs: dict[str, str] = {}
    for field, doc in zip(cls.body, cls.body[1:]):
        if (
            isinstance(field, ast.AnnAssign)
            and isinstance(doc, ast.Expr)
            and isinstance(doc.value, ast.Constant)
            and isinstance(doc.value.value, str)
        ):
            docs[field.target.id] = " ".join(doc.value.value.split())
    declared = {n.target.id: n for n in cls.body if isinstance(n, ast.AnnAssign)}
    rows = []
    for field in dataclasses.fields(Context):
        node = declared[field.name]
        default = ast.get_source_segment(source, node.value) if node.value else "(required)"
        rows.append(
            (
                field.name,
                ast.get_source_segment(source, node.annotation) or "",
                default or "",
                docs.get(field.name, ""),
            )
        )
    return rows


def context_table() -> str:
    """The markdown table of every `Context` field."""
    lines = ["| setting | type | default | meaning |", "|---|---|---|---|"]
    for name, type_, default, meaning in context_rows():
        cells = [f"`{name}`", f"`{type_}`", f"`{default}`", meaning]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def docs_table() -> str:
    """The table lines right under the page's settings heading."""
    text = PAGE.read_text(encoding="utf-8")
    assert SETTINGS_HEADING in text, f"docs/configuration.md lost its heading {SETTINGS_HEADING!r}"
    after = text.split(SETTINGS_HEADING, 1)[1].split("\n", 1)[1]
    lines = after.strip("\n").splitlines()
    table = []
    for line in lines:
        if not line.startswith("|"):
            break
        table.append(line)
    return "\n".join(table)


def test_every_context_field_has_a_row_in_the_docs() -> None:
    listed = set(re.findall(r"^\| `(\w+)` \|", docs_table(), flags=re.MULTILINE))
    fields = {f.name for f in dataclasses.fields(Context)}
    assert fields - listed == set(), "Context fields missing from the settings table"
    assert listed - fields == set(), "the settings table lists fields Context lacks"


def test_the_docs_table_is_the_generated_one() -> None:
    assert docs_table() == context_table(), (
        "docs/configuration.md's settings table is stale: regenerate it with "
        "`python tests/test_settings_table.py`"
    )


def test_the_generated_defaults_are_the_dataclass_defaults() -> None:
    rows = context_rows()
    assert [r[0] for r in rows] == [f.name for f in dataclasses.fields(Context)]
    assert all(meaning for *_, meaning in rows), "every Context field needs a docstring"
    defaults = {f.name: f.default for f in dataclasses.fields(Context)}
    for name, _, default, _ in rows:
        try:
            literal = ast.literal_eval(default)
        except ValueError:  # a name such as DEFAULT_SYSTEM_PROMPT
            literal = getattr(context_module, default)
        assert literal == defaults[name], name


if __name__ == "__main__":
    print(context_table())
