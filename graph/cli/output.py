"""The consoles the `engram` commands print with: wrapped at the terminal's width on a terminal,
and not at all when the output is a pipe or a file."""

from __future__ import annotations

import os

from rich.console import Console, ConsoleDimensions

UNWRAPPED = 10_000
"""The width of a console whose output is not a terminal: no line of a command is that long."""


class CommandConsole(Console):
    """A rich console that wraps at the terminal's width on a terminal, and nowhere when its
    output is not one (rich would wrap at 80 columns, so a script or a log reading the output
    got `mode:` and `offline` on two lines), unless `$COLUMNS` or `width` says how wide to be."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        if self.is_terminal or self._width is not None or "COLUMNS" in os.environ:
            return size
        return ConsoleDimensions(UNWRAPPED, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]
