"""The judge: a chat model grades an answer against the gold one, and its reply becomes a verdict.

Each benchmark's judge replies in its own form (`engram.evals.qa.protocol`): mem0's LoCoMo judge
a JSON `{"label": "CORRECT" | "WRONG"}` after a sentence of reasoning, LongMemEval's "yes" or
"no". Replies are read leniently, since small models stray from the form; a reply that says
neither is `None` (unparsed), which the report counts and J scores as not correct, as the
published scripts do.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage

from engram.nodes.text.tokens import message_content

_LABEL_JSON = re.compile(r"\{[^{}]*\}")
_LABEL_WORD = re.compile(r"\b(CORRECT|WRONG)\b")
_YES_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)

VerdictParser = Callable[[str], bool | None]
"""Reads a judge's reply: `label_verdict` or `yes_no_verdict`."""


@dataclass(frozen=True)
class Verdict:
    """The judge's grade of one answer."""

    correct: bool | None
    """None: the reply said neither (scored as not correct, counted as unparsed)."""
    reply: str
    """The judge's whole reply, for the audit."""
    latency_ms: float


async def ajudge(judge: BaseChatModel, prompt: str, parse: VerdictParser) -> Verdict:
    """Ask `judge` the grading `prompt` (one user message) and read its reply with `parse`."""
    began = time.perf_counter()
    reply = await judge.ainvoke([HumanMessage(prompt)])
    text = message_content(reply).strip()
    return Verdict(parse(text), text, (time.perf_counter() - began) * 1000.0)


def label_verdict(reply: str) -> bool | None:
    """mem0's LoCoMo judge: the `label` of the last JSON object holding one; without one, the
    last CORRECT or WRONG written in capitals.

    Example:
        >>> label_verdict('Same date. {"label": "CORRECT"}'), label_verdict("It is WRONG.")
        (True, False)
        >>> label_verdict("I cannot tell.") is None
        True
    """
    for raw in reversed(_LABEL_JSON.findall(reply)):
        try:
            label = json.loads(raw).get("label")
        except (json.JSONDecodeError, AttributeError):
            continue
        if isinstance(label, str) and label.strip().upper() in ("CORRECT", "WRONG"):
            return label.strip().upper() == "CORRECT"
    words = _LABEL_WORD.findall(reply)
    return words[-1] == "CORRECT" if words else None


def yes_no_verdict(reply: str) -> bool | None:
    """LongMemEval's judge: correct when the reply says yes (its script checks `"yes" in
    reply.lower()`), not correct when it says no, None when it says neither.

    Example:
        >>> yes_no_verdict("Yes."), yes_no_verdict("no"), yes_no_verdict("unclear")
        (True, False, None)
    """
    if "yes" in reply.lower():
        return True
    return False if _YES_NO.search(reply) else None
