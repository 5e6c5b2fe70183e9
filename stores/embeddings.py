"""all-MiniLM-L6-v2 sentence embeddings run locally with onnxruntime, as a LangChain `Embeddings`.

The model is the ONNX export chromadb uses for its `DefaultEmbeddingFunction`; this module runs the
same files faster: each batch is padded to its longest text instead of to 256 word pieces, texts are
sorted by length so batches pad little, long texts are truncated instead of rejected, and repeated
texts come from a small LRU cache.

Model files are looked for, in order, in: the `model_dir` argument, `$ENGRAM_EMBEDDING_MODEL_DIR`,
chromadb's cache folder (`~/.cache/chroma/onnx_models/all-MiniLM-L6-v2/onnx/`), and finally
chromadb's own downloader fetches them into that cache folder (needs network).
"""

from __future__ import annotations

import asyncio
import logging
import os
import tarfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal, NamedTuple

import numpy as np
import numpy.typing as npt
from langchain_core.embeddings import Embeddings

from engram.stores.optimized_model import cached_session, default_cache_dir
from engram.stores.text import valid_unicode

logger = logging.getLogger(__name__)

MODEL_DIR_ENV = "ENGRAM_EMBEDDING_MODEL_DIR"
"""Environment variable naming a folder that holds `model.onnx` and `tokenizer.json`."""

_MODEL_FILE = "model.onnx"
_TOKENIZER_FILE = "tokenizer.json"
_MAX_POSITIONS = 512  # BERT position embeddings of all-MiniLM-L6-v2


class EmbeddingModelNotFoundError(FileNotFoundError, RuntimeError):
    """The all-MiniLM-L6-v2 ONNX files were found nowhere and could not be downloaded.

    Also a `RuntimeError`, so that servers which show only some error types' messages (the
    LangGraph API server) pass on what it says to do.
    """


class CacheInfo(NamedTuple):
    """Statistics of the `LocalEmbeddings` text cache, like `functools.lru_cache`'s."""

    hits: int
    misses: int
    maxsize: int
    currsize: int


class LocalEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 (384 dims) on onnxruntime, offline once the model files are present.

    Vectors equal chromadb's `DefaultEmbeddingFunction` (mean pooling over the attention mask,
    L2-normalised), computed with less padding. Texts longer than `max_length` word pieces are
    truncated, never rejected; a lone surrogate is read as U+FFFD. The model loads on the first embedding call; instances are safe
    to share between threads and the async methods never block the event loop.

    Args:
        model_dir: Folder holding `model.onnx` and `tokenizer.json` (or its parent holding
            `onnx/`). When given, nothing else is tried. When None, see `resolve_model_dir`.
        batch_size: Texts per model call.
        cache_size: How many distinct texts keep their vector in the LRU cache (0 disables it).
        max_length: Word pieces kept per text, special tokens included (sentence-transformers
            uses 256 for this model).
        model_cache: Folder of the optimised copy of the model that later processes start from
            without parsing and optimising `model.onnx` (`engram.stores.optimized_model`); None:
            `$ENGRAM_EMBEDDING_CACHE`, else `~/.cache/engram/onnx`; False: no copy, every
            process builds its session from `model.onnx`. The vectors are the same either way.
        prepack_weights: Let onnxruntime lay the weights out for its matrix kernels when the
            model loads, which makes each model call faster. False suits a process that embeds
            a few texts and ends (`engram memory search`): it starts sooner; its vectors differ
            from the prepacked ones by under 1e-5 (cosine 1.0).
        threads: Threads of each model call; None: one per core. One suits a process that
            embeds a short text or two and ends (`engram memory search`): a second thread only
            costs it CPU to start and to hand work over. The vectors are the same bit for bit.

    Example:
        >>> emb = LocalEmbeddings()
        >>> a, b, c = emb.embed_documents(["I love dark mode", "I prefer dark themes", "Tax forms"])
        >>> len(a), emb.dims
        (384, 384)
        >>> sum(x * y for x, y in zip(a, b)) > sum(x * y for x, y in zip(a, c))
        True
    """

    dims: int = 384

    def __init__(
        self,
        model_dir: str | Path | None = None,
        *,
        batch_size: int = 32,
        cache_size: int = 1024,
        max_length: int = 256,
        model_cache: str | Path | Literal[False] | None = None,
        prepack_weights: bool = True,
        threads: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if cache_size < 0:
            raise ValueError(f"cache_size must be >= 0 (0 disables the cache), got {cache_size}")
        if not 2 <= max_length <= _MAX_POSITIONS:
            raise ValueError(f"max_length must be between 2 and {_MAX_POSITIONS}, got {max_length}")
        if threads is not None and threads < 1:
            raise ValueError(f"threads must be >= 1 (None: one per core), got {threads}")
        self.model_dir = Path(model_dir) if model_dir is not None else None
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.max_length = max_length
        self.model_cache = default_cache_dir() if model_cache is None else model_cache or None
        if self.model_cache is not None:
            self.model_cache = Path(self.model_cache)
        self.prepack_weights = prepack_weights
        self.threads = threads
        self._model: _Model | None = None
        self._load_lock = threading.Lock()
        self._cache: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._cache_lock = threading.Lock()
        self._hits = 0
        self._misses = 0

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts; results are in input order, one 384-float list per text."""
        return [vector.tolist() for vector in self._embed(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed one text (queries and documents share the model)."""
        return self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        """Like `embed_documents`, run in a worker thread so the event loop keeps running."""
        return await asyncio.to_thread(self.embed_documents, texts)

    async def aembed_query(self, text: str) -> list[float]:
        """Like `embed_query`, run in a worker thread so the event loop keeps running."""
        return (await self.aembed_documents([text]))[0]

    def cache_info(self) -> CacheInfo:
        """Hits, misses, capacity and current size of the text cache."""
        with self._cache_lock:
            return CacheInfo(self._hits, self._misses, self.cache_size, len(self._cache))

    def cache_clear(self) -> None:
        """Forget every cached vector and reset the statistics."""
        with self._cache_lock:
            self._cache.clear()
            self._hits = self._misses = 0

    def _embed(self, texts: Sequence[str]) -> list[npt.NDArray[np.float32]]:
        texts = [valid_unicode(text) for text in texts]  # the tokenizer rejects lone surrogates
        found, missing = self._cache_lookup(texts)
        if missing:
            computed = self._load().encode(missing, self.batch_size)
            found.update(zip(missing, computed, strict=True))
            self._cache_store(missing, computed)
        return [found[text] for text in texts]

    def _cache_lookup(
        self, texts: Sequence[str]
    ) -> tuple[dict[str, npt.NDArray[np.float32]], list[str]]:
        found: dict[str, npt.NDArray[np.float32]] = {}
        missing: dict[str, None] = {}  # ordered set: duplicates are embedded once
        with self._cache_lock:
            for text in texts:
                if text in found or text in missing:
                    continue
                vector = self._cache.get(text)
                if vector is None:
                    missing[text] = None
                    self._misses += 1
                else:
                    self._cache.move_to_end(text)
                    found[text] = vector
                    self._hits += 1
        return found, list(missing)

    def _cache_store(self, texts: list[str], vectors: npt.NDArray[np.float32]) -> None:
        if not self.cache_size:
            return
        with self._cache_lock:
            for text, vector in zip(texts, vectors, strict=True):
                self._cache[text] = vector.copy()  # a row view would pin its whole batch
                self._cache.move_to_end(text)
            while len(self._cache) > self.cache_size:
                self._cache.popitem(last=False)

    def preload(self, texts: Sequence[str] = ()) -> threading.Thread:
        """Load the model and embed `texts` into the cache on a thread of its own, for a caller
        with other work to do before its first embedding (`engram memory search` opens Chroma
        meanwhile): building the ONNX session and running it release the GIL, so on a second
        core this costs the caller no time, and the model's first run (slower than the next
        ones) is done too. An embedding asked for meanwhile waits for the load; if the load
        failed, it loads again and raises there. The model folder is found, and onnxruntime and
        tokenizers are imported, on the calling thread: no import races the caller's own.
        Returns the started thread.

        Raises:
            EmbeddingModelNotFoundError: The model files are nowhere (see `resolve_model_dir`).
        """
        folder = resolve_model_dir(self.model_dir)
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401

        thread = threading.Thread(
            target=self._try_preload, args=(folder, list(texts)), name="engram-model-preload"
        )
        thread.start()
        return thread

    def _try_preload(self, folder: Path, texts: list[str]) -> None:
        try:
            self._load(folder)
            if texts:
                self._embed(texts)
        except Exception as exc:  # noqa: BLE001 - the caller's first embedding raises it again
            logger.debug("preloading the embedding model failed: %s", exc)

    def _load(self, folder: Path | None = None) -> _Model:
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = _Model.load(
                        folder or resolve_model_dir(self.model_dir),
                        self.max_length,
                        self.model_cache,
                        partial(_session_options, self.prepack_weights, self.threads),
                    )
        return self._model


def resolve_model_dir(model_dir: str | Path | None = None) -> Path:
    """Find the folder holding all-MiniLM-L6-v2's `model.onnx` and `tokenizer.json`.

    Looks, in order, at `model_dir` (when given, only there), `$ENGRAM_EMBEDDING_MODEL_DIR`,
    chromadb's cache folder, and finally lets chromadb's own downloader fetch the files into
    that cache folder.

    Raises:
        EmbeddingModelNotFoundError: No complete model folder anywhere and no download possible;
            the message lists every place looked at and how to fix it.
    """
    if model_dir is not None:
        found = _model_files_in(Path(model_dir))
        if found is None:
            raise EmbeddingModelNotFoundError(
                _not_found_message([f"model_dir argument: {Path(model_dir).resolve()}"])
            )
        return found
    looked: list[str] = []
    env_dir = os.environ.get(MODEL_DIR_ENV)
    if env_dir:
        found = _model_files_in(Path(env_dir))
        if found is not None:
            return found
        logger.warning("$%s=%s holds no model files, trying chromadb's", MODEL_DIR_ENV, env_dir)
        looked.append(f"${MODEL_DIR_ENV}: {Path(env_dir).resolve()}")
    else:
        looked.append(f"${MODEL_DIR_ENV}: not set")
    return _from_chromadb(looked)


@dataclass(frozen=True)
class _Model:
    """A loaded tokenizer + ONNX session; stateless after loading, so shareable by threads."""

    session: Any  # onnxruntime.InferenceSession
    tokenizer: Any  # tokenizers.Tokenizer
    input_names: frozenset[str]

    @classmethod
    def load(
        cls,
        folder: Path,
        max_length: int,
        cache_dir: Path | None,
        make_options: Callable[[], Any],
    ) -> _Model:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(folder / _TOKENIZER_FILE))
        tokenizer.no_padding()  # padding is done per batch, to the batch's longest text
        tokenizer.enable_truncation(max_length=max_length)
        session = cached_session(folder / _MODEL_FILE, make_options, cache_dir)
        logger.info("loaded all-MiniLM-L6-v2 from %s", folder)
        return cls(session, tokenizer, frozenset(i.name for i in session.get_inputs()))

    def encode(self, texts: list[str], batch_size: int) -> npt.NDArray[np.float32]:
        """Mean-pooled, L2-normalised vectors of `texts`, in input order."""
        encodings = self.tokenizer.encode_batch(texts)
        lengths = np.array([len(e.ids) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        out = np.empty((len(texts), LocalEmbeddings.dims), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            ids = np.zeros((len(rows), int(lengths[rows].max())), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, index in enumerate(rows):
                ids[row, : lengths[index]] = encodings[index].ids
                mask[row, : lengths[index]] = 1
            out[rows] = self._forward(ids, mask)
        return out

    def _forward(
        self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.float32]:
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(
            ["last_hidden_state"], {k: v for k, v in feeds.items() if k in self.input_names}
        )[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.where(norms == 0, 1e-12, norms)


def _session_options(prepack: bool, threads: int | None) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.intra_op_num_threads = threads or os.cpu_count() or 1  # one op at a time
    options.inter_op_num_threads = 1
    # idle worker threads sleep instead of spinning: on small shared machines spinning
    # threads steal the cores that the next batch (or the event loop) needs
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    if not prepack:
        options.add_session_config_entry("session.disable_prepacking", "1")
    return options


def _model_files_in(folder: Path) -> Path | None:
    for candidate in (folder, folder / "onnx"):
        if (candidate / _MODEL_FILE).is_file() and (candidate / _TOKENIZER_FILE).is_file():
            return candidate
    return None


def _from_chromadb(looked: list[str]) -> Path:
    """chromadb's cache folder, downloading into it with chromadb's own code when needed."""
    import httpx
    from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2

    cache_dir = Path(ONNXMiniLM_L6_V2.DOWNLOAD_PATH) / ONNXMiniLM_L6_V2.EXTRACTED_FOLDER_NAME
    found = _model_files_in(cache_dir)
    if found is not None:
        return found
    looked.append(f"chromadb's cache folder: {cache_dir}")
    logger.info("downloading all-MiniLM-L6-v2 with chromadb into %s", cache_dir)
    try:
        ONNXMiniLM_L6_V2()._download_model_if_not_exists()
    except (httpx.HTTPError, OSError, ValueError, tarfile.TarError) as exc:
        looked.append(f"chromadb's download from {ONNXMiniLM_L6_V2.MODEL_DOWNLOAD_URL}: {exc!r}")
        raise EmbeddingModelNotFoundError(_not_found_message(looked)) from exc
    found = _model_files_in(cache_dir)
    if found is None:
        looked.append(f"chromadb's download: finished but {cache_dir} still lacks the files")
        raise EmbeddingModelNotFoundError(_not_found_message(looked))
    return found


def _not_found_message(looked: list[str]) -> str:
    places = "\n".join(f"  - {place}" for place in looked)
    return (
        f"all-MiniLM-L6-v2 ONNX files ({_MODEL_FILE}, {_TOKENIZER_FILE}) not found. Looked in:\n"
        f"{places}\n"
        f"Fix: set {MODEL_DIR_ENV} to a folder holding them (offline copies live in "
        f"../shared/models/all-MiniLM-L6-v2/onnx), pass LocalEmbeddings(model_dir=...), "
        f"or run once with network so chromadb downloads them into its cache folder."
    )
