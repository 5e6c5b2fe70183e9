"""Working memory for tool-using agents, measured: a real `create_agent` agent on the local
model, whose tools return 10k to 200k characters (a source file, search results, logs), with
engram's offload and without it, side by side in one run.

Run::

    ENGRAM_LOCAL_THREADS=2 python -m engram.evals.bench working-memory --model local:0.5b
    python -m engram.evals.bench working-memory --sizes 10000,50000 --json out.json

Each task asks for one detail buried in the middle of one tool's result (`TASKS`); the agent
(`EngramMiddleware`, embedded ChromaStore, SQLite checkpointer, a fresh thread per task) must
call the tool and, with offload, read the detail back through `search_tool_result` or
`read_tool_result`. Small local models do not write tool calls reliably on their own (asked
plainly, Qwen2.5-Coder 0.5B answers without calling a tool, 1.5B writes the call as JSON text,
and llama.cpp's server does not enforce `tool_choice="required"` for them), so the model picks
each call as JSON constrained by a schema of the tools (`JsonToolCalls`: a grammar on
llama.cpp's server, the tools listed in the prompt). The agent has the task's one data tool,
which its first call must use (the 0.5B model picks the wrong one of three), the reading
tools, and a `final_answer` tool that ends the run; what it calls after the result, and with
which arguments, is the model's choice. Both arms run the same tasks:

- **offload**: `EngramMiddleware(offload=True)` with the default threshold (2000 tokens);
- **no offload**: `EngramMiddleware(offload=False)`; the call after a result is sent whole (the tool loop
  reuses the turn's context build), so a result that cannot fit the model's window (8192
  tokens) is refused by the server ("refused"), after its tokens were counted.

Reported per arm: input tokens per model call (counted with cl100k on what each call was sent;
`first after result`: the call that follows the tool's result), tasks answered right (the
detail in the final answer), how often the agent read back (a `read_tool_result` or
`search_tool_result` whose output held the detail), and time: per task, per model call, and
what offloading added to the tool call (the pointer: cleaning, redaction, summary, store
write) and what reading back took.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.errors import GraphRecursionError
from rich.console import Console
from rich.table import Table

from engram.evals.bench.stores import code_state
from engram.graph import Context, EngramMiddleware, Recall
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.graph.local_model import local_chat_model
from engram.nodes.text.tokens import counter_for_model
from engram.nodes.tool_calls import READER_TOOLS
from engram.stores.chroma.store import ChromaStore, default_index

ARMS = ("offload", "no offload")
SIZES = (10_000, 50_000, 200_000)
WINDOW = 8192
USER = "bench"
STEPS = 16
"""Graph steps per task by default (`--steps`): about five model calls."""
SYSTEM_PROMPT = (
    "You answer questions about the user's project with your tools. First call the tool that "
    "has the data. When a tool result shows _OFFLOADED_, it was too long to show: call "
    "search_tool_result with its memoryId and the words you look for (or read_tool_result) to "
    "find the exact detail. Then call final_answer with one short sentence holding the exact "
    "value."
)
COUNTER = counter_for_model(None)
TOOLS_PROMPT = (
    "Call exactly one of these tools now, as JSON with its name and arguments (never the same "
    "call twice):\n{tools}"
)


@dataclass(frozen=True)
class Task:
    """One question whose answer is `answer`, buried in the middle of `tool`'s result."""

    name: str
    tool: str
    question: str
    answer: str
    make: Callable[[int, str], str]
    """(size, needle line) -> the tool's result: about `size` characters, the needle halfway."""
    needle: str


def _source_file(size: int, needle: str) -> str:
    rng = random.Random(size)
    lines, half = ['"""Service settings."""', ""], None
    while sum(map(len, lines)) + len(lines) < size:
        if half is None and sum(map(len, lines)) > size // 2:
            lines.append(needle)
            half = True
        lines.append(f"SETTING_{len(lines):05d} = {rng.randint(1, 9999)}  # {rng.choice(_WORDS)}")
    return "\n".join(lines)


def _search_results(size: int, needle: str) -> str:
    rng = random.Random(size + 1)
    rows: list[dict[str, str]] = []
    placed = False
    while len(json.dumps(rows)) < size:
        if not placed and len(json.dumps(rows)) > size // 2:
            rows.append({"title": "Release notes", "url": "https://example.com/notes",
                         "snippet": needle})
            placed = True
        words = " ".join(rng.choice(_WORDS) for _ in range(30))
        rows.append({"title": f"Result {len(rows)}", "url": f"https://example.com/{len(rows)}",
                     "snippet": words})
    return json.dumps(rows, indent=1)


def _logs(size: int, needle: str) -> str:
    rng = random.Random(size + 2)
    lines: list[str] = []
    placed = False
    while sum(map(len, lines)) + len(lines) < size:
        if not placed and sum(map(len, lines)) > size // 2:
            lines.append(needle)
            placed = True
        n = len(lines)
        lines.append(f"2026-11-26T10:{n // 60 % 60:02d}:{n % 60:02d}Z INFO GET /api/items/"
                     f"{rng.randint(1, 99999)} 200 {rng.randint(3, 90)}ms")
    return "\n".join(lines)


_WORDS = ("latency", "cache", "retry", "queue", "shard", "replica", "token", "invoice", "cart",
          "order", "refund", "deploy", "rollback", "feature", "flag", "quota", "region")

TASKS = (
    Task("file", "read_file", "In config/settings.py, what is PAYMENT_TIMEOUT_SECONDS set to?",
         "47", _source_file, "PAYMENT_TIMEOUT_SECONDS = 47  # agreed with the bank"),
    Task("search", "search_docs", "On which date did the Zephyr-9 release ship? Search the docs.",
         "2026-03-14", _search_results, "The Zephyr-9 release shipped on 2026-03-14."),
    Task("logs", "fetch_logs", "In the checkout service's logs, which operator refunded order "
         "88231?", "mhernandez", _logs,
         "2026-11-26T10:31:07Z INFO refund order=88231 operator=mhernandez amount=19.90"),
)

_RESULTS: dict[str, str] = {}
"""What the task being run's tool returns."""


@tool
def read_file(path: str) -> str:
    """Read a file of the user's project."""
    return _RESULTS["read_file"]


@tool
def search_docs(query: str) -> str:
    """Search the project's documentation; returns the matching pages as JSON."""
    return _RESULTS["search_docs"]


@tool
def fetch_logs(service: str) -> str:
    """Fetch the recent logs of a service."""
    return _RESULTS["fetch_logs"]


@tool(return_direct=True)
def final_answer(answer: str) -> str:
    """Give the user your final answer (ends your turn)."""
    return answer


DATA_TOOLS = {t.name: t for t in (read_file, search_docs, fetch_logs)}


class JsonToolCalls(BaseChatModel):
    """A local model that calls tools by answering JSON a schema of the tools constrains (one
    call per answer), for models too small to write tool calls on their own."""

    inner: Any
    """The local `ChatOpenAI`."""

    @property
    def _llm_type(self) -> str:
        return "json-tool-calls"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        tools = kwargs.get("tools") or []
        if not tools:
            return ChatResult(generations=[ChatGeneration(message=self.inner.invoke(messages))])
        schema = {"anyOf": [
            {"type": "object", "properties": {
                "name": {"const": t["function"]["name"]},
                "arguments": t["function"]["parameters"]},
             "required": ["name", "arguments"]}
            for t in tools
        ]}
        listing = "\n".join(
            f"- {t['function']['name']}: {' '.join(t['function']['description'].split())} "
            f"Arguments: {json.dumps(t['function']['parameters'].get('properties', {}))}"
            for t in tools
        )
        prompt = [*messages, SystemMessage(TOOLS_PROMPT.format(tools=listing))]
        answer = self.inner.bind(response_format={
            "type": "json_schema", "json_schema": {"name": "tool_call", "schema": schema},
        }).invoke(prompt)
        call = json.loads(answer.text)
        message = AIMessage("", tool_calls=[{"name": call["name"], "args": call["arguments"],
                                             "id": f"call-{uuid.uuid4().hex[:12]}"}])
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Any, *, tool_choice: Any = None, **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)


class DataFirst(AgentMiddleware):
    """The first model call (no tool result yet) may only call a tool that has data."""

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return handler(request)
        return handler(request.override(tools=[t for t in request.tools if t.name in DATA_TOOLS]))


class ToolTiming(AgentMiddleware):
    """Times each tool call into `sink[key]`: outermost, with engram's offload
    (`"tool_with_offload"`); innermost, the tool alone (`"tool_alone"`)."""

    def __init__(self, sink: dict[str, list[Any]], key: str = "tool_with_offload") -> None:
        super().__init__()
        self.sink = sink
        self.key = key

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        begin = time.perf_counter()
        result = handler(request)
        self.sink[self.key].append((request.tool_call["name"], time.perf_counter() - begin))
        return result


class InnerTiming(ToolTiming):
    """Times each tool call alone, and counts what each model call is sent (innermost)."""

    def __init__(self, sink: dict[str, list[Any]]) -> None:
        super().__init__(sink, "tool_alone")

    def wrap_model_call(self, request: Any, handler: Any) -> Any:
        sent = [request.system_message, *request.messages] if request.system_message else list(
            request.messages
        )
        call = {
            "tokens": COUNTER.count_messages(sent),
            "after_result": bool(request.messages) and isinstance(request.messages[-1], ToolMessage),
        }
        self.sink["model_calls"].append(call)
        begin = time.perf_counter()
        try:
            return handler(request)
        finally:
            call["seconds"] = time.perf_counter() - begin


def run_task(
    arm: str, task: Task, size: int, model: Any, folder: Path, steps: int = STEPS
) -> dict[str, Any]:
    """One task in one arm, in a fresh thread; the agent has the task's tool and
    `final_answer` (and, with offload, the two reading tools)."""
    _RESULTS[task.tool] = task.make(size, task.needle)
    sink: dict[str, list[Any]] = {"tool_with_offload": [], "tool_alone": [], "model_calls": []}
    store = ChromaStore(path=folder / "chroma", index=default_index())
    saver = ThreadedSqliteSaver.from_path(folder / "checkpoints.sqlite")
    agent = create_agent(
        model,
        tools=[DATA_TOOLS[task.tool], final_answer],
        system_prompt=SYSTEM_PROMPT,
        middleware=[ToolTiming(sink), EngramMiddleware(offload=arm == "offload"),
                    DataFirst(), InnerTiming(sink)],
        store=store,
        checkpointer=saver,
        context_schema=Context,
    )
    config = {"configurable": {"thread_id": str(uuid.uuid4())}, "recursion_limit": steps}
    ctx = Context(user_id=USER, context_window=WINDOW, recall=Recall(k=0, episodes=0))
    outcome, answer = "answered", ""
    begin = time.perf_counter()
    try:
        out = agent.invoke({"messages": [HumanMessage(task.question)]}, config, context=ctx)
        answer = str(out["messages"][-1].content)
    except openai.BadRequestError:  # the server's window: the call was refused
        outcome = "refused"
    except GraphRecursionError:
        outcome = "no answer"
    seconds = time.perf_counter() - begin
    messages = agent.get_state(config).values.get("messages", [])
    reads = [m for m in messages if isinstance(m, ToolMessage) and m.name in READER_TOOLS]
    store.close()
    saver.close()
    offload_ms = [
        (outer - inner) * 1000
        for (name, outer), (_, inner) in zip(sink["tool_with_offload"], sink["tool_alone"])
        if name not in READER_TOOLS
    ]
    return {
        "task": task.name, "size": size, "outcome": outcome,
        "correct": task.answer.lower() in answer.lower(),
        "read_back": any(_holds(m.content, task) for m in reads),
        "reader_calls": len(reads),
        "model_calls": sink["model_calls"],
        "offload_ms": offload_ms,
        "reader_ms": [s * 1000 for n, s in sink["tool_with_offload"] if n in READER_TOOLS],
        "seconds": round(seconds, 2),
        "answer": answer[:300],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m engram.evals.bench working-memory")
    parser.add_argument("--model", default="local:0.5b", help="local:0.5b or local:1.5b")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)),
                        help="tool result sizes in characters, comma-separated")
    parser.add_argument("--steps", type=int, default=STEPS,
                        help="graph steps per task (about three per model call)")
    parser.add_argument("--json", type=Path, help="also write the result here")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    model = JsonToolCalls(inner=local_chat_model(args.model, context_window=WINDOW,
                                                 max_tokens=160))
    result: dict[str, Any] = {
        "model": args.model, "sizes": sizes, "window": WINDOW, "steps": args.steps,
        "threads": os.environ.get("ENGRAM_LOCAL_THREADS"),
        "load_average_before": os.getloadavg(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        **code_state(),
        "arms": {},
    }
    for arm in ARMS:
        runs = []
        for size in sizes:
            for task in TASKS:
                with tempfile.TemporaryDirectory(prefix="engram-wm-") as folder:
                    run = run_task(arm, task, size, model, Path(folder), args.steps)
                print(json.dumps({arm: {k: run[k] for k in ("task", "size", "outcome",
                                                           "correct", "read_back", "seconds")}}),
                      file=sys.stderr, flush=True)
                runs.append(run)
        result["arms"][arm] = {"summary": _summary(runs), "runs": runs}
    result["load_average_after"] = os.getloadavg()
    Console(width=130).print(_table(result))
    text = json.dumps(result, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


def _holds(content: Any, task: Task) -> bool:
    return task.answer.lower() in str(content).lower()


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    calls = [c for r in runs for c in r["model_calls"]]
    after = [c["tokens"] for c in calls if c["after_result"]]
    offload = [ms for r in runs for ms in r["offload_ms"]]
    readers = [ms for r in runs for ms in r["reader_ms"]]
    return {
        "tasks": len(runs),
        "correct": sum(r["correct"] for r in runs),
        "failed": sum(r["outcome"] != "answered" for r in runs),
        "used_reader": sum(r["reader_calls"] > 0 for r in runs),
        "read_back": sum(r["read_back"] for r in runs),
        "model_calls": len(calls),
        "tokens_per_call_mean": round(statistics.mean(c["tokens"] for c in calls)) if calls else None,
        "tokens_after_result_mean": round(statistics.mean(after)) if after else None,
        "tokens_after_result_max": max(after) if after else None,
        "model_call_s_p50": _p50([c["seconds"] for c in calls]),
        "task_s_p50": _p50([r["seconds"] for r in runs]),
        "offload_ms_p50": _p50(offload), "offload_ms_max": round(max(offload), 1) if offload else None,
        "reader_ms_p50": _p50(readers),
    }


def _p50(values: list[float]) -> float | None:
    return round(statistics.median(values), 2) if values else None


def _table(result: dict[str, Any]) -> Table:
    table = Table(title=f"working memory, {result['model']}, results of "
                        f"{', '.join(f'{s:,}' for s in result['sizes'])} characters")
    table.add_column("measure")
    for arm in ARMS:
        table.add_column(arm, justify="right")
    table.add_column("no offload / offload", justify="right")
    rows = [
        ("tasks answered right", "correct"), ("turns that failed (window, loop)", "failed"),
        ("called a reading tool", "used_reader"), ("read back the detail", "read_back"), ("model calls", "model_calls"),
        ("input tokens per call (mean)", "tokens_per_call_mean"),
        ("tokens of the call after a result (mean)", "tokens_after_result_mean"),
        ("tokens of the call after a result (max)", "tokens_after_result_max"),
        ("model call s (p50)", "model_call_s_p50"), ("task s (p50)", "task_s_p50"),
        ("offload added per result ms (p50)", "offload_ms_p50"),
        ("offload added per result ms (max)", "offload_ms_max"),
        ("read/search call ms (p50)", "reader_ms_p50"),
    ]
    for label, key in rows:
        values = [result["arms"][arm]["summary"][key] for arm in ARMS]
        with_, without = values
        ratio = (f"{without / with_:.1f}x" if isinstance(with_, int | float) and with_
                 and isinstance(without, int | float) and "tokens" in key else "")
        table.add_row(label, *(("-" if v is None else str(v)) for v in values), ratio)
    return table


if __name__ == "__main__":
    sys.exit(main())
