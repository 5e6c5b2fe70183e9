"""LongMemEval as answer-accuracy histories: each question with its own haystack of sessions.

LongMemEval (Wu et al., ICLR 2025) is read from a file you give (its licence keeps it out of this
repository): a JSON list of items, each with `question_id`, `question_type`, `question`,
`answer`, `question_date`, `haystack_session_ids`, `haystack_dates`, `haystack_sessions` (each
session a list of `{role, content}` turns, role `user` or `assistant`) and
`answer_session_ids`. Every item becomes one history: its sessions in date order (dates such as
"2023/05/20 (Sat) 02:21"), messages stamped with their session's date, then its one question.
Questions whose id ends in `_abs` cannot be answered from the history (the judge checks that
the answer says so).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from datetime import datetime
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from engram.evals.qa.dataset import QAHistory, QAQuestion, QASession
from engram.evals.qa.protocol import LONGMEMEVAL_QUESTION_TYPES
from engram.nodes.text.transcript import TIMESTAMP_KEY

REQUIRED_FIELDS = (
    "question_id",
    "question_type",
    "question",
    "answer",
    "question_date",
    "haystack_session_ids",
    "haystack_dates",
    "haystack_sessions",
)
_DATE_FORMAT = "%Y/%m/%d (%a) %H:%M"
_LABEL = re.compile(r"[^A-Za-z0-9_-]")


def parse_question_types(raw: str | None) -> tuple[str, ...]:
    """LongMemEval question types, comma-separated (default: all).

    Example:
        >>> parse_question_types("multi-session, temporal-reasoning")
        ('multi-session', 'temporal-reasoning')

    Raises:
        ValueError: A type LongMemEval does not have (the message lists them).
    """
    if raw is None:
        return LONGMEMEVAL_QUESTION_TYPES
    chosen = [p.strip() for p in raw.split(",") if p.strip()]
    unknown = [t for t in chosen if t not in LONGMEMEVAL_QUESTION_TYPES]
    if unknown or not chosen:
        raise ValueError(
            f"unknown LongMemEval question type(s) {', '.join(unknown) or '(none given)'}: use "
            + ", ".join(LONGMEMEVAL_QUESTION_TYPES)
        )
    return tuple(t for t in LONGMEMEVAL_QUESTION_TYPES if t in chosen)


def haystack_date(raw: str) -> datetime | None:
    """A LongMemEval date ("2023/05/20 (Sat) 02:21") as a datetime; None when unreadable.

    Example:
        >>> haystack_date("2023/05/20 (Sat) 02:21").isoformat()
        '2023-05-20T02:21:00'
    """
    try:
        return datetime.strptime(raw.strip(), _DATE_FORMAT)
    except ValueError:
        return None


def load_longmemeval(
    path: str | Path, question_types: Collection[str] = LONGMEMEVAL_QUESTION_TYPES
) -> list[QAHistory]:
    """The items of a LongMemEval file of `question_types`, one history each, in file order.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: The file is not LongMemEval's format (the message names the item and field).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"LongMemEval data not found at {path}: pass the path of its JSON file (e.g. "
            "longmemeval_s.json, from the LongMemEval release)"
        )
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON: {exc}") from exc
    if not isinstance(items, list):
        raise ValueError(  # noqa: TRY004 (bad data, reported like every other format error)
            f"{path} is not LongMemEval data: expected a JSON list of questions"
        )
    histories = []
    for position, item in enumerate(items):
        missing = [f for f in REQUIRED_FIELDS if not isinstance(item, dict) or f not in item]
        if missing:
            raise ValueError(
                f"{path}: item {position} is not a LongMemEval question: missing "
                + ", ".join(missing)
            )
        if item["question_type"] in question_types:
            histories.append(_history(item, path, position))
    return histories


def _history(item: dict[str, Any], path: Path, position: int) -> QAHistory:
    ids, dates, sessions = (
        item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"]
    )
    if not len(ids) == len(dates) == len(sessions):
        raise ValueError(
            f"{path}: item {position} ({item['question_id']}): haystack_session_ids, "
            "haystack_dates and haystack_sessions differ in length"
        )
    order = sorted(range(len(ids)), key=lambda i: haystack_date(str(dates[i])) or datetime.min)
    question_id = str(item["question_id"])
    return QAHistory(
        id=question_id,
        user_id=f"lme-{_LABEL.sub('-', question_id)}",
        speakers=("user", "assistant"),
        sessions=tuple(
            QASession(str(dates[i]), _messages(sessions[i], str(ids[i]), str(dates[i]), path, position))
            for i in order
        ),
        questions=(QAQuestion(
            id=question_id,
            category=str(item["question_type"]),
            text=str(item["question"]),
            gold=str(item["answer"]),
            date=str(item["question_date"]),
        ),),
    )


def _messages(
    turns: Any, session_id: str, date: str, path: Path, position: int
) -> tuple[BaseMessage, ...]:
    when = haystack_date(date)
    stamp = {TIMESTAMP_KEY: when.isoformat()} if when else {}
    messages: list[BaseMessage] = []
    for number, turn in enumerate(turns):
        role = turn.get("role") if isinstance(turn, dict) else None
        if role not in ("user", "assistant") or not isinstance(turn.get("content"), str):
            raise ValueError(
                f"{path}: item {position}, session {session_id}, turn {number}: expected "
                "{role: user|assistant, content: text}"
            )
        cls = HumanMessage if role == "user" else AIMessage
        messages.append(
            cls(turn["content"], id=f"{session_id}:{number}", additional_kwargs=dict(stamp))
        )
    return tuple(messages)
