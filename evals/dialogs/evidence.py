"""The evidence behind a dialog's scores: what was missed, what matched nothing, which probes failed.

`dialog_evidence(run)` reads the same matching the metrics use (`match_memories` on the last
session's stored memories, `probe_recall` on each probe's top 5), so every number in a report
can be traced to the memories behind it:

- `missed`: expected memories no stored memory satisfies (all their details in one memory);
- `unmatched`: stored memories that satisfy no expected memory (noise, or phrasing that dropped
  a detail);
- `failed_probes`: probes whose expected memories were not all recalled, with what was
  recalled instead;
- `stale_shown`: corrections whose old statement a new thread's first turn showed as current,
  with what the block showed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engram.evals.dialogs import metrics as m

if TYPE_CHECKING:
    from engram.evals.dialogs.runner import DialogRun

PROBE_K = 5
"""Recalled memories a probe is judged on (probe recall@5)."""


def dialog_evidence(run: DialogRun) -> dict[str, list[dict[str, Any]]]:
    """`{"missed": [...], "unmatched": [...], "failed_probes": [...], "stale_shown": [...]}`
    for one replayed dialog."""
    dialog = run.dialog
    stored = run.sessions[-1].stored if run.sessions else []
    pairs = m.match_memories(dialog.memories, stored)
    matched_expected = {i for i, _ in pairs}
    matched_stored = {j for _, j in pairs}
    return {
        "missed": [
            {"id": e.id, "category": e.category, "content": e.content, "details": list(e.details)}
            for i, e in enumerate(dialog.memories)
            if i not in matched_expected
        ],
        "unmatched": [
            {"category": s.category, "content": s.content, "current": s.current}
            for j, s in enumerate(stored)
            if j not in matched_stored
        ],
        "failed_probes": _failed_probes(run),
        "stale_shown": _stale_shown(run),
    }


def _failed_probes(run: DialogRun) -> list[dict[str, Any]]:
    dialog = run.dialog
    failed = []
    for session in run.sessions:
        for probe_run in session.probes:
            probe = next(p for p in dialog.probes if p.id == probe_run.probe_id)
            expected = [dialog.memory(i) for i in probe.expect]
            recalled = probe_run.memories[:PROBE_K]
            top = [m.normalize(text) for text in recalled]
            missing = [
                e.id
                for e in expected
                if not any(all(m.normalize(d) in text for d in e.details) for text in top)
            ]
            if missing:
                failed.append(
                    {
                        "probe": probe.id,
                        "after_session": session.session_id,
                        "query": probe.query,
                        "expected": [e.id for e in expected],
                        "missing": missing,
                        "recalled": recalled,
                    }
                )
    return failed


def _stale_shown(run: DialogRun) -> list[dict[str, Any]]:
    dialog = run.dialog
    return [
        {
            "after_session": session.session_id,
            "old": check.old,
            "new": check.new,
            "query": check.query,
            "shown": [
                (f"[{s.said:%Y-%m-%d}] " if s.said else "")
                + s.text
                + (" (marked replaced)" if s.replaced else "")
                for s in check.shown
                if m.satisfies(s.text, dialog.memory(check.old))
                or m.satisfies(s.text, dialog.memory(check.new))
            ],
        }
        for session in run.sessions
        for check in session.stale_checks
        if m.stale_shown(check.shown, dialog.memory(check.old), dialog.memory(check.new))
    ]
