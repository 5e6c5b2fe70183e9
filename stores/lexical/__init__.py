"""The lexical channel of recall: the tokenizer and BM25 index (SQLite FTS5), fusion with the
dense channel, and the hybrid search operation that asks a store for both."""

from engram.stores.lexical.fusion import DEFAULT_LEXICAL_WEIGHT, FUSION_METHODS, FusionMethod, fuse
from engram.stores.lexical.hybrid import HybridHit, HybridSearchOp, supports_hybrid
from engram.stores.lexical.index import LexicalDocument, LexicalIndex, Tokenizer

__all__ = [
    "DEFAULT_LEXICAL_WEIGHT",
    "FUSION_METHODS",
    "FusionMethod",
    "HybridHit",
    "HybridSearchOp",
    "LexicalDocument",
    "LexicalIndex",
    "Tokenizer",
    "fuse",
    "supports_hybrid",
]
