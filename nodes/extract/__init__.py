"""Memory extraction: the offline rules (English and Chinese), with their text splitting, filters
and supersede keys; the review extractor (the rules propose, the memory model reviews) and the
LLM extractor (the model writes)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram.stores.lazy import lazy_exports

if TYPE_CHECKING:
    from engram.nodes.extract.llm import ExtractionError, Extractor, LLMExtractor, make_extractor
    from engram.nodes.extract.review import ReviewExtractor
    from engram.nodes.extract.rules import RuleExtractor

__all__ = [
    "ExtractionError", "Extractor", "LLMExtractor", "ReviewExtractor", "RuleExtractor",
    "make_extractor",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ExtractionError": "engram.nodes.extract.llm",
        "Extractor": "engram.nodes.extract.llm",
        "LLMExtractor": "engram.nodes.extract.llm",
        "make_extractor": "engram.nodes.extract.llm",
        "ReviewExtractor": "engram.nodes.extract.review",
        "RuleExtractor": "engram.nodes.extract.rules",
    },
)
