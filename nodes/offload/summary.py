"""The memory model's summary of an offloaded tool result: one bounded call.

The model reads at most `SUMMARY_INPUT_TOKENS` of the result (its beginning and its end, when it
is longer) and writes at most `SUMMARY_OUTPUT_TOKENS`; the call has the memory model's timeout
(`engram.nodes.model.calls.call_timeout`) and runs on engram's call threads, like every
memory-model call. The caller falls back to the extractive summary when it fails.
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from engram.nodes.model.calls import MEMORY_CALL_TAGS, acall_sync, call_timeout, limited
from engram.nodes.prompts import TOOL_RESULT_SUMMARY_SYSTEM_PROMPT, TOOL_RESULT_SUMMARY_USER_PROMPT
from engram.nodes.text.escape import escape_recalled
from engram.nodes.text.tokens import TokenCounter

SUMMARY_INPUT_TOKENS = 1500
"""Tokens of the result the model reads: the first 80% of them from its beginning, the rest
from its end."""
SUMMARY_OUTPUT_TOKENS = 150
"""Output limit of the call."""
SUMMARY_WORDS = 60
"""What the prompt asks for."""
_MAX_CHARS_PER_TOKEN = 8
"""Characters read per token allowed: enough for English (about four a token) and denser text."""


async def amodel_summary(
    model: BaseChatModel, text: str, *, tool: str, total_length: int, counter: TokenCounter
) -> str:
    """The model's description of `text` (a kept tool result).

    Raises:
        ValueError: The model answered nothing.
        TimeoutError: It took longer than its timeout.
    """
    shown, part = _excerpt(text, counter)
    system = TOOL_RESULT_SUMMARY_SYSTEM_PROMPT.format(max_words=SUMMARY_WORDS)
    user = TOOL_RESULT_SUMMARY_USER_PROMPT.format(
        tool=tool, total_length=f"{total_length:,}", shown=shown, text=escape_recalled(part)
    )
    runnable = limited(model, SUMMARY_OUTPUT_TOKENS).with_config(
        tags=MEMORY_CALL_TAGS, run_name="engram_summarize_tool_result"
    )
    reply = await acall_sync(
        runnable.invoke, [SystemMessage(system), HumanMessage(user)], timeout=call_timeout(model)
    )
    answer = " ".join(reply.text.split())
    if not answer:
        raise ValueError("the memory model returned an empty summary of the tool result")
    return answer


def _excerpt(text: str, counter: TokenCounter) -> tuple[str, str]:
    """(which part is shown, the part)."""
    window = SUMMARY_INPUT_TOKENS * _MAX_CHARS_PER_TOKEN  # bounds what is encoded
    if len(text) <= window and counter.count_text(text) <= SUMMARY_INPUT_TOKENS:
        return "all of it is shown", text
    head = counter.truncate(text[:window], SUMMARY_INPUT_TOKENS * 4 // 5)
    tail_tokens = SUMMARY_INPUT_TOKENS - counter.count_text(head)
    start = max(len(head), len(text) - tail_tokens * _MAX_CHARS_PER_TOKEN)  # not the head again
    tail = counter.truncate_start(text[start:], tail_tokens)
    return "its beginning and its end are shown", f"{head}\n[…]\n{tail}"
