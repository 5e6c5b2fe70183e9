"""From replayed dialogs to the suite's metrics (the functions of `metrics.py`, added over dialogs).

Which store state each metric reads:

- extraction precision / recall / F1, detail retention, category accuracy, duplicate rate,
  secrets stored, chit-chat memories, incognito leaks: the store after the last session, against
  every expected memory (all are due by then);
- stale-fact rate: each conflict after every session from the one its new memory is due by; a
  conflict that was stale after any of them counts as stale;
- stale-shown rate: each conflict once, right after the session it is due by: a new thread's
  first turn repeating the old statement, and whether the memory block leaves it looking current
  (`metrics.stale_shown`);
- probe recall@5: each probe right after its session (the runner recalls then), its top 5
  memories; probe recall with archived messages: all that a new thread's first turn shows for
  the probe (up to `recall.k_first_turn` memories and `recall.episodes_first_turn` messages);
- on-time recall: each expected memory after the session it is due by;
- lost-memory rate: each expected memory that no conflict replaces, current after the session it
  is due by, and again after the last session: a memory the write policy retired or merged away
  by mistake is lost (the stale-fact rate alone would reward retiring everything).

Rates are micro-averages (`Ratio`s added over dialogs); None when nothing was measurable.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

from engram.evals.dialogs import metrics as m
from engram.evals.dialogs.evidence import dialog_evidence
from engram.evals.dialogs.runner import DialogRun, SessionRun
from engram.evals.dialogs.suite import Dialog
from engram.evals.report import SUITE_METRICS
from engram.nodes.failures import MODEL_STAGES

PROBE_K = 5
"""k of probe recall@k (the graph's default `Context.recall.k`)."""
TOKEN_TURN = 150
"""User turn at which the prompt is compared with the full-context baseline."""

_EMPTY = m.Ratio()  # frozen: safe to share as a default


@dataclass(frozen=True)
class DialogScore:
    """One dialog's metrics, as counts that add up over a suite."""

    extraction_precision: m.Ratio = _EMPTY
    extraction_recall: m.Ratio = _EMPTY
    extraction_f1: m.Ratio = _EMPTY
    detail_retention: m.Ratio = _EMPTY
    category_accuracy: m.Ratio = _EMPTY
    duplicate_rate: m.Ratio = _EMPTY
    stale_fact_rate: m.Ratio = _EMPTY
    stale_shown_rate: m.Ratio = _EMPTY
    probe_recall_at_5: m.Ratio = _EMPTY
    probe_recall_with_episodes: m.Ratio = _EMPTY
    on_time_recall: m.Ratio = _EMPTY
    lost_memory_rate: m.Ratio = _EMPTY
    model_calls_per_turn: m.Ratio = _EMPTY
    model_tokens_per_turn: m.Ratio = _EMPTY
    secrets_stored: int = 0
    secrets_in_episodes: int = 0
    chitchat_memories: int = 0
    incognito_leaks: int = 0
    stored_memories: int = 0

    def __add__(self, other: DialogScore) -> DialogScore:
        return DialogScore(
            **{f.name: getattr(self, f.name) + getattr(other, f.name) for f in fields(self)}
        )

    def values(self) -> dict[str, float | int | None]:
        """Each metric as a number (a rate's value; None when not measurable)."""
        out: dict[str, float | int | None] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = value.value if isinstance(value, m.Ratio) else value
        return out


def score_dialog(run: DialogRun) -> DialogScore:
    """The metrics of one replayed dialog (see the module docstring for what each reads)."""
    dialog = run.dialog
    final = run.sessions[-1].stored
    expected = dialog.memories
    chitchat = {s.id for s in dialog.sessions if s.chitchat}
    incognito = {s.id for s in dialog.sessions if s.incognito}
    episodes = [m.StoredMemory(text, "episode") for text in run.episodes]
    return DialogScore(
        extraction_precision=m.extraction_precision(expected, final),
        extraction_recall=m.extraction_recall(expected, final),
        extraction_f1=m.extraction_f1(expected, final),
        detail_retention=m.detail_retention(expected, final),
        category_accuracy=m.category_accuracy(expected, final),
        duplicate_rate=m.duplicate_rate(expected, final),
        stale_fact_rate=stale_over_sessions(dialog, run.sessions),
        stale_shown_rate=stale_shown(dialog, run.sessions),
        probe_recall_at_5=_probe_recall(dialog, run.sessions, with_episodes=False),
        probe_recall_with_episodes=_probe_recall(dialog, run.sessions, with_episodes=True),
        on_time_recall=on_time_recall(dialog, run.sessions),
        lost_memory_rate=lost_over_sessions(dialog, run.sessions),
        model_calls_per_turn=m.model_calls_per_turn(run.model_calls, run.user_turns),
        model_tokens_per_turn=m.Ratio(run.model_tokens, run.user_turns),
        secrets_stored=m.secrets_stored(dialog.must_not_store, final),
        secrets_in_episodes=m.secrets_stored(dialog.must_not_store, episodes),
        chitchat_memories=m.chitchat_memories(final, chitchat, dialog.must_not_store),
        incognito_leaks=m.incognito_leaks(final, incognito, dialog.must_not_store),
        stored_memories=len(final),
    )


def stale_over_sessions(dialog: Dialog, sessions: Sequence[SessionRun]) -> m.Ratio:
    """Conflicts stale after at least one session from when they are due / conflicts due.

    A conflict (old, new) is due once its new memory is (`Dialog.conflicts_after`); it is stale
    after a session when `metrics.stale_fact_rate` finds the old fact still current there.
    """
    stale: set[int] = set()
    due: set[int] = set()
    for session in sessions:
        for conflict in dialog.conflicts_after(session.session_id):
            index = dialog.conflicts.index(conflict)
            due.add(index)
            pair = [(dialog.memory(conflict.old), dialog.memory(conflict.new))]
            if m.stale_fact_rate(pair, session.stored).numerator:
                stale.add(index)
    return m.Ratio(len(stale), len(due))


def stale_shown(dialog: Dialog, sessions: Sequence[SessionRun]) -> m.Ratio:
    """Stale checks whose block showed the old statement as current / stale checks (one per
    conflict, after the session it is due by)."""
    checks = [check for session in sessions for check in session.stale_checks]
    stale = sum(
        m.stale_shown(check.shown, dialog.memory(check.old), dialog.memory(check.new))
        for check in checks
    )
    return m.Ratio(stale, len(checks))


def on_time_recall(dialog: Dialog, sessions: Sequence[SessionRun]) -> m.Ratio:
    """Expected memories satisfied by some stored memory right after the session they are due
    by / expected memories.

    Extraction recall looks at the end of the dialog; this one asks whether a memory existed
    when it was first needed (a later session's probe depends on it).
    """
    found, total, seen = 0, 0, set()
    for session in sessions:
        for memory in dialog.expected_after(session.session_id):
            if memory.id in seen:
                continue
            seen.add(memory.id)
            total += 1
            found += any(m.satisfies(s.content, memory) for s in session.stored)
    return m.Ratio(found, total)


def lost_over_sessions(dialog: Dialog, sessions: Sequence[SessionRun]) -> m.Ratio:
    """Expected memories current right after the session they are due by that no current memory
    holds after the last session / expected memories current on time. A memory that a conflict
    replaces (`Conflict.old`) is left out: it is meant to go.
    """
    replaced = {conflict.old for conflict in dialog.conflicts}
    final = [s for s in sessions[-1].stored if s.current] if sessions else []
    lost, held, seen = 0, 0, set()
    for session in sessions:
        current = [s for s in session.stored if s.current]
        for memory in dialog.expected_after(session.session_id):
            if memory.id in seen or memory.id in replaced:
                continue
            seen.add(memory.id)
            if any(m.satisfies(s.content, memory) for s in current):
                held += 1
                lost += not any(m.satisfies(s.content, memory) for s in final)
    return m.Ratio(lost, held)


def suite_metrics(runs: Sequence[DialogRun]) -> dict[str, Any]:
    """The report's `metrics`: every `DialogScore` field added over the suite, the token ratio at
    turn 150, prompt tokens per turn, and per-node latency p50 / p95 in milliseconds."""
    total = sum((score_dialog(run) for run in runs), DialogScore())
    out: dict[str, Any] = total.values()
    traces = [run.trace for run in runs]
    out["token_ratio_at_150"] = _rounded(m.token_ratio_at(traces, TOKEN_TURN))
    per_turn = m.prompt_tokens_per_turn(traces)
    out["prompt_tokens_per_turn"] = _rounded(per_turn[0] if per_turn else None, 1)
    out["full_context_tokens_per_turn"] = _rounded(per_turn[1] if per_turn else None, 1)
    out["thread_tokens_per_turn"] = _rounded(per_turn[2] if per_turn else None, 1)
    samples = [sample for run in runs for sample in run.latencies]
    failures = [f for run in runs for f in run.failures]
    out["memory_model_fallbacks"] = sum(f["stage"] in MODEL_STAGES for f in failures)
    out["ungrounded_memories"] = sum(f["stage"] == "ungrounded" for f in failures)
    out["recall_timeouts"] = sum(
        f["stage"] == "recall" and f["error"].startswith("TimeoutError") for f in failures
    )
    out["latency_p50_ms"] = _latencies(samples, 50)
    out["latency_p95_ms"] = _latencies(samples, 95)
    order = [*SUITE_METRICS, *(name for name in out if name not in SUITE_METRICS)]
    return {k: _rounded(out[k]) if isinstance(out[k], float) else out[k] for k in order}


def dialog_rows(runs: Sequence[DialogRun]) -> list[dict[str, Any]]:
    """Per-dialog metrics and facts for the report's `dialogs` list."""
    rows = []
    for run in runs:
        values = score_dialog(run).values()
        rows.append(
            {
                "id": run.dialog.id,
                "language": run.dialog.language,
                "sessions": len(run.dialog.sessions),
                "user_turns": run.user_turns,
                "seconds": round(run.seconds, 2),
                "failures": _failure_counts(run.failures),
                "token_ratio_at_150": _rounded(m.token_ratio_at([run.trace], TOKEN_TURN)),
                **{k: _rounded(v) if isinstance(v, float) else v for k, v in values.items()},
                "evidence": dialog_evidence(run),
            }
        )
    return rows


def failure_counts(runs: Sequence[DialogRun]) -> dict[str, int]:
    """How often each stage failed (and was worked around) over the suite."""
    return _failure_counts([f for run in runs for f in run.failures])


def _probe_recall(
    dialog: Dialog, sessions: Sequence[SessionRun], *, with_episodes: bool
) -> m.Ratio:
    total = m.Ratio()
    for session in sessions:
        for probe in session.probes:
            expected = [
                dialog.memory(i)
                for i in next(p.expect for p in dialog.probes if p.id == probe.probe_id)
            ]
            # with the archived messages: everything the first turn shows (its memories too)
            recalled = probe.memories + probe.episodes if with_episodes else probe.memories[:PROBE_K]
            total += m.probe_recall(expected, recalled, k=len(recalled))
    return total


def _latencies(samples: list[tuple[str, float]], p: float) -> dict[str, float]:
    return {node: round(ms, 2) for node, ms in m.latency_percentile(samples, p).items()}


def _failure_counts(failures: Sequence[dict[str, str]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for failure in failures:
        stage = failure.get("stage", "?")
        counts[stage] = counts.get(stage, 0) + 1
    return counts


def _rounded(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)
