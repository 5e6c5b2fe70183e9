"""The graph LangGraph Studio loads (`langgraph.json` → `./graph/studio.py:graph`).

It is compiled WITHOUT a store and a checkpointer: `langgraph dev` (and LangGraph Platform) inject
their own — the store being the `ChromaStore` factory `langgraph.json` names
(`./stores/chroma.py:make_store`), so memories written from Studio land in engram's Chroma data
folder and are readable through the server's `/store` endpoints.

The chat models come from environment variables (put them in `.env` or export them before
`langgraph dev`):

- `ENGRAM_MODEL` — the answering model. Either an `init_chat_model` spec, `provider:model`
  (`openai:gpt-4o-mini`; other providers such as `anthropic:claude-sonnet-4-5` need the
  `langchain` package and the provider's integration; `openai:<model>` with `OPENAI_BASE_URL`
  reaches Ollama, vLLM and other OpenAI-compatible servers), or a Python object
  path to a chat model instance or a zero-argument factory: `package.module:attr` or
  `path/to/file.py:attr` (how the tests plug in a fake). Unset, the graph still loads (its
  topology is browsable) and a turn fails with a message saying to set it.
- `ENGRAM_MEMORY_MODEL` — the memory model (summaries, extraction), same forms; unset, the
  offline summarizer and extractor run.

Per-run settings (`user_id`, thresholds, `incognito`...) are the `Context` fields, which Studio
shows as the assistant's context.

Run it:
    $ ENGRAM_MODEL=openai:gpt-4o-mini langgraph dev
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from pathlib import Path

from langchain_core.language_models import BaseChatModel

from engram.graph.builder import build_graph

MODEL_ENV = "ENGRAM_MODEL"
MEMORY_MODEL_ENV = "ENGRAM_MEMORY_MODEL"


def load_chat_model(spec: str | None) -> BaseChatModel | None:
    """The chat model an `ENGRAM_MODEL`-style spec names (see the module docstring), or None.

    Raises:
        ValueError: The object path names something that is not a chat model.
    """
    if not spec:
        return None
    source, _, attribute = spec.rpartition(":")
    if source.endswith(".py") or "." in source:
        found = getattr(_load_module(source), attribute)
        model = found if isinstance(found, BaseChatModel) else found()
        if not isinstance(model, BaseChatModel):
            raise ValueError(
                f"{spec!r} is not a chat model (got {type(model).__name__}): point it "
                "at a BaseChatModel instance or a factory returning one"
            )
        return model
    return _init_chat_model(spec)


def _init_chat_model(spec: str) -> BaseChatModel:
    """`init_chat_model` when the `langchain` package is installed; else OpenAI (and
    OpenAI-compatible servers through `OPENAI_BASE_URL`) with the bundled langchain-openai."""
    try:
        from langchain.chat_models import init_chat_model
    except ImportError:
        provider, _, name = spec.rpartition(":")
        if provider not in ("", "openai"):
            raise ValueError(
                f"{spec!r} needs LangChain's init_chat_model: pip install langchain "
                f"langchain-{provider}, or use openai:<model> with OPENAI_BASE_URL for an "
                "OpenAI-compatible server"
            ) from None
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=name)
    return init_chat_model(spec)


def _load_module(source: str):
    if not source.endswith(".py"):
        return importlib.import_module(source)
    path = Path(source).resolve()
    name = f"engram_studio_{path.stem}"
    module_spec = importlib.util.spec_from_file_location(name, path)
    if module_spec is None or module_spec.loader is None:
        raise ValueError(f"cannot load {source}: no such Python file")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    module_spec.loader.exec_module(module)
    return module


graph = build_graph(
    load_chat_model(os.environ.get(MODEL_ENV)),
    memory_model=load_chat_model(os.environ.get(MEMORY_MODEL_ENV)),
).compile()
"""The Studio graph (no store, no checkpointer: the server provides them)."""
