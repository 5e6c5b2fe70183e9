"""An app process for the background-work crash test, on the data folder $ENGRAM_DATA_DIR
(embedded ChromaStore and SQLite checkpointer, one thread):

    python tests/nodes/work/background_process.py start   # two turns; the second's consolidation job is
                                                # stuck in a memory model that never answers;
                                                # prints one JSON line, then waits to be killed
    python tests/nodes/work/background_process.py resume  # the next turn (resumes the abandoned job with a
                                                # model that answers), then one more (applies it);
                                                # prints what the thread and the store hold
    python tests/nodes/work/background_process.py sweep   # no turn: `resume_memory_work(graph)` at
                                                # start-up; prints the same
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from pathlib import Path

import chromadb
from fakes import GatedMemoryModel, NGramEmbeddings, RecordingChatModel
from langchain_core.messages import HumanMessage

from engram.graph import Compaction, Context, Extraction, compile_graph, resume_memory_work
from engram.graph.checkpoint import ThreadedSqliteSaver
from engram.nodes.work.background import wait_for_memory_work
from engram.stores.chroma.store import ChromaStore
from engram.stores.memory.jobs import job_namespace
from engram.stores.memory.long_term import LongTermMemory

CONFIG = {"configurable": {"thread_id": "crash-thread"}}
CONTEXT = Context(
    user_id="crash",
    extraction=Extraction(every_turns=2),
    compaction=Compaction(message_threshold=1000, token_threshold=None),
)
TEA = {"content": "I always drink green tea in the morning.", "category": "preference",
       "importance": 0.9}
REVIEWED_TEA = {"reviews": [{"n": 1, "keep": True, "category": "preference"}]}
"""The memory model's review of the one candidate the rules propose for the tea message (kept
in the user's words, `TEA["content"]`)."""


def main(mode: str) -> None:
    folder = Path(os.environ["ENGRAM_DATA_DIR"])
    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    store = ChromaStore(
        chromadb.PersistentClient(path=str(folder / "chroma")), collection="crash", index=index
    )
    saver = ThreadedSqliteSaver.from_path(folder / "checkpoints.sqlite")
    memory_model = GatedMemoryModel(structured_responses=[REVIEWED_TEA], wait=3600)
    model = RecordingChatModel(messages=(f"reply {i}" for i in itertools.count()))
    graph = compile_graph(model, memory_model=memory_model, store=store, checkpointer=saver)

    def turn(text: str) -> dict:
        return graph.invoke({"messages": [HumanMessage(text)]}, CONFIG, context=CONTEXT)

    if mode == "start":
        turn("Hello there.")
        out = turn("I always drink green tea in the morning.")
        entered = memory_model.entered.wait(60)
        print(json.dumps({"jobs": [j["kind"] for j in out["memory_jobs"]],
                          "job_ids": [j["id"] for j in out["memory_jobs"]],
                          "model_entered": entered}), flush=True)
        while True:
            time.sleep(1)
    memory_model.gate.set()
    if mode == "sweep":
        resumed = resume_memory_work(graph)
        out = graph.get_state(CONFIG).values
    else:
        resumed = []
        turn("What do I drink?")  # `start` claims the killed process's job and runs it here
        wait_for_memory_work(timeout=120)
        out = turn("Anything else?")  # applies the job's result
    memories = [s.memory.content for s in LongTermMemory(store).search("crash", "green tea")]
    print(json.dumps({
        "memories": memories,
        "consolidation": out.get("consolidation"),
        "jobs_in_state": [j["id"] for j in out.get("memory_jobs", [])],
        "jobs_in_store": [i.key for i in store.search(job_namespace("crash"), limit=100)],
        "messages": [m.content for m in out["messages"]],
        "recalled": out["built_context"]["memory_block"],
        "resumed_threads": resumed,
    }), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
