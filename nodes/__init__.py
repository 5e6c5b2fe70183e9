"""engram.nodes: one module per node of the memory graph, and the rooms they draw on.

`start`, `respond`, `compact` and `consolidate` are the nodes; `context` (per-run settings) and
`state` (the graph's state) are the types they share with `engram.graph`; `prompts` holds every
prompt. Rooms: `model/` (everything that talks to the memory model), `extract/` (the model
extractors and the offline rules), `text/` (messages as prompt text: tokens, transcripts,
escaping), `work/` (memory-model work off the reply's critical path), `offload/` (tool results
too long for the context, behind a pointer), `task/` (the task state kept across compaction).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram.stores.lazy import lazy_exports

if TYPE_CHECKING:
    from engram.nodes.compact import make_compact, make_route_after_respond, should_compact
    from engram.nodes.consolidate import make_consolidate
    from engram.nodes.context import (
        Compaction,
        Context,
        Extraction,
        Recall,
        SettingsError,
        WorkingMemory,
    )
    from engram.nodes.model.summarize import make_summarizer
    from engram.nodes.respond import NoModelError, make_respond
    from engram.nodes.start import Budget, ContextOverflowError, build_context, make_start
    from engram.nodes.state import BuiltContext, EngramState
    from engram.nodes.text.tokens import TokenCounter, counter_for_model

__all__ = [
    "Budget",
    "BuiltContext",
    "Compaction",
    "Context",
    "ContextOverflowError",
    "EngramState",
    "Extraction",
    "NoModelError",
    "Recall",
    "SettingsError",
    "TokenCounter",
    "WorkingMemory",
    "build_context",
    "counter_for_model",
    "make_compact",
    "make_consolidate",
    "make_respond",
    "make_route_after_respond",
    "make_start",
    "make_summarizer",
    "should_compact",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "make_compact": "engram.nodes.compact",
        "make_route_after_respond": "engram.nodes.compact",
        "should_compact": "engram.nodes.compact",
        "make_consolidate": "engram.nodes.consolidate",
        "Compaction": "engram.nodes.context",
        "Context": "engram.nodes.context",
        "Extraction": "engram.nodes.context",
        "Recall": "engram.nodes.context",
        "SettingsError": "engram.nodes.context",
        "WorkingMemory": "engram.nodes.context",
        "NoModelError": "engram.nodes.respond",
        "make_respond": "engram.nodes.respond",
        "Budget": "engram.nodes.start",
        "ContextOverflowError": "engram.nodes.start",
        "build_context": "engram.nodes.start",
        "make_start": "engram.nodes.start",
        "BuiltContext": "engram.nodes.state",
        "EngramState": "engram.nodes.state",
        "make_summarizer": "engram.nodes.model.summarize",
        "TokenCounter": "engram.nodes.text.tokens",
        "counter_for_model": "engram.nodes.text.tokens",
    },
)
