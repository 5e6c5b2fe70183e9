"""The graph LangGraph Studio loads (`langgraph.json` → `./graph/studio.py:graph`).

It is compiled WITHOUT a store and a checkpointer: `langgraph dev` (and LangGraph Platform) inject
their own — the store being the `ChromaStore` factory `langgraph.json` names
(`./stores/chroma/store.py:make_store`), so memories written from Studio land in engram's Chroma data
folder and are readable through the server's `/store` endpoints.

The chat models come from environment variables (put them in `.env` or export them before
`langgraph dev`):

- `ENGRAM_MODEL` — the answering model. Either an `init_chat_model` spec, `provider:model`
  (`openai:gpt-4o-mini`; other providers such as `anthropic:claude-sonnet-4-5` need the
  `langchain` package and the provider's integration; `openai:<model>` with `OPENAI_BASE_URL`
  reaches Ollama, vLLM and other OpenAI-compatible servers), or a Python object
  path to a chat model instance or a zero-argument factory: `package.module:attr` or
  `path/to/file.py:attr` (how the tests plug in a fake). Unset, or set to a model that does not
  load (no API key), the graph still loads (its topology is browsable) and a turn fails with a
  message saying what to set.
- `ENGRAM_MEMORY_MODEL` — the memory model (summaries, extraction), same forms; unset, the
  offline summarizer and extractor run.

Per-run settings (`user_id`, thresholds, `incognito`...) are the `Context` fields, which Studio
shows as the assistant's context.

Run it, offline on the local model or with OpenAI:
    $ ENGRAM_MODEL=local:0.5b langgraph dev
    $ ENGRAM_MODEL=openai:gpt-4o-mini OPENAI_API_KEY=sk-... langgraph dev
"""

from __future__ import annotations

from engram.graph.builder import build_graph
from engram.graph.models import load_studio_model

MODEL_ENV = "ENGRAM_MODEL"
MEMORY_MODEL_ENV = "ENGRAM_MEMORY_MODEL"


graph = build_graph(
    load_studio_model(MODEL_ENV), memory_model=load_studio_model(MEMORY_MODEL_ENV)
).compile()
"""The Studio graph (no store, no checkpointer: the server provides them)."""
