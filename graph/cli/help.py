"""Help text for the `engram` commands without typer's type labels.

Typer writes an argument as `ID <str>` in the help and `{ID}` in the usage line, whatever its
metavar. `PlainCommand` writes it by its metavar (or its name in capitals) alone, and `[ID]` when
it is optional; options name their values with explicit metavars where they are declared. A
group lists it with the whole first paragraph of its help, where click would cut it with "...".
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand


class PlainCommand(TyperCommand):
    """A typer command whose arguments appear by name only, in the help and the usage line."""

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                pieces.append(_name(param) if param.required else f"[{_name(param)}]")
        return pieces

    def get_short_help_str(self, limit: int = 45) -> str:
        """The first paragraph of the help, whole (click cuts it at `limit` characters)."""
        if self.short_help:
            return self.short_help
        return " ".join((self.help or "").split("\n\n")[0].split())

    def format_options(self, ctx: Any, formatter: Any) -> None:
        arguments, options = [], []
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                arguments.append((_name(param), record[1]))
            else:
                options.append(record)
        for title, rows in (("Arguments", arguments), ("Options", options)):
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _name(param: Any) -> str:
    return param.metavar or param.name.upper()
