"""Terminal output of an eval: the rich progress bar while it runs and the report's tables."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from rich.console import Console, Group
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from engram.evals.report.figures import METRIC_DEFINITIONS, format_number, verdict

_VERDICTS = {"pass": "[green]pass[/]", "fail": "[red]FAIL[/]", None: ""}


class TurnProgress:
    """A progress bar over user turns, with a line saying what finished last."""

    def __init__(self, progress: Progress, total: int, label: str) -> None:
        self._progress = progress
        self._task = progress.add_task(label, total=total, status="")

    def advance(self) -> None:
        """One more turn done."""
        self._progress.advance(self._task)

    def note(self, text: str) -> None:
        """Show what finished last (a dialog, a conversation) next to the bar."""
        self._progress.update(self._task, status=text)


@contextmanager
def turn_progress(
    console: Console, total: int, label: str, unit: str = "turns"
) -> Iterator[TurnProgress]:
    """A live progress bar on `console` for `total` turns, or other `unit`s (hidden when it is
    not a terminal)."""
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn(unit),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[status]}", style="dim"),
        console=console,
        transient=False,
    )
    with progress:
        yield TurnProgress(progress, total, label)


def report_tables(report: Mapping[str, Any]) -> Group:
    """The report's metrics (with targets) and latencies as rich tables."""
    targets = report.get("targets", {})
    metrics = report["metrics"]
    title = f"engram eval ({report['kind']}, mode: {report['mode']})"
    table = Table(title=title, title_justify="left")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("target", justify="right")
    table.add_column("", justify="center")
    table.add_column("definition", style="dim")
    for name, value in metrics.items():
        if isinstance(value, Mapping):
            continue
        target = targets.get(name)
        table.add_row(
            name,
            format_number(value),
            target["target"] if target else "",
            _VERDICTS[verdict(target)],
            METRIC_DEFINITIONS.get(name, ""),
        )
    parts: list[Any] = [table]
    evidence = _evidence_table(report.get("dialogs", []))
    if evidence is not None:
        parts.append(evidence)
    latency = _latency_table(metrics)
    if latency is not None:
        parts.append(latency)
    by_category = metrics.get("by_category")
    if isinstance(by_category, Mapping) and by_category:
        parts.append(_category_table(by_category))
    if report.get("systems"):
        parts.append(_systems_table(report["systems"], report.get("protocol", {})))
    return Group(*parts)


def _systems_table(systems: Mapping[str, Mapping[str, Any]], protocol: Mapping[str, Any]) -> Table:
    """Answer accuracy: each system's J (95% interval), F1, BLEU-1, tokens and latency, with
    the published figures for scale under it."""
    table = Table(title="systems (same questions, same models)", title_justify="left")
    table.add_column("system", no_wrap=True)
    for column in ("J", "95% CI", "F1", "BLEU-1", "tokens/q", "answer ms p50/p95"):
        table.add_column(column, justify="right")
    for name, f in systems.items():
        interval = f.get("j_ci95")
        table.add_row(
            name, format_number(f.get("j")),
            f"{interval[0]:.2f}-{interval[1]:.2f}" if interval else "",
            format_number(f.get("f1")), format_number(f.get("bleu1")),
            format_number(f.get("prompt_tokens")),
            f"{format_number(f.get('answer_latency_p50_ms'))}/"
            f"{format_number(f.get('answer_latency_p95_ms'))}",
        )
    published = protocol.get("published_j", {})
    if published:
        table.caption = "published J (comparable only with the same models): " + ", ".join(
            f"{name} {format_number(j)}" for name, j in published.items()
        )
        table.caption_justify = "left"
    return table


def _evidence_table(dialogs: list[Mapping[str, Any]]) -> Table | None:
    """Per dialog with something to show: counts of missed, unmatched and failed probes (the
    memories themselves are in report.html and report.json)."""
    rows = []
    for row in dialogs:
        evidence = row.get("evidence") or {}
        counts = [len(evidence.get(k, [])) for k in ("missed", "unmatched", "failed_probes")]
        if any(counts):
            rows.append((str(row["id"]), *map(str, counts)))
    if not rows:
        return None
    table = Table(title="evidence per dialog (details in report.html)", title_justify="left")
    table.add_column("dialog")
    for column in ("missed", "unmatched", "failed probes"):
        table.add_column(column, justify="right")
    for row in rows:
        table.add_row(*row)
    return table


def _latency_table(metrics: Mapping[str, Any]) -> Table | None:
    p50, p95 = metrics.get("latency_p50_ms"), metrics.get("latency_p95_ms")
    if not isinstance(p50, Mapping) or not p50:
        return None
    table = Table(title="latency per node (ms)", title_justify="left")
    table.add_column("node")
    table.add_column("p50", justify="right")
    table.add_column("p95", justify="right")
    for node, ms in p50.items():
        table.add_row(node, f"{ms:.1f}", f"{(p95 or {}).get(node, float('nan')):.1f}")
    return table


def _category_table(by_category: Mapping[str, Mapping[str, Any]]) -> Table:
    """One row per metric, one column per category (narrow enough for a terminal)."""
    keys = list(next(iter(by_category.values())))
    table = Table(title="by category", title_justify="left")
    table.add_column("metric")
    for category in by_category:
        table.add_column(category, justify="right")
    for key in keys:
        table.add_row(key, *(format_number(values.get(key)) for values in by_category.values()))
    return table
