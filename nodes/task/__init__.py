"""The task state (`TaskState`): what the agent is working on, kept as structure
across compaction. `update` (the memory model's bounded call, or `rules`, the offline update),
`block` (its block of the system message)."""

from engram.nodes.task.block import render_task_block
from engram.nodes.task.rules import empty_task_state, offline_update
from engram.nodes.task.update import TaskUpdater

__all__ = ["TaskUpdater", "empty_task_state", "offline_update", "render_task_block"]
