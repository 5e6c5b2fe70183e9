"""Memory extraction: the LLM extractor and the offline rules (English and Chinese), with their
text splitting, filters and supersede keys."""

from engram.nodes.extract.llm import ExtractionError, Extractor, LLMExtractor, make_extractor
from engram.nodes.extract.rules import RuleExtractor

__all__ = ["ExtractionError", "Extractor", "LLMExtractor", "RuleExtractor", "make_extractor"]
