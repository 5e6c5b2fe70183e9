"""Token counting for budgets and thresholds: tiktoken, cached per message, never blocking a turn.

The encoding follows the answering model (`tiktoken.encoding_name_for_model`; models tiktoken does
not know, such as Claude or Llama, are approximated with `cl100k_base`). An encoding is only loaded
when its file is already in tiktoken's cache, so no turn ever waits on the network: a missing
encoding is fetched once in a background thread while counting falls back to `cl100k_base` (if
cached) or to a character estimate that weights CJK characters more than Latin ones.

Counts of messages are cached by message id and content, so a turn in a 1000-message thread
counts only its new messages.

Example:
    >>> from langchain_core.messages import HumanMessage
    >>> counter = counter_for_model("gpt-4o-mini")
    >>> counter.count_message(HumanMessage("hello there", id="m1")) > MESSAGE_OVERHEAD
    True
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

import tiktoken
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

logger = logging.getLogger(__name__)

MESSAGE_OVERHEAD = 4
"""Tokens each chat message costs beyond its content (role and delimiters), as OpenAI counts."""
REPLY_PRIMING = 3
"""Tokens a chat request costs once, priming the model's reply."""
FALLBACK_ENCODING = "cl100k_base"
"""Encoding used for models tiktoken does not know, and when the model's own one is not cached."""
ESTIMATE_NAME = "char-estimate"
"""Name of the character estimate used when no encoding is cached at all."""

_BLOB_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "o200k_harmony": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
    "p50k_base": "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken",
    "p50k_edit": "https://openaipublic.blob.core.windows.net/encodings/p50k_base.tiktoken",
    "r50k_base": "https://openaipublic.blob.core.windows.net/encodings/r50k_base.tiktoken",
}
_CJK = re.compile(
    r"[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\uff00-\uffef]"
)
_ASCII_WORDISH = re.compile(r"[A-Za-z\s]")
_ASCII_OTHER = re.compile(r"[\x21-\x40\x5b-\x60\x7b-\x7e]")
_ASTRAL = re.compile(r"[\U00010000-\U0010ffff]")
_CACHE_LIMIT = 100_000
_DEFAULT_CACHE_DIR = os.path.join(tempfile.gettempdir(), "data-gym-cache")
# tiktoken's default cache folder, resolved once at import: the first `tempfile.gettempdir()`
# probes the working directory and writes a test file, blocking calls that must never run on an
# event loop (`langgraph dev` rejects them).
_fetching: set[str] = set()
_fetch_lock = threading.Lock()
_warned_estimate = threading.Event()


class TokenCounter:
    """Counts tokens of texts and chat messages with one encoding (or the character estimate).

    Args:
        encoding: A loaded tiktoken encoding, or None for the character estimate.
    """

    def __init__(self, encoding: tiktoken.Encoding | None) -> None:
        self.encoding = encoding
        self.name = encoding.name if encoding is not None else ESTIMATE_NAME
        self._by_id: dict[str, tuple[Any, int]] = {}
        self._by_text: dict[str, int] = {}

    def count_text(self, text: str) -> int:
        """Tokens of a plain text."""
        if not text:
            return 0
        if self.encoding is None:
            return estimate_tokens(text)
        return len(self.encoding.encode(text, disallowed_special=()))

    def count_message(self, message: BaseMessage) -> int:
        """Tokens of one chat message, overhead included.

        Cached by message id and content (a message edited under the same id is recounted), or
        by its text when it has no id.
        """
        if message.id is not None:
            hit = self._by_id.get(message.id)
            if hit is not None and hit[0] == message.content:
                return hit[1]
            count = self.count_text(message_text(message)) + MESSAGE_OVERHEAD
            _bounded_put(self._by_id, message.id, (message.content, count))
            return count
        text = message_text(message)
        count = self._by_text.get(text)
        if count is None:
            count = self.count_text(text) + MESSAGE_OVERHEAD
            _bounded_put(self._by_text, text, count)
        return count

    def count_messages(self, messages: Iterable[BaseMessage]) -> int:
        """Tokens of a whole chat request: every message plus the reply priming."""
        return sum(self.count_message(m) for m in messages) + REPLY_PRIMING

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` that fits in `max_tokens` (cut at a token boundary)."""
        return self._cut(text, max_tokens, keep_end=False)

    def truncate_start(self, text: str, max_tokens: int) -> str:
        """A suffix of `text` that fits in `max_tokens`, cut at a token boundary (the longest,
        or a few tokens shorter where a suffix tokenizes longer alone than inside `text`): the
        newest part of a transcript or the end of a text, where `truncate` keeps the start.

        Example:
            >>> counter = counter_for_model(None)
            >>> kept = counter.truncate_start("one two three four", 2)
            >>> kept.endswith("four"), counter.count_text(kept) <= 2
            (True, True)
        """
        return self._cut(text, max_tokens, keep_end=True)

    def _cut(self, text: str, max_tokens: int, *, keep_end: bool) -> str:
        """`text`'s start (or end) that fits in `max_tokens`; a cut inside a multi-byte character
        drops that character."""
        if max_tokens <= 0:
            return ""
        if self.encoding is None:
            return _estimated_cut(text, max_tokens, keep_end=keep_end)
        tokens = self.encoding.encode(text, disallowed_special=())
        if len(tokens) <= max_tokens:
            return text
        if not keep_end:
            return self._decode(tokens[:max_tokens])
        # A suffix may tokenize into more tokens on its own: take fewer by the excess until it fits
        keep = max_tokens
        while keep > 0:
            part = self._decode(tokens[-keep:])
            excess = self.count_text(part) - max_tokens
            if excess <= 0:
                return part
            keep -= excess
        return ""

    def _decode(self, tokens: list[int]) -> str:
        return self.encoding.decode_bytes(tokens).decode("utf-8", errors="ignore")


def _estimated_cut(text: str, max_tokens: int, *, keep_end: bool) -> str:
    """The longest prefix (or suffix) of `text` whose estimated tokens fit in `max_tokens`."""
    if estimate_tokens(text) <= max_tokens:
        return text
    low, high = 0, len(text)  # the most characters kept that fit
    while low < high:
        mid = (low + high + 1) // 2
        if estimate_tokens(text[len(text) - mid:] if keep_end else text[:mid]) <= max_tokens:
            low = mid
        else:
            high = mid - 1
    return text[len(text) - low:] if keep_end else text[:low]


def counter_for_model(model_name: str | None) -> TokenCounter:
    """The counter for a model name: its tiktoken encoding if cached, else the fallbacks.

    Never blocks on the network: when the model's encoding is not cached, a background thread
    fetches it once (the next lookup then uses it) and this call returns the fallback.
    """
    wanted = _encoding_name(model_name)
    for name in dict.fromkeys([wanted, FALLBACK_ENCODING]):
        if is_encoding_cached(name):
            return _counter(name)
        if name == wanted:
            _fetch_in_background(name)
    if not _warned_estimate.is_set():
        _warned_estimate.set()
        logger.warning(
            "tiktoken encodings %s are not cached (set TIKTOKEN_CACHE_DIR to a folder holding "
            "them); token counts are estimated from characters",
            sorted({wanted, FALLBACK_ENCODING}),
        )
    return _counter(None)


def counter_named(name: str) -> TokenCounter:
    """The counter whose `name` this is (an encoding a counter was made with, so cached)."""
    return _counter(None if name == ESTIMATE_NAME else name)


def preload_counters(model_name: str | None) -> None:
    """Load the encodings `counter_for_model` will use for this model (and for no model) now.

    Call it while a graph is built: reading and parsing an encoding takes a fraction of a second
    of blocking I/O and CPU, which must not happen on the event loop during a turn.
    """
    counter_for_model(model_name)
    counter_for_model(None)


def is_encoding_cached(name: str) -> bool:
    """Whether tiktoken can load `name` from its cache folder without a download."""
    url = _BLOB_URLS.get(name)
    cache_dir = _tiktoken_cache_dir()
    if url is None or not cache_dir:
        return False
    return os.path.exists(os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest()))


def estimate_tokens(text: str) -> int:
    """A deliberately generous token estimate from characters, weighted by script.

    In OpenAI encodings a CJK character costs about one token, a Latin letter or space about a
    quarter, a digit or ASCII symbol most of one, another script's letter about a half, and an
    emoji two or more.
    """
    cjk = len(_CJK.findall(text))
    wordish = len(_ASCII_WORDISH.findall(text))
    symbols = len(_ASCII_OTHER.findall(text))
    astral = len(_ASTRAL.findall(text))
    other = len(text) - cjk - wordish - symbols - astral
    return math.ceil(cjk * 1.3 + wordish * 0.3 + symbols * 0.8 + other * 0.55 + astral * 2.0)


def message_content(message: BaseMessage) -> str:
    """What a message says: its text and, for an AI message, the tool calls it makes.

    Example:
        >>> from langchain_core.messages import HumanMessage
        >>> message_content(HumanMessage("hi", name="Ann"))
        'hi'
    """
    content = message.content
    text = content if isinstance(content, str) else _blocks_text(content)
    if isinstance(message, AIMessage) and message.tool_calls:
        calls = (
            f"{c['name']} {json.dumps(c['args'], ensure_ascii=False)}" for c in message.tool_calls
        )
        return "\n".join([text, *calls])
    return text


def message_text(message: BaseMessage) -> str:
    """The text a message costs tokens for: what it says (`message_content`), its tool call id
    and its name."""
    extras = [message.tool_call_id] if isinstance(message, ToolMessage) else []
    if message.name:
        extras.append(message.name)
    return "\n".join([message_content(message), *extras])


def _bounded_put(cache: dict[str, Any], key: str, value: Any) -> None:
    if len(cache) >= _CACHE_LIMIT:
        cache.clear()
    cache[key] = value


@cache
def _counter(name: str | None) -> TokenCounter:
    return TokenCounter(tiktoken.get_encoding(name) if name else None)


def _encoding_name(model_name: str | None) -> str:
    if not model_name:
        return FALLBACK_ENCODING
    try:
        return tiktoken.encoding_name_for_model(model_name.rsplit("/", 1)[-1].split(":", 1)[-1])
    except KeyError:
        return FALLBACK_ENCODING


def _tiktoken_cache_dir() -> str:
    # Mirrors tiktoken.load.read_file_cached; "" means tiktoken caching is disabled.
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return _DEFAULT_CACHE_DIR


def _fetch_in_background(name: str) -> None:
    with _fetch_lock:
        if name in _fetching or name not in _BLOB_URLS:
            return
        _fetching.add(name)
    logger.info("tiktoken encoding %s is not cached; fetching it in the background", name)
    threading.Thread(target=_fetch, args=(name,), name=f"tiktoken-{name}", daemon=True).start()


def _fetch(name: str) -> None:
    try:
        tiktoken.get_encoding(name)
    except (OSError, ValueError) as exc:  # requests' errors are OSErrors; ValueError: bad hash
        logger.info("could not fetch tiktoken encoding %s (%s); using the fallback", name, exc)


def _blocks_text(blocks: Sequence[Any]) -> str:
    parts = []
    for block in blocks:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and isinstance(block.get("text"), str):
            parts.append(block["text"])
        else:
            parts.append(json.dumps(block, ensure_ascii=False, default=str))
    return "\n".join(parts)
