"""The protocols: which prompts answer and judge each benchmark, and what the report says of them.

LoCoMo follows mem0's published protocol (the one behind the figures the field compares:
gpt-4o-mini answering and judging, categories 1-4, J = share judged CORRECT): answer
instructions and a judge prompt with its criteria, in engram's words (`engram.nodes.prompts`).
LongMemEval follows its own published scripts the same way: an answer prompt with the
question's date and a yes/no judge per question type. Every system of a run (engram and the baselines) gets the same instructions; only
the context after them differs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from engram.evals.locomo.engine import CATEGORY_NAMES
from engram.evals.qa.dataset import QAHistory, QAQuestion
from engram.evals.qa.judge import VerdictParser, label_verdict, yes_no_verdict
from engram.nodes.prompts import (
    FULL_CONTEXT_BLOCK_TEMPLATE,
    FULL_CONTEXT_SESSION_HEADING,
    FULL_CONTEXT_TRUNCATED_NOTE,
    LOCOMO_ANSWER_SYSTEM_PROMPT,
    LOCOMO_JUDGE_PROMPT,
    LONGMEMEVAL_ANSWER_SYSTEM_PROMPT,
    LONGMEMEVAL_JUDGE_PROMPTS,
)

LOCOMO_CATEGORIES: dict[int, str] = {n: CATEGORY_NAMES[n] for n in (4, 1, 2, 3, 5)}
"""LoCoMo's categories by number, in report order (LoCoMo's own numbering and names)."""

LOCOMO_DEFAULT_CATEGORIES = (1, 2, 3, 4)
"""The published protocol's categories; 5 (adversarial) only on request."""

LONGMEMEVAL_QUESTION_TYPES = (
    "single-session-user",
    "single-session-assistant",
    "single-session-preference",
    "multi-session",
    "temporal-reasoning",
    "knowledge-update",
)
"""LongMemEval's question types, in report order."""

PUBLISHED_LOCOMO_J: dict[str, float] = {
    "full context": 0.729,
    "mem0-graph": 0.684,
    "mem0": 0.669,
    "Zep": 0.660,
    "LangMem": 0.581,
    "OpenAI memory": 0.529,
}
"""Overall J on LoCoMo categories 1-4 as the mem0 paper prints it (arXiv 2504.19413, in %
there; its Table 2 adds p95 latency and tokens per question), gpt-4o-mini answering and
judging."""


@dataclass(frozen=True)
class Protocol:
    """How one benchmark's questions are answered and judged."""

    benchmark: str
    """`locomo` or `longmemeval`."""
    name: str
    """What the report calls it (whose protocol, from where)."""
    categories: tuple[str, ...]
    """Category names in report order."""
    instructions: Callable[[QAHistory, QAQuestion], str]
    """The answering model's system prompt for a question, before the context."""
    judge_prompt: Callable[[QAQuestion, str], str]
    """The judge's prompt for a question and an answer."""
    parse_verdict: VerdictParser
    answer_prompts: tuple[str, ...]
    """Every answer-side template (their digest keys the journal's answers)."""
    judge_prompts: tuple[str, ...]
    """Every judge template (their digest keys the journal's verdicts)."""
    notes: tuple[str, ...] = ()
    """Caveats the report states next to the figures."""
    published: dict[str, float] = field(default_factory=dict)
    """Published overall J (a share) for comparison, by system."""

    @property
    def answer_digest(self) -> str:
        """Changes when an answer prompt changes (answers journaled before are then redone)."""
        return _digest(self.answer_prompts)

    @property
    def judge_digest(self) -> str:
        """Changes when a judge prompt changes (verdicts journaled before are then redone)."""
        return _digest(self.judge_prompts)

    def describe(self) -> dict[str, Any]:
        """The report's `protocol` entry."""
        return {
            "benchmark": self.benchmark,
            "name": self.name,
            "notes": list(self.notes),
            "published_j": dict(self.published),
        }


def _locomo_instructions(history: QAHistory, question: QAQuestion) -> str:
    speaker_a, speaker_b = history.speakers
    return LOCOMO_ANSWER_SYSTEM_PROMPT.format(speaker_a=speaker_a, speaker_b=speaker_b)


def _locomo_judge(question: QAQuestion, answer: str) -> str:
    return LOCOMO_JUDGE_PROMPT.format(
        question=question.text, gold_answer=question.gold, generated_answer=answer
    )


def _longmemeval_instructions(history: QAHistory, question: QAQuestion) -> str:
    return LONGMEMEVAL_ANSWER_SYSTEM_PROMPT.format(date=question.date or "unknown")


def _longmemeval_judge(question: QAQuestion, answer: str) -> str:
    if question.id.endswith("_abs"):
        template = LONGMEMEVAL_JUDGE_PROMPTS["abstention"]
    else:
        template = LONGMEMEVAL_JUDGE_PROMPTS.get(
            question.category, LONGMEMEVAL_JUDGE_PROMPTS["default"]
        )
    return template.format(question=question.text, answer=question.gold, response=answer)


_CONTEXT_TEMPLATES = (
    FULL_CONTEXT_BLOCK_TEMPLATE,
    FULL_CONTEXT_SESSION_HEADING,
    FULL_CONTEXT_TRUNCATED_NOTE,
)

LOCOMO = Protocol(
    benchmark="locomo",
    name=(
        "mem0's LoCoMo protocol (github.com/mem0ai/mem0, evaluation/): the criteria of its "
        "answer instructions and of its lenient CORRECT/WRONG judge, in engram's wording; F1 "
        "and BLEU-1 as its metrics compute them"
    ),
    categories=tuple(LOCOMO_CATEGORIES.values()),
    instructions=_locomo_instructions,
    judge_prompt=_locomo_judge,
    parse_verdict=label_verdict,
    answer_prompts=(LOCOMO_ANSWER_SYSTEM_PROMPT, *_CONTEXT_TEMPLATES),
    judge_prompts=(LOCOMO_JUDGE_PROMPT,),
    notes=(
        (
            "Published figures used gpt-4o-mini to answer and to judge; figures from other "
            "models, above all from small local ones (0.5B-1.5B), are not comparable with them."
        ),
        (
            "The judge is lenient by design: an answer that touches on the gold answer's topic "
            "is CORRECT. An independent audit of the answer key found it accepted most "
            "deliberately vague, on-topic wrong answers."
        ),
        (
            "About 99 of LoCoMo's 1,540 gold answers of categories 1-4 are wrong (a perfect "
            "system scores about 93.6% with them in); --exclude FILE leaves out the questions a list names."
        ),
        (
            "The prompts follow the protocol's criteria in engram's wording, so scores may "
            "differ a little from runs with the original prompts."
        ),
        (
            "Every system here gets the same answer instructions; mem0's own full-context "
            "baseline used a shorter RAG prompt, so the full-context figures differ in prompt "
            "as well as in model."
        ),
        (
            "engram writes the conversation as one user's threads: the first speaker is the "
            "user, the second the assistant, so extracted memories are about the first "
            "speaker; archived messages keep both."
        ),
    ),
    published=PUBLISHED_LOCOMO_J,
)

LONGMEMEVAL = Protocol(
    benchmark="longmemeval",
    name=(
        "LongMemEval's protocol (github.com/xiaowu0162/LongMemEval): the criteria of its "
        "answer prompt and of its yes/no judge per question type, in engram's wording"
    ),
    categories=LONGMEMEVAL_QUESTION_TYPES,
    instructions=_longmemeval_instructions,
    judge_prompt=_longmemeval_judge,
    parse_verdict=yes_no_verdict,
    answer_prompts=(LONGMEMEVAL_ANSWER_SYSTEM_PROMPT, *_CONTEXT_TEMPLATES),
    judge_prompts=tuple(LONGMEMEVAL_JUDGE_PROMPTS.values()),
    notes=(
        (
            "Published figures used GPT-4o as the judge; figures from small local models are "
            "not comparable with them."
        ),
        (
            "Each question has its own history (haystack): its sessions are written to memory "
            "before it is asked."
        ),
    ),
)


def _digest(texts: tuple[str, ...]) -> str:
    return hashlib.sha256("\x00".join(texts).encode("utf-8")).hexdigest()[:12]
