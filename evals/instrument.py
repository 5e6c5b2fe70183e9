"""`RunRecorder`: a LangChain callback handler that times graph nodes and counts model calls.

Pass it in the run's config (`{"callbacks": [recorder]}`); LangGraph hands it to every node it
runs. A node's time is measured from LangGraph's task start to its end: the node body, the
routing function after it and its state writes, not the checkpoint save between steps.
Model calls are chat-model (and plain LLM) starts: the answering model, and a memory model's
summaries and extractions. Model tokens are what the models report using (prompt + completion,
LangChain's `usage_metadata`); a model that reports nothing (the evals' scripted replies) adds 0.

Example:
    >>> import asyncio
    >>> from langgraph.checkpoint.memory import InMemorySaver
    >>> from engram.evals.scripted import ScriptedChatModel
    >>> from engram.graph import compile_graph
    >>> from langgraph.store.memory import InMemoryStore
    >>> graph = compile_graph(ScriptedChatModel(replies=["Hi"]), store=InMemoryStore(),
    ...                       checkpointer=InMemorySaver())
    >>> recorder = RunRecorder()
    >>> config = {"configurable": {"thread_id": "t"}, "callbacks": [recorder]}
    >>> _ = asyncio.run(graph.ainvoke({"messages": [("user", "hello")]}, config))
    >>> sorted({node for node, _ in recorder.samples}), recorder.model_calls, recorder.model_tokens
    (['consolidate', 'respond', 'start'], 1, 0)
"""

from __future__ import annotations

import threading
import time
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import ChatGeneration, LLMResult

from engram.nodes.model.calls import MEMORY_CALL_TAG

_STEP_TAG = "graph:step:"


class RunRecorder(BaseCallbackHandler):
    """Collects `(node, milliseconds)` samples and the number of model calls."""

    run_inline = True  # called on the graph's own thread/loop: the clock reads are not delayed

    def __init__(self) -> None:
        self.samples: list[tuple[str, float]] = []
        """One `(node name, milliseconds)` per node run, in completion order."""
        self.model_calls = 0
        """Chat-model and LLM calls started."""
        self.model_tokens = 0
        """Prompt + completion tokens the models reported for their calls."""
        self.memory_calls = 0
        """Of `model_calls`, the memory model's (summaries, extraction, merge decisions)."""
        self.memory_answers = 0
        """Memory-model calls that returned an answer (usable or not)."""
        self._memory_runs: set[UUID] = set()
        self._started: dict[UUID, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        node = (metadata or {}).get("langgraph_node")
        is_task = any(tag.startswith(_STEP_TAG) for tag in tags or ())
        if is_task and node and kwargs.get("name") == node and not node.startswith("__"):
            with self._lock:
                self._started[run_id] = (node, time.perf_counter())

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._finish(run_id)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._finish(run_id)

    def on_chat_model_start(
        self, serialized: Any, messages: Any, *, run_id: UUID, **kwargs: Any
    ) -> None:
        with self._lock:
            self.model_calls += 1
            if MEMORY_CALL_TAG in (kwargs.get("tags") or ()):
                self.memory_calls += 1
                self._memory_runs.add(run_id)

    def on_llm_start(self, serialized: Any, prompts: Any, **kwargs: Any) -> None:
        with self._lock:
            self.model_calls += 1

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        tokens = sum(
            (g.message.usage_metadata or {}).get("total_tokens", 0)
            for batch in response.generations
            for g in batch
            if isinstance(g, ChatGeneration)
        )
        with self._lock:
            self.model_tokens += tokens
            if run_id in self._memory_runs:
                self._memory_runs.discard(run_id)
                self.memory_answers += 1

    def _finish(self, run_id: UUID) -> None:
        end = time.perf_counter()
        with self._lock:
            started = self._started.pop(run_id, None)
            if started is not None:
                node, begin = started
                self.samples.append((node, (end - begin) * 1000.0))
