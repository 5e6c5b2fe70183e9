"""The HTML sections of an answer-accuracy report (kind "qa"): the systems side by side, J by
category, the protocol and its caveats, what writing memory cost, and every answer with its
context and verdict, folded, for a person to audit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from engram.evals.report.figures import format_number

_SYSTEM_COLUMNS = (
    ("j", "J"),
    ("f1", "F1"),
    ("bleu1", "BLEU-1"),
    ("prompt_tokens", "prompt tokens / question"),
    ("answer_latency_p50_ms", "answer p50 ms"),
    ("answer_latency_p95_ms", "answer p95 ms"),
    ("judged", "judged"),
    ("judge_unparsed", "unparsed verdicts"),
)
_VERDICT = {True: ("pass", "correct"), False: ("fail", "wrong"), None: ("", "unparsed")}


def answer_summary(report: Mapping[str, Any]) -> list[str]:
    """The headline sections of an answer-accuracy report as HTML fragments (none for other
    kinds): the setup and its caveats, the systems side by side, J by category, what writing
    memory cost, the calls that failed."""
    if report.get("kind") != "qa":
        return []
    systems: Mapping[str, Mapping[str, Any]] = report.get("systems", {})
    parts = [
        "<h2>Systems (same questions, same models)</h2>", _systems(systems, report),
        "<h2>J by category</h2>", _categories(systems),
        "<h2>Setup</h2>", _setup(report),
    ]
    if report.get("memory_write"):
        parts += ["<h2>Writing memory (engram)</h2>", _memory_write(report["memory_write"])]
    if report.get("failures"):
        parts += ["<h2>Calls that failed (a rerun retries them)</h2>", _failures(report["failures"])]
    return parts


def answer_audit(report: Mapping[str, Any]) -> list[str]:
    """Every question of an answer-accuracy report, folded: the gold answer and, per system,
    the answer, the verdict, the judge's reply and the context given (none for other kinds)."""
    if report.get("kind") != "qa":
        return []
    return ["<h2>Answers</h2>", _answers(report.get("answers", []))]


def _setup(report: Mapping[str, Any]) -> str:
    protocol = report.get("protocol", {})
    excluded = report.get("excluded", {})
    lists = ", ".join(excluded.get("files", [])) or "no exclusion list"
    rows = [
        ("protocol", str(protocol.get("name", ""))),
        ("models", ", ".join(f"{k}: {v}" for k, v in report.get("models", {}).items())),
        ("categories", ", ".join(protocol.get("categories", []))),
        ("excluded questions", f"{excluded.get('count', 0)} ({lists})"),
    ]
    cells = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in rows)
    notes = "".join(f"<li>{escape(n)}</li>" for n in protocol.get("notes", []))
    return f'<dl class="facts">{cells}</dl>' + (f"<ul>{notes}</ul>" if notes else "")


def _systems(systems: Mapping[str, Mapping[str, Any]], report: Mapping[str, Any]) -> str:
    head = "<tr><th>system</th>" + "".join(f"<th>{escape(t)}</th>" for _, t in _SYSTEM_COLUMNS)
    head += "</tr>"
    rows = []
    for name, figures in systems.items():
        cells = "".join(
            f'<td class="num">{_with_interval(figures) if key == "j" else _number(figures.get(key))}'
            "</td>"
            for key, _ in _SYSTEM_COLUMNS
        )
        rows.append(f"<tr><td>{escape(name)}</td>{cells}</tr>")
    published = report.get("protocol", {}).get("published_j", {})
    for name, j in published.items():
        rows.append(
            f'<tr class="na"><td>{escape(name)} <small>(published)</small></td>'
            f'<td class="num">{_number(j)}</td>' + "<td></td>" * (len(_SYSTEM_COLUMNS) - 1)
            + "</tr>"
        )
    return _table(head, rows)


def _categories(systems: Mapping[str, Mapping[str, Any]]) -> str:
    names = list(systems)
    categories = list(dict.fromkeys(c for s in systems.values() for c in s.get("by_category", {})))
    head = "<tr><th>category</th>" + "".join(f"<th>{escape(n)}</th>" for n in names) + "</tr>"
    rows = []
    for category in categories:
        cells = "".join(
            f'<td class="num">{_with_interval(systems[n].get("by_category", {}).get(category, {}))}'
            "</td>"
            for n in names
        )
        rows.append(f"<tr><td>{escape(category)}</td>{cells}</tr>")
    return _table(head, rows)


def _memory_write(rows: Mapping[str, Mapping[str, Any]]) -> str:
    keys = list(next(iter(rows.values()), {}))
    head = "<tr><th>history</th>" + "".join(
        f"<th>{escape(k.replace('_', ' '))}</th>" for k in keys
    ) + "</tr>"
    body = [
        f"<tr><td>{escape(h)}</td>"
        + "".join(f'<td class="num">{_number(v.get(k))}</td>' for k in keys) + "</tr>"
        for h, v in rows.items()
    ]
    return _table(head, body)


def _failures(failures: Sequence[Mapping[str, Any]]) -> str:
    items = "".join(
        f"<li>{escape(f['question'])} ({escape(f['system'])}, {escape(f['stage'])}): "
        f"<small>{escape(f['error'])}</small></li>"
        for f in failures
    )
    return f"<ul>{items}</ul>"


def _answers(answers: Sequence[Mapping[str, Any]]) -> str:
    blocks = []
    for row in answers:
        given = row.get("systems", {})
        tags = " ".join(
            f'<span class="tag {_VERDICT[a.get("correct")][0]}">{escape(s)}</span>'
            for s, a in given.items() if a.get("judged")
        )
        summary = (
            f"{escape(row['id'])} <small>[{escape(row['category'])}]</small> "
            f"{escape(row['question'])} {tags}"
        )
        items = [f"<p><b>gold:</b> {escape(str(row['gold']))}</p>"]
        for system, answer in given.items():
            css, word = _VERDICT[answer.get("correct")] if answer.get("judged") else ("", "not judged")
            context = answer.get("context") or ""
            items.append(
                f'<div class="evidence"><b>{escape(system)}</b> '
                f'<span class="tag {css}">{word}</span> {escape(answer.get("answer", ""))}'
                f"<br><small>F1 {_number(answer.get('f1'))}, BLEU-1 "
                f"{_number(answer.get('bleu1'))}, {answer.get('prompt_tokens')} prompt tokens, "
                f"{_number(answer.get('latency_ms'))} ms</small>"
                + (
                    f"<details><summary><small>judge</small></summary><pre>"
                    f"{escape(answer.get('judge_reply') or '')}</pre></details>"
                    if answer.get("judged") else ""
                )
                + (
                    f"<details><summary><small>context given</small></summary><pre>"
                    f"{escape(context)}</pre></details>" if context else ""
                )
                + "</div>"
            )
        blocks.append(f"<details><summary>{summary}</summary>{''.join(items)}</details>")
    return "".join(blocks)


def _with_interval(figures: Mapping[str, Any]) -> str:
    j, interval = figures.get("j"), figures.get("j_ci95")
    if j is None:
        return _number(None)
    low, high = interval or (None, None)
    band = f" <small>[{format_number(low)}, {format_number(high)}]</small>" if interval else ""
    return f"{escape(format_number(j))}{band} <small>n={figures.get('judged', '')}</small>"


def _number(value: Any) -> str:
    if value is None:
        return '<span class="na">n/a</span>'
    return escape(format_number(value))


def _table(head: str, rows: list[str]) -> str:
    return f'<div class="table"><table>{head}{"".join(rows)}</table></div>'
