"""Memory extraction: the LLM extractor and the offline rules (English and Chinese), with their
text splitting, filters and supersede keys."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram.stores.lazy import lazy_exports

if TYPE_CHECKING:
    from engram.nodes.extract.llm import ExtractionError, Extractor, LLMExtractor, make_extractor
    from engram.nodes.extract.rules import RuleExtractor

__all__ = ["ExtractionError", "Extractor", "LLMExtractor", "RuleExtractor", "make_extractor"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ExtractionError": "engram.nodes.extract.llm",
        "Extractor": "engram.nodes.extract.llm",
        "LLMExtractor": "engram.nodes.extract.llm",
        "make_extractor": "engram.nodes.extract.llm",
        "RuleExtractor": "engram.nodes.extract.rules",
    },
)
