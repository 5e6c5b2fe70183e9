"""LocalEmbeddings: same vectors as chromadb's DefaultEmbeddingFunction, truncation, batching,
cache, async, thread safety and the model-file lookup. Runs offline on the shared model files."""

from __future__ import annotations

import asyncio
import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from chromadb.utils.embedding_functions import DefaultEmbeddingFunction
from chromadb.utils.embedding_functions.onnx_mini_lm_l6_v2 import ONNXMiniLM_L6_V2
from tokenizers import Tokenizer

from engram.stores import embeddings as emb_module
from engram.stores.embeddings import (
    MODEL_DIR_ENV,
    EmbeddingModelNotFoundError,
    LocalEmbeddings,
    resolve_model_dir,
)

TEXTS = [
    "I prefer dark mode in every editor I use.",
    "我喜欢在编辑器里使用深色模式。",
    "東京の天気は明日晴れるでしょう",
    "Party time 🎉🚀 see you there 🙂",
    "",
    "a",
    "Mixed 中文 and English with numbers 12345 and symbols #$%&",
    " ".join(["The meeting about the quarterly budget moved to Thursday afternoon."] * 18),
]


def _cosine(a: list[float], b: list[float]) -> float:
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(va @ vb / (np.linalg.norm(va) * np.linalg.norm(vb)))


@pytest.fixture(scope="module")
def emb() -> LocalEmbeddings:
    return LocalEmbeddings(cache_size=0)


@pytest.fixture
def no_download(monkeypatch: pytest.MonkeyPatch) -> None:
    """chromadb's downloader fails as it would offline: no test ever reaches the network."""

    def refuse(self: ONNXMiniLM_L6_V2, url: str, fname: str, chunk_size: int = 1024) -> None:
        raise httpx.ConnectError(f"network disabled in tests: {url}")

    monkeypatch.setattr(ONNXMiniLM_L6_V2, "_download", refuse)


@pytest.fixture
def chroma_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_download: None) -> Path:
    """chromadb's cache folder, in tmp, holding links to the shared model files."""
    cache = tmp_path / "chroma-cache"
    (cache / "onnx").mkdir(parents=True)
    for source in resolve_model_dir().iterdir():
        (cache / "onnx" / source.name).symlink_to(source)
    monkeypatch.setattr(ONNXMiniLM_L6_V2, "DOWNLOAD_PATH", cache)
    return cache / "onnx"


def test_vectors_equal_chromadb_default(emb: LocalEmbeddings, chroma_cache: Path) -> None:
    ours = emb.embed_documents(TEXTS)
    reference = DefaultEmbeddingFunction()(TEXTS)
    for text, a, b in zip(TEXTS, ours, reference, strict=True):
        assert len(a) == emb.dims == 384
        assert _cosine(a, list(b)) >= 0.9999, text
        assert np.linalg.norm(a) == pytest.approx(1.0, abs=1e-5)


def test_long_text_is_truncated_to_256_word_pieces(emb: LocalEmbeddings) -> None:
    vocabulary = "the cat dog sat on a red blue house tree water book ran far green".split()
    tokenizer = Tokenizer.from_file(str(resolve_model_dir() / "tokenizer.json"))
    tokenizer.no_padding()  # the file pads to 128
    assert all(len(tokenizer.encode(w, add_special_tokens=False).ids) == 1 for w in vocabulary)
    rng = np.random.default_rng(7)
    words = [vocabulary[i] for i in rng.integers(len(vocabulary), size=5000)]

    long_vector, truncated, shorter = emb.embed_documents(
        [" ".join(words), " ".join(words[:254]), " ".join(words[:250])]  # 254 + [CLS] + [SEP]
    )

    assert np.abs(np.subtract(long_vector, truncated)).max() < 1e-6
    assert np.abs(np.subtract(long_vector, shorter)).max() > 1e-4  # the check can tell them apart


def test_batches_equal_one_by_one() -> None:
    emb = LocalEmbeddings(batch_size=3, cache_size=0)
    texts = TEXTS + [f"note number {i}: " + "budget " * (i * 7) for i in range(10)]

    batched = emb.embed_documents(texts)
    single = [emb.embed_query(t) for t in texts]

    assert len(batched) == len(texts)
    for text, a, b in zip(texts, batched, single, strict=True):
        assert np.allclose(a, b, atol=1e-5), text


def test_one_thread_gives_the_same_vectors_bit_for_bit() -> None:
    """What `engram memory search` and `add` use: each model call on one thread."""
    one = LocalEmbeddings(cache_size=0, threads=1, prepack_weights=False)
    every_core = LocalEmbeddings(cache_size=0, prepack_weights=False)
    texts = [*TEXTS, "budget " * 200]

    assert one.embed_documents(texts) == every_core.embed_documents(texts)
    assert one._load().session.get_session_options().intra_op_num_threads == 1


def test_preload_embeds_on_another_thread_into_the_cache() -> None:
    """What `engram memory search` does while Chroma loads: the query's vector is ready, and
    the same as computed on the caller's thread."""
    preloaded = LocalEmbeddings(threads=1, prepack_weights=False)
    loaded_here = LocalEmbeddings(threads=1, prepack_weights=False)
    preloaded.preload(["which editor theme?"]).join()

    assert preloaded.cache_info().currsize == 1
    assert preloaded.embed_query("which editor theme?") == loaded_here.embed_query(
        "which editor theme?"
    )
    assert preloaded.cache_info().hits == 1  # nothing was embedded on this thread


def test_a_failed_preload_is_raised_by_the_first_embedding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "model"
    broken.mkdir()
    (broken / "tokenizer.json").symlink_to(resolve_model_dir() / "tokenizer.json")
    (broken / "model.onnx").write_bytes(b"not an onnx model")
    thread_errors: list[Any] = []
    monkeypatch.setattr(threading, "excepthook", thread_errors.append)
    emb = LocalEmbeddings(broken, model_cache=False)

    emb.preload(["hello"]).join()  # fails quietly on its thread...
    with pytest.raises(Exception, match="(?i)protobuf|onnx|model"):
        emb.embed_query("hello")  # ...and loudly where the vector is wanted
    assert thread_errors == []


def test_preload_without_model_files_raises_at_once(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelNotFoundError, match=str(tmp_path)):
        LocalEmbeddings(tmp_path).preload(["hello"])


def test_similar_texts_score_higher_than_unrelated(emb: LocalEmbeddings) -> None:
    query = emb.embed_query("Which editor theme does the user like?")
    related, unrelated = emb.embed_documents(
        ["The user prefers a dark theme in their code editor.", "The tax return is due in April."]
    )
    assert _cosine(query, related) > _cosine(query, unrelated) + 0.2


def test_cache_returns_same_vectors_without_model_call(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    encode = emb_module._Model.encode

    def counting(self: emb_module._Model, texts: list[str], batch_size: int) -> np.ndarray:
        calls.append(list(texts))
        return encode(self, texts, batch_size)

    monkeypatch.setattr(emb_module._Model, "encode", counting)
    emb = LocalEmbeddings(cache_size=2)

    first = emb.embed_documents(["alpha", "beta", "alpha"])
    again = emb.embed_documents(["beta", "alpha"])
    query = emb.embed_query("alpha")

    assert calls == [["alpha", "beta"]]  # the duplicate inside a call is embedded once
    assert first[0] == first[2] == again[1] == query and first[1] == again[0]
    assert emb.cache_info() == (3, 2, 2, 2)

    emb.embed_query("gamma")  # evicts the least recently used text, "beta"
    emb.embed_documents(["alpha", "beta"])
    assert calls[1:] == [["gamma"], ["beta"]]


def test_cache_size_zero_always_runs_the_model(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[list[str]] = []
    encode = emb_module._Model.encode
    monkeypatch.setattr(
        emb_module._Model, "encode", lambda s, t, b: calls.append(list(t)) or encode(s, t, b)
    )
    emb = LocalEmbeddings(cache_size=0)
    assert emb.embed_query("alpha") == emb.embed_query("alpha")
    assert calls == [["alpha"], ["alpha"]]
    assert emb.cache_info().currsize == 0


async def test_async_equals_sync_and_runs_off_the_event_loop(
    emb: LocalEmbeddings, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: list[int] = []
    encode = emb_module._Model.encode
    monkeypatch.setattr(
        emb_module._Model,
        "encode",
        lambda s, t, b: threads.append(threading.get_ident()) or encode(s, t, b),
    )

    docs, query = await asyncio.gather(emb.aembed_documents(TEXTS), emb.aembed_query(TEXTS[0]))

    assert docs == emb.embed_documents(TEXTS)
    assert query == emb.embed_query(TEXTS[0])
    assert threading.get_ident() not in threads[:2]  # the two async calls ran in worker threads


def test_concurrent_first_calls_load_the_model_once(monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[Path] = []
    load = emb_module._Model.load.__func__

    def counting(
        cls: type, folder: Path, max_length: int, cache_dir: Path | None, make_options: Any
    ) -> emb_module._Model:
        loads.append(folder)
        return load(cls, folder, max_length, cache_dir, make_options)

    monkeypatch.setattr(emb_module._Model, "load", classmethod(counting))
    emb = LocalEmbeddings()
    with ThreadPoolExecutor(max_workers=4) as pool:
        vectors = list(pool.map(emb.embed_query, ["one", "two", "three", "four"]))

    assert len(loads) == 1
    assert all(len(v) == 384 for v in vectors)


def test_model_dir_lookup_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chroma_cache: Path
) -> None:
    shared = resolve_model_dir()
    monkeypatch.setenv(MODEL_DIR_ENV, str(tmp_path / "empty"))
    assert resolve_model_dir(shared) == shared  # an explicit folder comes first
    assert resolve_model_dir(shared.parent) == shared  # ... or its parent holding onnx/
    assert resolve_model_dir() == chroma_cache  # env folder without files: chromadb's cache
    monkeypatch.setenv(MODEL_DIR_ENV, str(shared))
    assert resolve_model_dir() == shared
    monkeypatch.delenv(MODEL_DIR_ENV)
    assert resolve_model_dir() == chroma_cache


def test_missing_model_files_error_names_every_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_download: None
) -> None:
    env_dir, cache = tmp_path / "env-dir", tmp_path / "chroma-cache"
    env_dir.mkdir()
    monkeypatch.setenv(MODEL_DIR_ENV, str(env_dir))
    monkeypatch.setattr(ONNXMiniLM_L6_V2, "DOWNLOAD_PATH", cache)

    with pytest.raises(EmbeddingModelNotFoundError) as caught:
        LocalEmbeddings().embed_query("hello")

    message = str(caught.value)
    assert isinstance(caught.value, FileNotFoundError)
    for expected in (str(env_dir), str(cache / "onnx"), "download", MODEL_DIR_ENV, "model_dir="):
        assert expected in message


def test_explicit_model_dir_without_files_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingModelNotFoundError, match=str(tmp_path)):
        LocalEmbeddings(tmp_path).embed_query("hello")


@pytest.mark.parametrize(
    "kwargs",
    [{"batch_size": 0}, {"cache_size": -1}, {"max_length": 1}, {"max_length": 513}, {"threads": 0}],
)
def test_bad_settings_are_rejected(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        LocalEmbeddings(**kwargs)


def test_bench_embeddings_section_runs_offline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_download: None
) -> None:
    from engram.evals.bench import stores as bench

    out = tmp_path / "bench.json"
    argv = ["--only", "embeddings", "--texts", "2", "--repeats", "1", "--json", str(out)]
    assert bench.main(argv) == 0

    rows = json.loads(out.read_text())["sections"]["embeddings"]
    assert {(r["texts"], r["embedder"]) for r in rows} == {
        (kind, name)
        for kind in ("short", "long")
        for name in ("LocalEmbeddings", "DefaultEmbeddingFunction", "ONNXMiniLM_L6_V2 reused")
    }
    assert all(r["min_cosine_vs_default"] >= 0.9999 and r["texts_per_s"] > 0 for r in rows)
    assert '"x_vs_default"' in capsys.readouterr().out
