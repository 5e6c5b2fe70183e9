"""A thread's working memory: tool results too large for the model's context, kept aside.

The text is cleaned and redacted once (`kept_text`), split into fixed-size chunks and kept under
`("tool_results", user, thread)` (`results`), paged through by offset and searched inside by
words and meaning (`search`). A thread's results are deleted with the thread
(`engram.stores.memory.users.delete_thread`) or its user.
"""

from engram.stores.working.chunks import (
    CHUNK_CHARS,
    MAX_KEPT_CHARS,
    KeptText,
    kept_text,
    looks_binary,
)
from engram.stores.working.results import (
    ResultHead,
    ahead,
    aread_range,
    aread_text,
    awrite_result,
    head_of,
    result_id_for,
)
from engram.stores.working.search import ChunkHit, asearch_chunks

__all__ = [
    "CHUNK_CHARS",
    "MAX_KEPT_CHARS",
    "ChunkHit",
    "KeptText",
    "ResultHead",
    "ahead",
    "aread_range",
    "aread_text",
    "asearch_chunks",
    "awrite_result",
    "head_of",
    "kept_text",
    "looks_binary",
    "result_id_for",
]
