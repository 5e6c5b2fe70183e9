"""The HTML report: one self-contained page (inline CSS, no scripts, no external assets).

It states the mode, the embedder and the versions, shows each metric with its one-line
definition, a bar for shares (counts are numbers, not bars), its target and pass/fail, the
per-node latencies, the per-dialog (suite) or per-category (LoCoMo) tables, and for each dialog
its evidence: expected memories missed, stored memories that matched nothing, failed probes with
what was recalled instead. An answer-accuracy report adds its own sections
(`engram.evals.report.answers`).
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from engram.evals.report.answers import answer_audit, answer_summary
from engram.evals.report.figures import (
    COUNT_METRICS,
    LOWER_IS_BETTER,
    METRIC_DEFINITIONS,
    format_number,
    verdict,
)

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;
max-width:1000px;color:#1d2330;padding:0 1rem}
h1{font-size:1.5rem;margin:0 0 .3rem}h2{font-size:1.1rem;margin:2rem 0 .6rem}
.facts{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;margin:1rem 0}
.facts dt{color:#5b6474}.facts dd{margin:0}
.verdict{display:inline-block;padding:.2rem .6rem;border-radius:4px;font-weight:600}
.table{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;width:100%}td,th{padding:.3rem .5rem;text-align:left;
border-bottom:1px solid #e3e6eb;vertical-align:middle}th{color:#5b6474;font-weight:600}
th{font-size:.85rem;vertical-align:bottom}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.bar{position:relative;height:14px;background:#eef0f4;border-radius:3px;min-width:240px}
.fill{position:absolute;left:0;top:0;bottom:0;border-radius:3px;background:#5b7fd6}
.fill.pass{background:#2e9e5b}.fill.fail{background:#d2483c}
.mark{position:absolute;top:-3px;bottom:-3px;width:2px;background:#1d2330}
.pass{color:#1f7a45}.fail{color:#b3362b}.na{color:#8a93a3}
.tag{font-size:.8rem;font-weight:600;padding:.05rem .4rem;border-radius:3px}
.tag.pass{background:#dff3e7}.tag.fail{background:#f9e0dd}
small{color:#5b6474}details{margin:.4rem 0}summary{cursor:pointer}
.evidence li{margin:.15rem 0}.evidence ul{margin:.2rem 0 .6rem 1.2rem;padding:0}
pre{white-space:pre-wrap;font-size:.8rem;background:#f6f7f9;padding:.4rem;margin:.2rem 0}
"""


_TITLES = {"locomo": "engram eval: LoCoMo retrieval", "qa": "engram eval: answer accuracy"}


def render_html(report: Mapping[str, Any]) -> str:
    """The report as one HTML page."""
    metrics = report["metrics"]
    targets = report.get("targets", {})
    passed = all(t["pass"] for t in targets.values())
    title = _TITLES.get(str(report.get("kind")), "engram eval")
    if report.get("kind") == "qa":
        title += f" ({report.get('benchmark', '')})"
    verdict_class = "pass" if passed else "fail"
    verdict = "all targets met" if passed else "some targets missed"
    if not targets:
        verdict_class, verdict = "", "no targets for this mode"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f'<span class="verdict tag {verdict_class}">{verdict}</span>',
        _facts(report),
        *answer_summary(report),
        "<h2>Metrics (engram)</h2>" if report.get("kind") == "qa" else "<h2>Metrics</h2>",
        _metric_table(metrics, targets),
    ]
    for key, label in (("latency_p50_ms", "p50"), ("latency_p95_ms", "p95")):
        if isinstance(metrics.get(key), Mapping) and metrics[key]:
            parts += [f"<h2>Latency per node ({label}, ms)</h2>", _latency_table(metrics[key])]
    if isinstance(metrics.get("by_category"), Mapping):
        parts += ["<h2>By category</h2>", _category_table(metrics["by_category"])]
    if report.get("dialogs"):
        parts += ["<h2>Dialogs</h2>", _dialog_table(report["dialogs"])]
        parts += ["<h2>Evidence per dialog</h2>", _evidence(report["dialogs"])]
    parts += answer_audit(report)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _facts(report: Mapping[str, Any]) -> str:
    embedder = report.get("embedder", {})
    rows = [("mode", _mode_text(report))]
    for key in ("suite", "data", "conversations", "dialogs_count", "user_turns", "questions"):
        if key in report:
            rows.append((key.replace("_", " "), _plain(report[key])))
    rows.append(("embedder", ", ".join(f"{k}: {v}" for k, v in embedder.items())))
    if "timing" in report:
        rows.append(("timing", _plain(report["timing"])))
    if report.get("failures"):
        rows.append(("failures worked around", _plain(report["failures"])))
    rows.append(("versions", ", ".join(f"{k} {v}" for k, v in report.get("versions", {}).items())))
    rows.append(("created", str(report.get("created_at", ""))))
    cells = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    return f'<dl class="facts">{cells}</dl>'


def _mode_text(report: Mapping[str, Any]) -> str:
    mode = str(report.get("mode", ""))
    if report.get("kind") == "locomo":
        return f"{mode} mode"
    if mode == "offline":
        return "offline (built-in summarizer and rule extractor, no model)"
    return f"memory model {mode}"


def _metric_table(metrics: Mapping[str, Any], targets: Mapping[str, Any]) -> str:
    rows = []
    for name, value in metrics.items():
        if isinstance(value, Mapping):
            continue
        target = targets.get(name)
        result = verdict(target)
        status = f'<span class="tag {result}">{result}</span>' if result else ""
        definition = METRIC_DEFINITIONS.get(name, "")
        rows.append(
            f"<tr><td>{escape(name)}<br><small>{escape(definition)}</small></td>"
            f"<td>{_bar(name, value, target)}</td>"
            f'<td class="num">{_number(value)}</td>'
            f'<td class="num">{escape(target["target"]) if target else ""}</td><td>{status}</td></tr>'
        )
    head = "<tr><th>metric</th><th></th><th>value</th><th>target</th><th></th></tr>"
    return _table(head, rows)


def _bar(name: str, value: Any, target: Mapping[str, Any] | None) -> str:
    """A bar for a share in [0, 1]; nothing for a count (a count has no full scale)."""
    if name in COUNT_METRICS:
        return ""
    threshold = _threshold(target)
    scale = 1.0
    width = 0.0 if value is None else max(0.0, min(1.0, float(value) / scale))
    cls = verdict(target) or ""
    mark = ""
    if threshold is not None and scale:
        mark = f'<div class="mark" style="left:{min(1.0, threshold / scale) * 100:.1f}%"></div>'
    hint = "lower is better" if name in LOWER_IS_BETTER else "higher is better"
    if value is None:
        hint = "n/a: nothing to measure"
    return (
        f'<div class="bar" title="{escape(hint)}"><div class="fill {cls}" '
        f'style="width:{width * 100:.1f}%"></div>{mark}</div>'
    )


def _threshold(target: Mapping[str, Any] | None) -> float | None:
    if target is None:
        return None
    return float(str(target["target"]).split()[-1])


def _latency_table(latency: Mapping[str, float]) -> str:
    top = max(latency.values()) or 1.0
    rows = [
        f'<tr><td>{escape(node)}</td><td><div class="bar"><div class="fill" '
        f'style="width:{ms / top * 100:.1f}%"></div></div></td><td class="num">{ms:.1f}</td></tr>'
        for node, ms in latency.items()
    ]
    return _table("<tr><th>node</th><th></th><th>ms</th></tr>", rows)


def _category_table(by_category: Mapping[str, Mapping[str, Any]]) -> str:
    keys = list(next(iter(by_category.values()), {}))
    head = "<tr><th>category</th>" + "".join(f"<th>{_name(k)}</th>" for k in keys) + "</tr>"
    rows = []
    for category, values in by_category.items():
        cells = "".join(
            f'<td class="num">{_number(values.get(k))}'
            f'<div class="bar" style="min-width:40px;height:6px"><div class="fill" '
            f'style="width:{float(values.get(k) or 0) * 100:.1f}%"></div></div></td>'
            for k in keys
        )
        rows.append(f"<tr><td>{escape(category)}</td>{cells}</tr>")
    return _table(head, rows)


def _dialog_table(dialogs: list[Mapping[str, Any]]) -> str:
    columns = [
        "user_turns",
        "extraction_f1",
        "detail_retention",
        "probe_recall_at_5",
        "stale_fact_rate",
        "stale_shown_rate",
        "secrets_stored",
        "chitchat_memories",
        "token_ratio_at_150",
        "seconds",
    ]
    head = "<tr><th>dialog</th>" + "".join(f"<th>{_name(c)}</th>" for c in columns) + "</tr>"
    rows = []
    for row in dialogs:
        cells = "".join(f'<td class="num">{_number(row.get(c))}</td>' for c in columns)
        rows.append(f"<tr><td>{escape(str(row['id']))}</td>{cells}</tr>")
    return _table(head, rows)


def _table(head: str, rows: list[str]) -> str:
    """A table in a box as wide as the page, which scrolls sideways if the table is wider."""
    return f'<div class="table"><table>{head}{"".join(rows)}</table></div>'


def _name(name: str) -> str:
    """A metric's name as a column header, which may wrap after its underscores."""
    return escape(name).replace("_", "_<wbr>")


def _evidence(dialogs: list[Mapping[str, Any]]) -> str:
    """Per dialog: missed expected memories, unmatched stored ones, failed probes."""
    blocks = []
    for row in dialogs:
        evidence = row.get("evidence")
        if not isinstance(evidence, Mapping):
            continue
        missed, unmatched, probes = (
            evidence.get("missed", []), evidence.get("unmatched", []),
            evidence.get("failed_probes", []),
        )
        stale = evidence.get("stale_shown", [])
        summary = (
            f"{escape(str(row['id']))}: {len(missed)} missed, {len(unmatched)} unmatched, "
            f"{len(probes)} failed probes, {len(stale)} shown stale"
        )
        items = [
            _list("Expected, not stored", [
                f"[{escape(e['category'])}] {escape(e['content'])} "
                f"<small>needs: {escape(', '.join(e['details']))}</small>" for e in missed
            ]),
            _list("Stored, matching nothing expected", [
                f"[{escape(s['category'])}] {escape(s['content'])}"
                + ("" if s.get("current", True) else " <small>(not current)</small>")
                for s in unmatched
            ]),
            _list("Failed probes (what was recalled instead)", [
                f"<b>{escape(p['query'])}</b> <small>missing: {escape(', '.join(p['missing']))}"
                "</small><ol>" + "".join(f"<li>{escape(r)}</li>" for r in p["recalled"])
                + ("" if p["recalled"] else "<li><small>nothing recalled</small></li>") + "</ol>"
                for p in probes
            ]),
            _list(
                "Corrections shown stale (the old statement as the query; what the block "
                "showed of either)", [
                f"<b>{escape(c['query'])}</b> <small>{escape(c['old'])} → {escape(c['new'])}, "
                f"after {escape(c['after_session'])}</small><ol>"
                + "".join(f"<li>{escape(line)}</li>" for line in c["shown"]) + "</ol>"
                for c in stale
                ],
            ),
        ]
        blocks.append(
            f'<details class="evidence"><summary>{summary}</summary>{"".join(items)}</details>'
        )
    return "".join(blocks)


def _list(title: str, items: list[str]) -> str:
    if not items:
        return ""
    return f"<div><small>{escape(title)}</small><ul>{''.join(f'<li>{i}</li>' for i in items)}</ul></div>"


def _number(value: Any) -> str:
    if value is None:
        return '<span class="na">n/a</span>'
    return escape(format_number(value))


def _plain(value: Any) -> str:
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_plain(v)}" for k, v in value.items())
    if isinstance(value, list | tuple):
        return ", ".join(_plain(v) for v in value)
    return str(value)
