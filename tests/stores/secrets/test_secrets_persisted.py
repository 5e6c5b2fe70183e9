"""End to end: secrets said in a dialog reach no persisted place beyond the thread's own messages.

A dialog made of the whole secrets corpus runs through the compiled graph on an embedded
`ChromaStore` until it has compacted and consolidated several times; then every place engram
persisted something is read back: the running summary and the recorded failures in the
checkpointed state, the episodes and memories in the store, every file of the data folder as raw
bytes (Chroma's SQLite and vector files, the BM25 index) and an eval report. The thread's own
messages keep what the user wrote.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import chromadb
import pytest
from fakes import NGramEmbeddings, RecordingChatModel, StructuredFakeChatModel
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from secrets_corpus import WINDOW, Case, leaked, load

from engram.evals.report import build_report, write_report
from engram.graph import Compaction, Context, Extraction, compile_graph
from engram.stores.chroma.store import ChromaStore
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.secrets import REDACTED

USER = "dana"
CASES, _ = load()
# Statements worth remembering that carry a secret: their memories must keep the statement only.
STATEMENTS = [
    Case("I deploy staging every Friday with the token ghp_Q2w3E4r5T6y7U8i9O0p1A2s3D4f5G6h7J8k9",
         ["ghp_Q2w3E4r5T6y7U8i9O0p1A2s3D4f5G6h7J8k9"]),
    Case("I prefer Postgres 16 for the billing service, DSN postgres://billing:Fl4mingo-99@db7/bill",
         ["Fl4mingo-99"]),
    Case("I always back up to eu-west-1 with AKIA2E0A8F3B4C5D6E7F / "
         "Rk8mZt2Qx7Lp4Vn9Bw3Jc6Hd1Fy5Gs0Ka8Ue2Wo4", ["AKIA2E0A8F3B4C5D6E7F",
                                                      "Rk8mZt2Qx7Lp4Vn9Bw3Jc6Hd1Fy5Gs0Ka8Ue2Wo4"]),
    Case("我在上海工作，公司 VPN 的密码是 Vpn#2026sh", ["Vpn#2026sh"]),
]
DIALOG = [*CASES, *STATEMENTS]
# What the memory model of the last test restates although it was never shown it.
MADE_UP = ["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "4539 1488 0343 6467"]
ALL_SECRETS = list(dict.fromkeys([s for case in DIALOG for s in case.secrets] + MADE_UP))
RAW_MIN_LENGTH = 8
"""Raw file bytes are searched for secrets this long or longer (a 4-digit PIN occurs by chance)."""


def _leaks(text: str, secrets: list[str] = ALL_SECRETS) -> list[str]:
    return [s for s in secrets if leaked(s, text)]


def _context() -> Context:
    return Context(
        user_id=USER,
        compaction=Compaction(message_threshold=10, keep_recent_messages=4),
        extraction=Extraction(every_turns=5),
    )


def _run(graph: Any, thread: str) -> dict:
    config = {"configurable": {"thread_id": thread}}
    for case in DIALOG:
        graph.invoke({"messages": [HumanMessage(case.text)]}, config, context=_context())
    graph.invoke({"end_session": True}, config, context=_context())
    return graph.get_state(config).values


def _store(folder: Path) -> ChromaStore:
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    return ChromaStore(chromadb.PersistentClient(str(folder)), collection="engram", index=index)


def _persisted_texts(store: ChromaStore, state: dict) -> dict[str, str]:
    """Every text engram persisted beyond the thread's messages, by where it is."""
    api = LongTermMemory(store)
    memories = api.list(USER, include_superseded=True, include_forgotten=True)
    episodes = store.search(LongTermMemory.episode_namespace(USER), limit=10_000)
    return {
        "summary": state["summary"],
        "failures": repr(state.get("failures", [])),
        "memories": "\n".join(f"{m.content} {m.structured_data}" for m in memories),
        "episodes": "\n".join(f"{e.value['content']}\n{e.value['context']}" for e in episodes),
    }


def _raw_leaks(folder: Path) -> dict[str, list[str]]:
    """Secrets found in the raw bytes of any file under `folder`, by file.

    A secret counts as found when the file holds it whole or one of its 10-character pieces
    taken end to end (so any 19 characters of it), which keeps scanning megabytes fast.
    """
    pieces = {
        s: {s[i : i + WINDOW] for i in range(0, len(s) - WINDOW + 1, WINDOW)} | {s[-WINDOW:]}
        for s in ALL_SECRETS
        if len(s) >= RAW_MIN_LENGTH
    }
    found = {}
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", errors="replace")
            if hits := [s for s, parts in pieces.items() if any(p in text for p in parts)]:
                found[str(path.relative_to(folder))] = hits
    return found


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, ChromaStore, Path]:
    folder = tmp_path_factory.mktemp("offline") / "chroma"
    store = _store(folder)
    model = RecordingChatModel(messages=(f"reply {i}: noted." for i in itertools.count()))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    state = _run(graph, "secrets-offline")
    yield state, store, folder
    store.close()


def test_an_offline_dialog_persists_no_secret_anywhere(offline_run) -> None:
    state, store, folder = offline_run
    texts = _persisted_texts(store, state)

    # something was persisted everywhere, and secrets were redacted, not just absent
    assert state["summary_info"]["mode"] == "offline" and state["evicted_message_count"] > 60
    assert REDACTED in texts["summary"] and REDACTED in texts["episodes"]
    assert REDACTED in texts["memories"]
    assert (folder / "lexical.sqlite3").is_file() and (folder / "chroma.sqlite3").is_file()

    assert {where: _leaks(text) for where, text in texts.items()} == {
        "summary": [], "failures": [], "memories": [], "episodes": []}
    assert _raw_leaks(folder) == {}
    raw = (folder / "chroma.sqlite3").read_bytes().decode("utf-8", errors="replace")
    assert f"every Friday with the token {REDACTED}" in raw  # the scan reads stored text

    # the thread's own messages (the kept tail) still say what the user wrote
    assert any(_leaks(m.text) for m in state["messages"])


def test_an_eval_report_quoting_the_dialog_holds_no_secret(offline_run, tmp_path) -> None:
    state, _, _ = offline_run
    quoted = [case.text for case in DIALOG]  # the worst case: a report quoting every message
    report = build_report(kind="suite", mode="offline", metrics={"recall_at_5": 1.0}, targets=[],
                          embeddings=NGramEmbeddings(),
                          dialogs=[{"id": "secrets", "messages": quoted,
                                    "summary": state["summary"]}])
    json_path, html_path = write_report(report, tmp_path / "report")
    for path in (json_path, html_path):
        text = path.read_text(encoding="utf-8")
        assert _leaks(text) == [], path.name
    assert REDACTED in json_path.read_text(encoding="utf-8")


def test_a_model_written_summary_and_memories_are_redacted(tmp_path) -> None:
    """The memory model never sees a secret, and what it writes is redacted even if it makes
    one up (here it restates the AWS pair and a card number it was not shown)."""
    folder = tmp_path / "chroma"
    store = _store(folder)
    leaky = f"{MADE_UP[0]} / {MADE_UP[1]}, card {MADE_UP[2]}"
    memory_model = StructuredFakeChatModel(
        messages=itertools.repeat(f"The user shared credentials: {leaky}."),
        structured_responses=[
            {"memories": [{"category": "fact", "content": f"The user's AWS keys are {leaky}",
                           "importance": 0.9},
                          {"category": "preference", "content": "The user prefers Postgres 16",
                           "importance": 0.9}]},
            *([{"memories": []}] * 100),
        ],
    )
    model = RecordingChatModel(messages=(f"reply {i}: noted." for i in itertools.count()))
    graph = compile_graph(model, memory_model=memory_model, store=store, checkpointer=InMemorySaver())
    state = _run(graph, "secrets-llm")

    # what the memory model was shown: no secret of the dialog
    seen = [m.text for call in memory_model.calls for m in call]
    seen += [m.text for _, call in memory_model.structured_calls for m in call]
    assert seen and _leaks("\n".join(seen), [s for s in ALL_SECRETS if len(s) >= RAW_MIN_LENGTH]) == []

    # what it wrote, as persisted
    assert state["summary_info"]["mode"] == "llm" and REDACTED in state["summary"]
    texts = _persisted_texts(store, state)
    assert "Postgres 16" in texts["memories"]
    assert {where: _leaks(text) for where, text in texts.items()} == {
        "summary": [], "failures": [], "memories": [], "episodes": []}
    store.close()
    assert _raw_leaks(folder) == {}

