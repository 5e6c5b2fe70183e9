"""The settings table of `docs/configuration.md` stays true to `engram.graph.Context`.

The table is generated from the settings classes of `nodes/context.py`: one row per setting,
a group's settings under their dotted name (`recall.k`), types and defaults from the source,
meanings from the field docstrings. To regenerate it after changing a setting, run
``python tests/test_settings_table.py`` and paste the output under the page's "Settings" heading.
"""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path
from typing import Literal, get_args, get_origin

from pydantic import BaseModel

import engram.nodes.context as context_module
from engram.graph import Context

PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
SETTINGS_HEADING = "## Settings (engram.graph.Context)"
SOURCE = inspect.getsource(context_module)
CLASSES = {n.name: n for n in ast.parse(SOURCE).body if isinstance(n, ast.ClassDef)}


def setting_rows(model: type[BaseModel] = Context, prefix: str = "") -> list[tuple[str, ...]]:
    """(name, type, default, meaning) per setting, in declaration order, groups' settings
    after the top-level ones."""
    body = CLASSES[model.__name__].body
    declared = {n.target.id: n for n in body if isinstance(n, ast.AnnAssign)}
    rows, groups = [], []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            groups.append((annotation, f"{prefix}{name}."))
            continue
        node = declared[name]
        if get_origin(annotation) is Literal:  # a named choice: its options say more than its name
            type_ = " | ".join(f'"{option}"' for option in get_args(annotation))
        else:
            type_ = ast.get_source_segment(SOURCE, node.annotation) or ""
        rows.append(
            (
                f"{prefix}{name}",
                type_,
                _default(node),
                " ".join((field.description or "").split()),
            )
        )
    for group, group_prefix in groups:
        rows += setting_rows(group, group_prefix)
    return rows


def _default(node: ast.AnnAssign) -> str:
    value = node.value
    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "Field":
        value = value.args[0]
    return ast.get_source_segment(SOURCE, value) or ""


def settings_table() -> str:
    """The markdown table of every setting."""
    lines = ["| setting | type | default | meaning |", "|---|---|---|---|"]
    for name, type_, default, meaning in setting_rows():
        cells = [f"`{name}`", f"`{type_}`", f"`{default}`", meaning]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(lines)


def docs_table() -> str:
    """The table lines right under the page's settings heading."""
    text = PAGE.read_text(encoding="utf-8")
    assert SETTINGS_HEADING in text, f"docs/configuration.md lost its heading {SETTINGS_HEADING!r}"
    after = text.split(SETTINGS_HEADING, 1)[1].split("\n", 1)[1]
    table = []
    for line in after.strip("\n").splitlines():
        if not line.startswith("|"):
            break
        table.append(line)
    return "\n".join(table)


def _values(model: BaseModel, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for name, value in model:
        if isinstance(value, BaseModel):
            out |= _values(value, f"{prefix}{name}.")
        else:
            out[f"{prefix}{name}"] = value
    return out


def test_every_setting_has_a_row_in_the_docs() -> None:
    listed = set(re.findall(r"^\| `([\w.]+)` \|", docs_table(), flags=re.MULTILINE))
    settings = set(_values(Context()))
    assert settings - listed == set(), "settings missing from the table"
    assert listed - settings == set(), "the table lists settings Context lacks"


def test_the_docs_table_is_the_generated_one() -> None:
    assert docs_table() == settings_table(), (
        "docs/configuration.md's settings table is stale: regenerate it with "
        "`python tests/test_settings_table.py`"
    )


def test_the_generated_defaults_are_the_real_defaults() -> None:
    rows = setting_rows()
    assert all(meaning for *_, meaning in rows), "every setting needs a docstring"
    defaults = _values(Context())
    assert [r[0] for r in rows] == list(defaults)
    for name, _, default, _ in rows:
        try:
            literal = ast.literal_eval(default)
        except ValueError:  # a name such as DEFAULT_SYSTEM_PROMPT
            literal = getattr(context_module, default)
        assert literal == defaults[name], name


def test_context_has_at_most_twelve_top_level_settings() -> None:
    assert len(Context.model_fields) <= 12


if __name__ == "__main__":
    print(settings_table())
