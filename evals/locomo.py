"""LoCoMo retrieval benchmark: does engram's retriever find the turns that answer each question?

Data: LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, so it is read from a path and never copied
into this repository). Each conversation is a list of dated sessions of turns `D<session>:<turn>`;
each question names its evidence turns. Questions of categories 1-4 are used (5, adversarial, has no
evidence to find), with LoCoMo's own category names: 4 single-hop, 1 multi-hop, 2 temporal,
3 open-domain.

`engine` mode indexes each conversation's turns the way engram indexes archived messages and ranks
them for every question with `HybridRetriever`: the lexical channel is the `LexicalIndex` (each turn
with the two previous turns of its session as context), the dense channel a Chroma collection of the
turns' embeddings. Metrics, for k in 1, 5, 10, 25:

- any@k: share of questions with at least one evidence turn in the top k;
- all@k: share of questions with every evidence turn in the top k;
- frac@k: mean share of a question's evidence turns in the top k (the LoCoMo paper's "recall").
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import uuid
from collections.abc import Collection, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

import chromadb
from langchain_core.embeddings import Embeddings

from engram.stores.fusion import DEFAULT_DEPTH, DEFAULT_LEXICAL_WEIGHT, FusionMethod, HybridRetriever
from engram.stores.lexical import LexicalDocument, LexicalIndex, Tokenizer

logger = logging.getLogger(__name__)

CATEGORY_NAMES: dict[int, str] = {
    4: "single-hop",
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    5: "adversarial",
}
"""LoCoMo's category numbers and names (the mem0 paper numbers them differently)."""

RETRIEVAL_CATEGORIES = (4, 1, 2, 3)
"""Categories with evidence to retrieve, in report order."""

DEFAULT_KS = (1, 5, 10, 25)

_SESSION_KEY = re.compile(r"session_(\d+)$")
_EVIDENCE_ID = re.compile(r"d:?(\d+):(\d+)", re.IGNORECASE)

Channels = Literal["hybrid", "lexical", "dense"]


@dataclass(frozen=True)
class Turn:
    """One turn of a LoCoMo conversation."""

    id: str
    """`D<session>:<turn>`, as in the data."""
    speaker: str
    text: str
    session: int
    date: str
    """The session's date and time as written in the data, e.g. "1:56 pm on 8 May, 2023"."""
    image_caption: str | None = None
    """The data's description of an image shared in the turn, if any."""


@dataclass(frozen=True)
class Question:
    """A question of categories 1-4 with its evidence turn ids, normalised."""

    text: str
    category: int
    evidence: tuple[str, ...]
    answer: str = ""

    @property
    def category_name(self) -> str:
        """LoCoMo's name for the category."""
        return CATEGORY_NAMES[self.category]


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo sample: its turns in order and its answerable retrieval questions."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    skipped_questions: int = 0
    """Questions of categories 1-4 left without any evidence id that names one of its turns."""
    dropped_evidence: tuple[str, ...] = ()
    """Evidence ids that were unparseable or named no turn of the conversation."""


@dataclass(frozen=True, kw_only=True)
class EngineSettings:
    """How `run_engine` indexes turns and ranks them."""

    channels: Channels = "hybrid"
    """`hybrid` (the engine), or one channel alone for baselines."""
    method: FusionMethod = "relative"
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT
    depth: int = DEFAULT_DEPTH
    """Candidates per channel."""
    context_turns: int = 2
    """Previous turns of the same session indexed as the lexical context of a turn."""
    dense_context: bool = False
    """Also embed each turn with its context, and rank by the mean of both similarities."""
    with_speakers: bool = True
    """Start each turn's indexed text with its speaker's name, as a transcript does."""
    with_dates: bool = True
    """Start each turn's indexed text with its session's date."""
    with_captions: bool = True
    """Append a shared image's caption to the turn's text."""
    stemming: bool = True
    """Stem English words in the lexical channel."""
    stopwords: bool = True
    """Drop English stopwords in the lexical channel."""
    ks: tuple[int, ...] = field(default=DEFAULT_KS)

    def tokenizer(self) -> Tokenizer:
        """The lexical channel's tokenizer for these settings."""
        return Tokenizer(
            stopwords=None if self.stopwords else (),
            language="english" if self.stemming else None,
        )


def parse_evidence_id(raw: str) -> str | None:
    """`D<session>:<turn>` from a raw evidence id, or None when it names no turn.

    Example:
        >>> [parse_evidence_id(s) for s in ["D8:6", "D:11:26", "D30:05", "D"]]
        ['D8:6', 'D11:26', 'D30:5', None]
    """
    match = _EVIDENCE_ID.fullmatch(raw.strip())
    return f"D{int(match.group(1))}:{int(match.group(2))}" if match else None


def normalize_evidence(
    raw: Iterable[str], known_ids: Collection[str]
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Normalised evidence ids in first-seen order without repeats, and the raw ids dropped.

    Handles the data's quirks: several ids in one string ("D8:6; D9:17"), an extra colon
    ("D:11:26"), zero-padded turns ("D30:05"), and ids naming no turn of `known_ids`.

    Example:
        >>> normalize_evidence(["D8:6; D9:17", "D30:05", "D"], {"D8:6", "D9:17", "D30:5"})
        (('D8:6', 'D9:17', 'D30:5'), ('D',))
    """
    kept: dict[str, None] = {}
    dropped: list[str] = []
    for item in raw:
        for piece in filter(None, re.split(r"[;,\s]+", str(item))):
            turn_id = parse_evidence_id(piece)
            if turn_id is not None and turn_id in known_ids:
                kept[turn_id] = None
            else:
                dropped.append(piece)
    return tuple(kept), tuple(dropped)


def load_locomo(path: str | Path, conversations: Iterable[str] | None = None) -> list[Conversation]:
    """Read LoCoMo's JSON (`locomo10.json` or a subset), optionally only some sample ids.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: The file is not LoCoMo's format, or a requested sample id is not in it.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"LoCoMo data not found at {path}: pass the path of locomo10.json (or a subset of it, "
            "e.g. ../shared/data/locomo/locomo-dev.json)"
        )
    try:
        samples = json.loads(path.read_text(encoding="utf-8"))
        parsed = {sample["sample_id"]: sample for sample in samples}
    except (json.JSONDecodeError, TypeError, KeyError) as exc:
        raise ValueError(f"{path} is not LoCoMo data (a list of samples with sample_id): {exc}") from exc
    wanted = list(parsed) if conversations is None else list(conversations)
    unknown = [sample_id for sample_id in wanted if sample_id not in parsed]
    if unknown:
        raise ValueError(
            f"conversation(s) {', '.join(unknown)} not in {path}; it holds {', '.join(parsed)}"
        )
    return [_conversation(parsed[sample_id], path) for sample_id in wanted]


def render_turn(
    turn: Turn, *, with_date: bool = True, with_caption: bool = True, with_speaker: bool = True
) -> str:
    """A turn as engram indexes a message: "[date] Speaker: text [image: caption]".

    Example:
        >>> render_turn(Turn("D1:3", "Caroline", "I went to a support group.", 1, "8 May, 2023"))
        '[8 May, 2023] Caroline: I went to a support group.'
    """
    text = f"{turn.speaker}: {turn.text}" if with_speaker else turn.text
    if with_caption and turn.image_caption:
        text += f" [image: {turn.image_caption}]"
    return f"[{turn.date}] {text}" if with_date and turn.date else text


def turn_documents(conversation: Conversation, settings: EngineSettings) -> list[LexicalDocument]:
    """Each turn as a document whose context is the previous `context_turns` of its session."""
    turns = conversation.turns
    documents = []
    for i, turn in enumerate(turns):
        previous = [
            render_turn(
                earlier,
                with_date=False,
                with_caption=settings.with_captions,
                with_speaker=settings.with_speakers,
            )
            for earlier in turns[max(0, i - settings.context_turns) : i]
            if earlier.session == turn.session
        ]
        text = render_turn(
            turn,
            with_date=settings.with_dates,
            with_caption=settings.with_captions,
            with_speaker=settings.with_speakers,
        )
        documents.append(LexicalDocument(turn.id, text, "\n".join(previous)))
    return documents


def question_metrics(ranked: Sequence[str], evidence: Collection[str], k: int) -> dict[str, float]:
    """any / all / frac of `evidence` among the first `k` of `ranked` for one question.

    Example:
        >>> question_metrics(["D1:1", "D2:4", "D3:1"], ["D2:4", "D9:9"], 2)
        {'any': 1.0, 'all': 0.0, 'frac': 0.5}
    """
    if not evidence:
        raise ValueError("a question without evidence cannot be scored; skip it when loading")
    hits = len(set(ranked[:k]) & set(evidence))
    return {
        "any": float(hits > 0),
        "all": float(hits == len(evidence)),
        "frac": hits / len(evidence),
    }


def aggregate(
    ranked: Sequence[tuple[Question, Sequence[str]]], ks: Sequence[int] = DEFAULT_KS
) -> dict[str, Any]:
    """Mean any/all/frac@k over questions, overall and by category name.

    Returns `{"any_at_5": ..., "all_at_5": ..., "frac_at_5": ..., ..., "by_category":
    {"single-hop": {same keys}, ...}}`; categories without questions are left out.
    """
    metrics = _means(ranked, ks)
    metrics["by_category"] = {
        CATEGORY_NAMES[category]: _means([r for r in ranked if r[0].category == category], ks)
        for category in RETRIEVAL_CATEGORIES
        if any(question.category == category for question, _ in ranked)
    }
    return metrics


async def arun_engine(
    path: str | Path,
    *,
    conversations: Iterable[str] | None = None,
    embeddings: Embeddings | None = None,
    settings: EngineSettings | None = None,
) -> dict[str, Any]:
    """Rank every conversation's turns for its questions with engram's retriever; report metrics.

    Args:
        path: LoCoMo JSON file.
        conversations: Sample ids to use (default: all in the file).
        embeddings: The dense channel's embedder (default: `LocalEmbeddings`, all-MiniLM-L6-v2).
        settings: Indexing and ranking options (default: the engine's defaults).

    Returns:
        `{"mode": "engine", "metrics": {...see aggregate...}, "questions": {...counts...},
        "settings": {...}}`.
    """
    settings = settings or EngineSettings()
    if embeddings is None:
        from engram.stores.embeddings import LocalEmbeddings

        embeddings = LocalEmbeddings()
    loaded = load_locomo(path, conversations)
    ranked: list[tuple[Question, list[str]]] = []
    for conversation in loaded:
        rankings = await rank_conversation(conversation, embeddings, settings)
        ranked.extend(zip(conversation.questions, rankings, strict=True))
    return {
        "mode": "engine",
        "metrics": aggregate(ranked, settings.ks),
        "questions": {
            "total": len(ranked),
            "by_category": {
                CATEGORY_NAMES[c]: sum(q.category == c for q, _ in ranked)
                for c in RETRIEVAL_CATEGORIES
            },
            "skipped_without_evidence": sum(c.skipped_questions for c in loaded),
            "evidence_ids_dropped": sum(len(c.dropped_evidence) for c in loaded),
        },
        "settings": {
            **asdict(settings),
            "embedder": type(embeddings).__name__,
            "conversations": [c.sample_id for c in loaded],
        },
    }


def run_engine(
    path: str | Path,
    *,
    conversations: Iterable[str] | None = None,
    embeddings: Embeddings | None = None,
    settings: EngineSettings | None = None,
) -> dict[str, Any]:
    """Synchronous `arun_engine`."""
    return asyncio.run(
        arun_engine(path, conversations=conversations, embeddings=embeddings, settings=settings)
    )


async def rank_conversation(
    conversation: Conversation, embeddings: Embeddings, settings: EngineSettings
) -> list[list[str]]:
    """For each question of `conversation`, its turn ids best first (at least the top max(ks))."""
    limit = max(settings.ks)
    questions = [question.text for question in conversation.questions]
    dense: list[list[tuple[str, float]]] = [[] for _ in questions]
    if settings.channels != "lexical":
        dense = await _dense_candidates(conversation, embeddings, settings, questions)
    if settings.channels == "dense":
        return [[doc_id for doc_id, _ in candidates[:limit]] for candidates in dense]
    scope = conversation.sample_id
    with LexicalIndex(tokenizer=settings.tokenizer()) as index:
        await index.aupsert(scope, turn_documents(conversation, settings))
        retriever = HybridRetriever(
            index, method=settings.method, lexical_weight=settings.lexical_weight, depth=settings.depth
        )
        if settings.channels == "lexical":
            found = [await index.asearch(scope, q, limit=limit) for q in questions]
        else:
            found = [
                await retriever.asearch(scope, q, dense=candidates, limit=limit)
                for q, candidates in zip(questions, dense, strict=True)
            ]
    return [[doc_id for doc_id, _ in candidates] for candidates in found]


async def _dense_candidates(
    conversation: Conversation,
    embeddings: Embeddings,
    settings: EngineSettings,
    questions: list[str],
) -> list[list[tuple[str, float]]]:
    """Top `depth` turns per question by cosine similarity, from a throwaway Chroma collection."""
    documents = turn_documents(conversation, settings)
    vectors = await embeddings.aembed_documents([doc.text for doc in documents])
    query_vectors = list(await asyncio.gather(*(embeddings.aembed_query(q) for q in questions)))
    with_context = None
    if settings.dense_context:
        with_context = await embeddings.aembed_documents(
            [f"{doc.context}\n{doc.text}" if doc.context else doc.text for doc in documents]
        )
    ids = [doc.id for doc in documents]
    return await asyncio.to_thread(
        _query_chroma, ids, vectors, with_context, query_vectors, settings.depth
    )


def _query_chroma(
    ids: list[str],
    vectors: list[list[float]],
    with_context: list[list[float]] | None,
    query_vectors: list[list[float]],
    depth: int,
) -> list[list[tuple[str, float]]]:
    client = chromadb.EphemeralClient()
    name = f"locomo-{uuid.uuid4().hex}"
    collection = client.create_collection(name, metadata={"hnsw:space": "cosine"})
    try:
        rows = [(f"{doc_id}#t", doc_id, vector) for doc_id, vector in zip(ids, vectors, strict=True)]
        if with_context is not None:
            rows += [(f"{d}#c", d, v) for d, v in zip(ids, with_context, strict=True)]
        for start in range(0, len(rows), 4096):
            batch = rows[start : start + 4096]
            collection.add(
                ids=[row[0] for row in batch],
                embeddings=[row[2] for row in batch],
                metadatas=[{"turn": row[1]} for row in batch],
            )
        n_results = min(len(rows), depth * (2 if with_context is not None else 1))
        metadatas_per_query: list[Any] = []
        distances_per_query: list[Any] = []
        for start in range(0, len(query_vectors), 16):  # Chroma caps the SQL variables per query
            result = collection.query(
                query_embeddings=query_vectors[start : start + 16],
                n_results=n_results,
                include=["metadatas", "distances"],
            )
            metadatas_per_query += result["metadatas"]
            distances_per_query += result["distances"]
    finally:
        client.delete_collection(name)
    out = []
    for metadatas, distances in zip(metadatas_per_query, distances_per_query, strict=True):
        sims: dict[str, list[float]] = {}
        for metadata, distance in zip(metadatas, distances, strict=True):
            sims.setdefault(str(metadata["turn"]), []).append(1.0 - distance)
        vectors_per_turn = 2 if with_context is not None else 1
        # a turn missing one of its two vectors counts that one as the worst similarity seen
        floor = min((s for values in sims.values() for s in values), default=0.0)
        scored = {
            turn: (sum(values) + floor * (vectors_per_turn - len(values))) / vectors_per_turn
            for turn, values in sims.items()
        }
        out.append(sorted(scored.items(), key=lambda item: -item[1])[:depth])
    return out


def _means(ranked: Sequence[tuple[Question, Sequence[str]]], ks: Sequence[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in ks:
        per_question = [question_metrics(ids, question.evidence, k) for question, ids in ranked]
        for name in ("any", "all", "frac"):
            values = [m[name] for m in per_question]
            out[f"{name}_at_{k}"] = sum(values) / len(values) if values else 0.0
    return out


def _conversation(sample: dict[str, Any], path: Path) -> Conversation:
    try:
        conv = sample["conversation"]
        sessions = sorted(
            (int(m.group(1)), key) for key in conv if (m := _SESSION_KEY.match(key))
        )
        turns = tuple(
            Turn(
                id=raw["dia_id"],
                speaker=raw["speaker"],
                text=raw["text"],
                session=number,
                date=conv.get(f"session_{number}_date_time", ""),
                image_caption=raw.get("blip_caption"),
            )
            for number, key in sessions
            for raw in conv[key]
        )
        known = {turn.id for turn in turns}
        questions: list[Question] = []
        skipped = 0
        dropped: list[str] = []
        for qa in sample["qa"]:
            if qa["category"] not in RETRIEVAL_CATEGORIES:
                continue
            evidence, lost = normalize_evidence(qa.get("evidence") or [], known)
            dropped.extend(lost)
            if not evidence:
                skipped += 1
                continue
            questions.append(
                Question(qa["question"], qa["category"], evidence, str(qa.get("answer", "")))
            )
        return Conversation(
            sample_id=sample["sample_id"],
            speaker_a=conv["speaker_a"],
            speaker_b=conv["speaker_b"],
            turns=turns,
            questions=tuple(questions),
            skipped_questions=skipped,
            dropped_evidence=tuple(dropped),
        )
    except (KeyError, TypeError) as exc:
        raise ValueError(
            f"{path}: sample {sample.get('sample_id', '?')} is not in LoCoMo's format: missing {exc}"
        ) from exc
