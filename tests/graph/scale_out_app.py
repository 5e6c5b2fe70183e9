"""One app machine of the scale-out test (`test_scale_out.py`): the graph with engram's defaults,
its store on the Chroma server in `$ENGRAM_CHROMA_URL`, its checkpointer on the PostgreSQL in
`$ENGRAM_POSTGRES_URL`, its own local folder in `$ENGRAM_DATA_DIR`.

Reads one JSON request per line on stdin (`{"user": ..., "thread": ..., "text": ...}` for a turn,
`"end": true` to end the session) and answers one JSON line: the thread's messages and summary
after the turn, the prompt the chat model saw, and what a hybrid search of the user's memories
for the turn's text finds in each channel.
"""

from __future__ import annotations

import itertools
import json
import sys

from fakes import RecordingChatModel
from langchain_core.messages import HumanMessage

from engram.graph import Compaction, Context, compile_graph
from engram.stores.chroma.store import make_store
from engram.stores.lexical.hybrid import HybridSearchOp
from engram.stores.namespaces import memory_namespace


def main() -> None:
    name = sys.argv[1]
    model = RecordingChatModel(messages=(f"{name} reply {i}" for i in itertools.count()))
    store = make_store()
    graph = compile_graph(model, store=store)  # the checkpointer comes from $ENGRAM_POSTGRES_URL
    for line in sys.stdin:
        request = json.loads(line)
        config = {"configurable": {"thread_id": request["thread"]}}
        context = Context(
            user_id=request["user"],
            compaction=Compaction(message_threshold=4, keep_recent_messages=2),
        )
        calls = len(model.calls)
        if request.get("end"):
            graph.invoke({"end_session": True}, config, context=context)
        else:
            graph.invoke({"messages": [HumanMessage(request["text"])]}, config, context=context)
        values = graph.get_state(config).values
        namespace = memory_namespace(request["user"])
        text = request.get("text")
        hits = store.batch([HybridSearchOp(namespace, text, limit=5)])[0] if text else []
        answer = {
            "messages": [m.content for m in values.get("messages", [])],
            "summary": values.get("summary", ""),
            "evicted": values.get("evicted_message_count", 0),
            "prompt": "\n".join(str(m.content) for m in model.calls[-1])
            if len(model.calls) > calls
            else "",
            "hits": [
                {
                    "content": h.item.value.get("content"),
                    "similarity": h.similarity,
                    "lexical": h.lexical,
                }
                for h in hits
            ],
        }
        print(json.dumps(answer), flush=True)


if __name__ == "__main__":
    main()
