"""The report of an answer-accuracy run (`report.json`, and `report.html` through
`engram.evals.report`).

Beside the standard keys (`kind: "qa"`, `mode`: the memory model or `offline`, `metrics`,
`embedder`, `versions`), it holds:

- `metrics`: engram's figures (J with its 95% Wilson interval, F1, BLEU-1, prompt tokens per
  question, answer latency p50/p95, memory-write latency p50/p95 per graph run of the ingestion,
  memory-model calls and tokens), `latency_p50_ms`/`latency_p95_ms` per graph node while
  writing, and `by_category` (J, F1, BLEU-1);
- `systems`: the same figures for engram and each baseline, overall and by category;
- `protocol` (whose prompts, caveats, published figures), `models`, `questions` (counts,
  exclusions), `memory_write` per history, `failures` (calls left for a rerun);
- `answers`: per question, its gold answer and, per system, the context given, the answer, the
  judge's verdict and reply, F1, BLEU-1, prompt tokens and latency: enough for a person to audit
  any figure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engram.evals.dialogs.metrics import latency_percentile, percentile
from engram.evals.qa.dataset import QAHistory
from engram.evals.qa.exclusions import Excluded
from engram.evals.qa.metrics import ScoredAnswer, bleu1, summarize, token_f1
from engram.evals.qa.run import QARun, QASettings
from engram.evals.report import build_report

ROUND = 4


def qa_report(
    run: QARun, settings: QASettings, *, data: str, excluded: Excluded, **extra: Any
) -> dict[str, Any]:
    """The report dict of a finished run (see the module docstring)."""
    protocol = settings.protocol
    scored = _scored(run, settings.systems)
    systems = {
        system: _rounded(summarize(scored[system], protocol.categories))
        for system in settings.systems
    }
    engram = systems["engram"]
    ingests = [run.ingests[h.id] for h in run.histories if run.ingests.get(h.id)]
    metrics: dict[str, Any] = {
        **_headline(engram),
        **_memory_write(ingests),
        "by_category": {
            name: {k: values[k] for k in ("j", "f1", "bleu1")}
            for name, values in engram["by_category"].items()
        },
    }
    questions = [q for h in run.histories for q in h.questions]
    return build_report(
        kind="qa",
        mode=settings.memory_spec or "offline",
        metrics=metrics,
        targets=(),
        embeddings=settings.embeddings,
        benchmark=protocol.benchmark,
        data=data,
        protocol={**protocol.describe(), "categories": sorted({q.category for q in questions})},
        models={
            "answer": settings.model_spec,
            "judge": settings.judge_spec,
            "memory": settings.memory_spec or "offline built-ins",
        },
        questions={
            "total": len(questions),
            "by_category": {
                c: sum(q.category == c for q in questions)
                for c in protocol.categories if any(q.category == c for q in questions)
            },
            "excluded": len(excluded.ids),
            "unanswered": sum(
                (q.id, s) not in run.results for q in questions for s in settings.systems
            ),
        },
        excluded=excluded.as_dict(),
        systems=systems,
        memory_write={h: _ingest_row(r) for h, r in run.ingests.items() if r},
        concurrency=settings.jobs,
        timing={"wall_seconds": round(run.seconds, 1)},
        failures=run.failures,
        answers=_answers(run.histories, run, settings.systems),
        **extra,
    )


def _scored(run: QARun, systems: Sequence[str]) -> dict[str, list[ScoredAnswer]]:
    by_system: dict[str, list[ScoredAnswer]] = {system: [] for system in systems}
    for history in run.histories:
        for question in history.questions:
            for system in systems:
                result = run.results.get((question.id, system))
                if result is None:
                    continue
                answer, verdict = result["answer"], result["verdict"]
                by_system[system].append(ScoredAnswer(
                    category=question.category,
                    f1=token_f1(answer["text"], question.gold),
                    bleu1=bleu1(answer["text"], question.gold),
                    prompt_tokens=answer["prompt_tokens"],
                    latency_ms=answer["latency_ms"],
                    correct=verdict["correct"] if verdict else None,
                    judged=verdict is not None,
                ))
    return by_system


def _headline(figures: dict[str, Any]) -> dict[str, Any]:
    interval = figures["j_ci95"] or [None, None]
    return {
        "j": figures["j"],
        "j_ci95_low": interval[0],
        "j_ci95_high": interval[1],
        "f1": figures["f1"],
        "bleu1": figures["bleu1"],
        "prompt_tokens_per_question": figures["prompt_tokens"],
        "answer_latency_p50_ms": figures["answer_latency_p50_ms"],
        "answer_latency_p95_ms": figures["answer_latency_p95_ms"],
        "answers": figures["answers"],
        "judged": figures["judged"],
        "judge_unparsed": figures["judge_unparsed"],
    }


def _memory_write(ingests: Sequence[dict[str, Any]]) -> dict[str, Any]:
    runs = [ms for record in ingests for ms in record.get("run_ms", [])]
    samples = [(node, ms) for record in ingests for node, ms in record.get("node_ms", [])]
    return {
        "memory_write_latency_p50_ms": percentile(runs, 50) if runs else None,
        "memory_write_latency_p95_ms": percentile(runs, 95) if runs else None,
        "memory_model_calls": sum(r.get("memory_model_calls", 0) for r in ingests),
        "memory_model_tokens": sum(r.get("memory_model_tokens", 0) for r in ingests),
        "latency_p50_ms": latency_percentile(samples, 50),
        "latency_p95_ms": latency_percentile(samples, 95),
    }


def _ingest_row(record: dict[str, Any]) -> dict[str, Any]:
    keys = ("messages", "graph_runs", "seconds", "memory_model_calls", "memory_model_tokens",
            "memories", "episodes")
    return {k: record.get(k) for k in keys}


def _answers(
    histories: Sequence[QAHistory], run: QARun, systems: Sequence[str]
) -> list[dict[str, Any]]:
    rows = []
    for history in histories:
        for question in history.questions:
            given: dict[str, Any] = {}
            for system in systems:
                result = run.results.get((question.id, system))
                if result is None:
                    continue
                answer, verdict = result["answer"], result["verdict"]
                given[system] = {
                    "context": answer["context"],
                    "answer": answer["text"],
                    "correct": verdict["correct"] if verdict else None,
                    "judged": verdict is not None,
                    "judge_reply": verdict["reply"] if verdict else None,
                    "f1": round(token_f1(answer["text"], question.gold), ROUND),
                    "bleu1": round(bleu1(answer["text"], question.gold), ROUND),
                    "prompt_tokens": answer["prompt_tokens"],
                    "latency_ms": answer["latency_ms"],
                    **(
                        {"left_out_messages": answer["left_out_messages"]}
                        if answer.get("left_out_messages") else {}
                    ),
                }
            rows.append({
                "id": question.id,
                "history": history.id,
                "category": question.category,
                "question": question.text,
                "gold": question.gold,
                **({"date": question.date} if question.date else {}),
                "systems": given,
            })
    return rows


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return round(value, ROUND)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value
