"""The systems that answer a question: engram and the baselines, on the same model and prompt.

- `engram`: the question opens a new thread of the history's user, after every session went
  through the memory graph; `start` recalls memories and archived messages as on any turn, and
  `respond` answers with them.
- `retrieval`: the same graph on a store that holds only the archived messages of every session
  (no extraction, no summaries): what engram's recall alone brings.
- `full-context`: every session in the prompt; when the conversation does not fit in the
  answering model's window (minus engram's reserve for the reply), its oldest messages are left
  out and counted.
- `no-memory`: the question alone.

The instructions (`Protocol.instructions`) open the system message of every system; the context
follows them in the same message, where engram puts its memory block. Prompt tokens are counted
with the answering model's tokenizer, as engram budgets them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage
from langgraph.graph.state import CompiledStateGraph
from langgraph.store.base import BaseStore

from engram.evals.locomo.graph import RECALL_TIMEOUT_MS
from engram.evals.qa.dataset import QAHistory, QAQuestion
from engram.evals.qa.protocol import Protocol
from engram.graph.models import context_window_for, model_name_of
from engram.nodes.context import Context, Extraction, Recall
from engram.nodes.episodes import episode_ops
from engram.nodes.prompts import (
    FULL_CONTEXT_BLOCK_TEMPLATE,
    FULL_CONTEXT_SESSION_HEADING,
    FULL_CONTEXT_TRUNCATED_NOTE,
)
from engram.nodes.start import Budget
from engram.nodes.text.tokens import TokenCounter, counter_for_model, message_content
from engram.nodes.text.transcript import render_message

SYSTEMS = ("engram", "retrieval", "full-context", "no-memory")
"""Every system a run can answer with, in report order."""
BASELINES = SYSTEMS[1:]
"""The systems `--baselines` chooses from."""

NO_CONSOLIDATION = 1_000_000
"""`Context.extraction.every_turns` of a question's thread: asking writes no memory."""


@dataclass(frozen=True)
class Answer:
    """One system's answer to one question, and what it was given."""

    text: str
    context: str
    """What the model got besides the instructions and the question (engram's memory block;
    for the full context, a line saying how much of the conversation it got)."""
    prompt_tokens: int
    latency_ms: float
    left_out_messages: int = 0
    """Full context: messages of the conversation that did not fit in the window."""
    left_out_tokens: int = 0


async def aanswer_in_thread(
    graph: CompiledStateGraph, history: QAHistory, question: QAQuestion, protocol: Protocol,
    system: str,
) -> Answer:
    """Ask `question` in a new thread of the history's user on an engram graph (`engram`,
    `retrieval`): the latency is the whole turn, recall included."""
    ctx = Context(
        user_id=history.user_id,
        system_prompt=protocol.instructions(history, question),
        recall=Recall(timeout_ms=RECALL_TIMEOUT_MS),
        extraction=Extraction(every_turns=NO_CONSOLIDATION),
        memory_work="inline",
    )
    config = {"configurable": {"thread_id": f"{history.id}-{system}-question-{question.id}"}}
    began = time.perf_counter()
    out = await graph.ainvoke({"messages": [HumanMessage(question.text)]}, config, context=ctx)
    latency = (time.perf_counter() - began) * 1000.0
    built = out["built_context"]
    return Answer(
        text=message_content(out["messages"][-1]).strip(),
        context=built["memory_block"],
        prompt_tokens=built["token_stats"]["total"],
        latency_ms=latency,
    )


async def aanswer_without_memory(
    model: BaseChatModel, history: QAHistory, question: QAQuestion, protocol: Protocol
) -> Answer:
    """The `no-memory` baseline: the instructions and the question, nothing else."""
    messages = [SystemMessage(protocol.instructions(history, question)), HumanMessage(question.text)]
    return await _ask(model, messages, context="")


async def aanswer_with_full_context(
    model: BaseChatModel, transcript: FullTranscript, question: QAQuestion, protocol: Protocol
) -> Answer:
    """The `full-context` baseline: the whole conversation after the instructions, its oldest
    messages left out when it does not fit in the model's window."""
    instructions = protocol.instructions(transcript.history, question)
    asked = HumanMessage(question.text)
    empty = SystemMessage(f"{instructions}\n\n{FULL_CONTEXT_BLOCK_TEMPLATE.format(transcript='')}")
    room = transcript.available - transcript.counter.count_messages([empty, asked])
    text, left_out, left_out_tokens = transcript.within(room)
    system = SystemMessage(f"{instructions}\n\n{FULL_CONTEXT_BLOCK_TEMPLATE.format(transcript=text)}")
    shown = len(transcript.lines) - left_out
    note = f"the whole conversation: {shown} messages" + (
        f" ({left_out} oldest left out, {left_out_tokens} tokens: the window is too small)"
        if left_out else ""
    )
    answer = await _ask(model, [system, asked], context=note, counter=transcript.counter)
    return Answer(
        answer.text, answer.context, answer.prompt_tokens, answer.latency_ms, left_out,
        left_out_tokens,
    )


async def archive_sessions(store: BaseStore, history: QAHistory) -> None:
    """Write every session's messages to `store` as archived messages, as a session end does
    (the `retrieval` baseline's store: no extraction, no summaries)."""
    for number, session in enumerate(history.sessions, start=1):
        await store.abatch(episode_ops(
            list(session.messages), user_id=history.user_id,
            thread_id=f"{history.id}-session-{number}",
        ))


class FullTranscript:
    """A history's sessions as the full-context baseline shows them, for one answering model:
    a heading per session (number and date), then `speaker: text` lines."""

    def __init__(self, history: QAHistory, model: BaseChatModel) -> None:
        self.history = history
        self.counter: TokenCounter = counter_for_model(model_name_of(model))
        self.available = Budget.for_window(context_window_for(model)).available
        self.headings = [
            FULL_CONTEXT_SESSION_HEADING.format(number=number, date=session.date)
            for number, session in enumerate(history.sessions, start=1)
        ]
        self.lines: list[tuple[int, str, int]] = [
            (number, line, self.counter.count_text(line) + 1)
            for number, session in enumerate(history.sessions)
            for line in (render_message(m, with_time=False) for m in session.messages)
        ]
        """(session index, line, tokens with its line break) of every message, in order."""

    def within(self, room: int) -> tuple[str, int, int]:
        """The transcript in at most about `room` tokens: the newest messages that fit, a note
        first when some are left out; with the count of messages and tokens left out."""
        costs = {n: self.counter.count_text(h) + 2 for n, h in enumerate(self.headings)}
        total = sum(cost for *_, cost in self.lines) + sum(
            costs[n] for n in {n for n, *_ in self.lines}
        )
        if total <= room:
            return self._render(self.lines), 0, 0
        note = FULL_CONTEXT_TRUNCATED_NOTE.format(count=len(self.lines))
        used = self.counter.count_text(note) + 2
        kept: list[tuple[int, str, int]] = []
        for entry in reversed(self.lines):
            cost = entry[2] + (costs[entry[0]] if not kept or kept[-1][0] != entry[0] else 0)
            if used + cost > room:
                break
            kept.append(entry)
            used += cost
        kept.reverse()
        left_out = len(self.lines) - len(kept)
        text = self._render(kept, FULL_CONTEXT_TRUNCATED_NOTE.format(count=left_out))
        return text, left_out, max(0, total - used)

    def _render(self, lines: list[tuple[int, str, int]], note: str = "") -> str:
        parts = [note] if note else []
        session = None
        for number, line, _ in lines:
            if number != session:
                parts.append(("\n" if parts else "") + self.headings[number])
                session = number
            parts.append(line)
        return "\n".join(parts)


async def _ask(
    model: BaseChatModel, messages: list[BaseMessage], *, context: str,
    counter: TokenCounter | None = None,
) -> Answer:
    counter = counter or counter_for_model(model_name_of(model))
    began = time.perf_counter()
    reply = await model.ainvoke(messages)
    latency = (time.perf_counter() - began) * 1000.0
    return Answer(message_content(reply).strip(), context, counter.count_messages(messages), latency)
