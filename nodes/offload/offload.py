"""Offload: a tool result above `Context.working_memory.offload_threshold_tokens` is kept aside
and the model sees a pointer in its place.

`Offloader.aprocess` runs on what a tool call returned (the graph's `ToolNode` and
`EngramMiddleware` both call it from their tool-call wrappers, `engram.graph`):

1. a `ToolMessage` (or one inside a tool's `Command`) whose text is longer than the threshold
   is made the text engram keeps (`engram.stores.working.kept_text`: valid, printable,
   redacted, at most a megabyte);
2. its summary is the memory model's (one bounded call, `engram.nodes.offload.summary`) or,
   offline or when that call fails, the extractive one;
3. it is kept under the thread: in the store (`("tool_results", user, thread)`), or, in an
   incognito run (and a run without a store or a thread id), in the thread's own state, so it
   lives exactly as long as the thread; the same text returned again in the thread is kept
   once (its id derives from the text, `result_id_for`) and its summary reused;
4. the message keeps its id, `tool_call_id`, name, status and artifact, so the tool call and
   its result stay paired for every provider; only its content becomes the pointer
   (`engram.nodes.offload.pointer`). The run's state records the result under `offloaded`.

What the model reads back through `read_tool_result` and `search_tool_result` is that kept text.
Their own results are never offloaded. A result whose content holds anything but text (an
image block) is left as it is.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import ToolMessage
from langgraph.store.base import BaseStore
from langgraph.types import Command

from engram.nodes.failures import RECOVERABLE_ERRORS, record_failure
from engram.nodes.offload.pointer import (
    SUMMARY_CHARS,
    OffloadedPointer,
    extractive_summary,
    pointer_content,
    preview_of,
)
from engram.nodes.offload.summary import amodel_summary
from engram.nodes.text.tokens import counter_for_model
from engram.nodes.tool_calls import READER_TOOLS
from engram.stores.namespaces import tool_result_namespace
from engram.stores.secrets import redact
from engram.stores.working import (
    KeptText,
    ahead,
    awrite_result,
    head_of,
    kept_text,
    result_id_for,
)

if TYPE_CHECKING:
    from engram.nodes.context import Context
    from engram.nodes.state import OffloadRecord

logger = logging.getLogger(__name__)

class Offloader:
    """Keeps tool results that are too long out of the model's context.

    Args:
        memory_model: Writes the pointer's summary; None: the extractive summary.
        model_name: The answering model's name (the threshold counts with its encoding).
    """

    def __init__(self, memory_model: BaseChatModel | None, *, model_name: str | None) -> None:
        self.memory_model = memory_model
        self.model_name = model_name

    async def aprocess(
        self,
        result: Any,
        ctx: Context,
        *,
        store: BaseStore | None,
        thread_id: str | None,
    ) -> Any:
        """What a tool call returned, with its long tool messages offloaded (module docstring).

        Args:
            result: The tool call's `ToolMessage` or `Command` (anything else is returned as
                it is).
            ctx: The run's settings.
            store: Where results are kept (None: in the thread's state).
            thread_id: The run's thread (None: in the thread's state).
        """
        if ctx.working_memory.offload_threshold_tokens is None:
            return result
        if isinstance(result, ToolMessage):
            done = await self._offload(result, ctx, store, thread_id)
            if done is None:
                return result
            message, update = done
            return Command(update={"messages": [message], **update})
        if isinstance(result, Command) and isinstance(result.update, dict):
            messages = result.update.get("messages")
            if not isinstance(messages, list):
                return result
            update = dict(result.update)
            kept: list[Any] = []
            for message in messages:
                done = None
                if isinstance(message, ToolMessage):
                    done = await self._offload(message, ctx, store, thread_id)
                if done is None:
                    kept.append(message)
                    continue
                kept.append(done[0])
                update["offloaded"] = {**update.get("offloaded", {}), **done[1]["offloaded"]}
                update["failures"] = [*update.get("failures", []), *done[1].get("failures", [])]
            return replace(result, update={**update, "messages": kept})
        return result

    async def _offload(
        self, message: ToolMessage, ctx: Context, store: BaseStore | None, thread_id: str | None
    ) -> tuple[ToolMessage, dict[str, Any]] | None:
        """The pointer message and the state update, or None when the message stays."""
        raw = _text(message.content)
        if raw is None or message.name in READER_TOOLS or not self._too_long(raw, ctx):
            return None
        tool = message.name or "a tool"
        kept = await asyncio.to_thread(kept_text, raw)
        result_id = result_id_for(ctx.user_id, thread_id, kept.text)
        in_store = bool(store is not None and thread_id and not ctx.incognito)
        namespace = tool_result_namespace(ctx.user_id, thread_id) if in_store else ()
        known = None
        if in_store:
            try:  # the same text in this thread again: kept once, its summary reused
                known = await ahead(store, namespace, result_id)  # type: ignore[arg-type]
            except RECOVERABLE_ERRORS:
                known = None
        if known is not None:
            summary, failures = known.summary, []
        else:
            summary, failures = await self._summary(kept, tool)
        record: OffloadRecord = {
            "tool": tool,
            "tool_call_id": message.tool_call_id,
            "total_length": kept.total_length,
            "kept_in": "thread",
            "summary": summary,
        }
        preview = preview_of(kept.text)
        if known is not None:
            record["kept_in"] = "store"
        elif in_store:
            head = head_of(result_id, kept, tool=tool, tool_call_id=message.tool_call_id,
                           summary=summary, preview=preview)
            try:
                await awrite_result(store, namespace, head, kept.text)  # type: ignore[arg-type]
                record["kept_in"] = "store"
            except RECOVERABLE_ERRORS as exc:  # kept in the thread instead
                failures.append(record_failure("offload", exc))
        if record["kept_in"] == "thread":
            record["content"] = kept.text
        pointer = OffloadedPointer(
            memoryId=result_id, summary=summary, preview=preview, totalLength=kept.total_length
        )
        logger.info("offloaded a %d-character result of %s (%s)", kept.total_length, tool,
                    record["kept_in"])
        pointed = message.model_copy(update={"content": pointer_content(pointer)})
        update: dict[str, Any] = {"offloaded": {result_id: record}}
        if failures:
            update["failures"] = failures
        return pointed, update

    def _too_long(self, raw: str, ctx: Context) -> bool:
        threshold = ctx.working_memory.offload_threshold_tokens
        assert threshold is not None
        if len(raw) <= threshold:  # a token is at least a character
            return False
        # a token is rarely more than a dozen characters: no need to count megabytes
        return counter_for_model(self.model_name).count_text(raw[: threshold * 12]) > threshold

    async def _summary(self, kept: KeptText, tool: str) -> tuple[str, list[dict[str, str]]]:
        failures: list[dict[str, str]] = []
        if self.memory_model is not None and kept.text.strip():
            try:
                answer = await amodel_summary(
                    self.memory_model, kept.text, tool=tool, total_length=kept.total_length,
                    counter=counter_for_model(self.model_name),
                )
                # whatever the model wrote (it may restate a secret it was not shown)
                answer = redact(answer).text
                return answer[:SUMMARY_CHARS], failures
            except RECOVERABLE_ERRORS as exc:
                failures.append(record_failure("summarize", exc))
        return extractive_summary(kept.text, tool=tool, total_length=kept.total_length), failures


def _text(content: Any) -> str | None:
    """A tool message's text, or None when its content holds anything else (an image)."""
    if isinstance(content, str):
        return content
    texts = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        else:
            return None
    return "".join(texts)
