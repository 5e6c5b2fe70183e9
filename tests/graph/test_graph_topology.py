"""The graph's topology, pinned by `draw_mermaid()` snapshots.

After an intended change of the wiring, regenerate with `ENGRAM_UPDATE_SNAPSHOTS=1 pytest ...`
and review the diff of tests/snapshots/.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from langchain_core.tools import tool

from engram.graph import build_graph

SNAPSHOTS = Path(__file__).parent / "snapshots"


@tool
def lookup_order(order_id: str) -> str:
    """Look up an order's status."""
    return f"order {order_id} shipped"


@pytest.mark.parametrize(
    ("name", "tools"), [("graph.mmd", None), ("graph_with_tools.mmd", [lookup_order])]
)
def test_mermaid_snapshot(name: str, tools: list | None) -> None:
    drawn = build_graph(tools=tools).compile().get_graph().draw_mermaid()
    path = SNAPSHOTS / name
    if os.environ.get("ENGRAM_UPDATE_SNAPSHOTS"):
        path.write_text(drawn)
    assert drawn == path.read_text()


def test_graph_edges_match_the_design() -> None:
    edges = {(e.source, e.target, e.conditional) for e in build_graph().compile().get_graph().edges}
    assert edges == {
        ("__start__", "start", True),
        ("__start__", "consolidate", True),  # end_session
        ("start", "respond", False),
        ("respond", "compact", True),  # the compaction edge
        ("respond", "consolidate", True),
        ("compact", "consolidate", False),
        ("consolidate", "__end__", False),
    }
