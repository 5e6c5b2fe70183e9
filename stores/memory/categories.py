"""The kinds of long-term memory, in a module of their own so that the `engram memory` commands
can offer them in their help without loading the memory model (pydantic, langgraph)."""

from __future__ import annotations

from typing import Literal, get_args

Category = Literal["preference", "fact", "project", "lesson", "skill", "goal"]
CATEGORIES: tuple[str, ...] = get_args(Category)
