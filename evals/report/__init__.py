"""The eval report: JSON (`build`), HTML (`html`) and the console summary (`console`); what each
figure means and the targets it is judged by (`figures`)."""

from engram.evals.report.build import REPORT_HTML, REPORT_JSON, build_report, write_report
from engram.evals.report.figures import (
    COUNT_METRICS,
    LOCOMO_TARGETS,
    LOWER_IS_BETTER,
    METRIC_DEFINITIONS,
    SUITE_METRICS,
    SUITE_TARGETS,
    Target,
    all_pass,
    check_targets,
)

__all__ = [
    "COUNT_METRICS",
    "LOCOMO_TARGETS",
    "LOWER_IS_BETTER",
    "METRIC_DEFINITIONS",
    "REPORT_HTML",
    "REPORT_JSON",
    "SUITE_METRICS",
    "SUITE_TARGETS",
    "Target",
    "all_pass",
    "build_report",
    "check_targets",
    "write_report",
]
