"""Answer accuracy: LoCoMo (`engram eval locomo --mode qa`) and LongMemEval (`engram eval
longmemeval`) answered by a model from what engram recalls, graded by a judge model, beside
full-context, no-memory and retrieval-only baselines on the same questions and models."""

from engram.evals.qa.answer import BASELINES, SYSTEMS
from engram.evals.qa.dataset import QAHistory, QAQuestion, QASession
from engram.evals.qa.exclusions import apply_exclusions, read_exclusions
from engram.evals.qa.locomo import locomo_histories
from engram.evals.qa.longmemeval import load_longmemeval
from engram.evals.qa.protocol import LOCOMO, LONGMEMEVAL, Protocol
from engram.evals.qa.report import qa_report
from engram.evals.qa.run import QARun, QASettings, arun_qa, run_qa

__all__ = [
    "BASELINES",
    "LOCOMO",
    "LONGMEMEVAL",
    "SYSTEMS",
    "Protocol",
    "QAHistory",
    "QAQuestion",
    "QARun",
    "QASession",
    "QASettings",
    "apply_exclusions",
    "arun_qa",
    "load_longmemeval",
    "locomo_histories",
    "qa_report",
    "read_exclusions",
    "run_qa",
]
