"""LoCoMo retrieval benchmark: does engram's retriever find the turns that answer each question?

Data: LoCoMo (Maharana et al., ACL 2024; CC BY-NC 4.0, so it is read from a path and never copied
into this repository). Each conversation is a list of dated sessions of turns `D<session>:<turn>`;
each question names its evidence turns. Questions of categories 1-4 are used (5, adversarial, has no
evidence to find), with LoCoMo's own category names: 4 single-hop, 1 multi-hop, 2 temporal,
3 open-domain.

`engine` mode runs engram's own episode recall, nothing written for LoCoMo: each session's turns
become chat messages (speaker_a a user, speaker_b an assistant, named, stamped with the session's
date), `compact`'s `episode_ops` archives them as it archives evicted messages (one episode per
message, the two messages before it as lexical context), a `ChromaStore` with its lexical index
holds them, and `LongTermMemory.search_episodes` ranks them for every question (BM25 and
embeddings, fused). Metrics, for k in 1, 5, 10, 25:

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
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import chromadb
from langchain_core.embeddings import Embeddings
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from engram.nodes.episodes import EPISODE_CONTEXT_MESSAGES, episode_ops
from engram.nodes.text.transcript import TIMESTAMP_KEY
from engram.stores.chroma.store import ChromaStore
from engram.stores.lexical.fusion import DEFAULT_LEXICAL_WEIGHT, FusionMethod
from engram.stores.lexical.index import LexicalIndex, Tokenizer
from engram.stores.memory.long_term import LongTermMemory

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
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
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
    """A question with its evidence turn ids, normalised (categories 1-4 unless asked for more)."""

    text: str
    category: int
    evidence: tuple[str, ...]
    answer: str = ""
    index: int = -1
    """Its position in the sample's `qa` list (with the sample id, the question's key)."""

    @property
    def category_name(self) -> str:
        """LoCoMo's name for the category."""
        return CATEGORY_NAMES[self.category]


@dataclass(frozen=True)
class Conversation:
    """One LoCoMo sample: its turns in order and its questions (by default, those retrieval can
    score)."""

    sample_id: str
    speaker_a: str
    speaker_b: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]
    skipped_questions: int = 0
    """Questions of the loaded categories left out for want of an evidence id naming one of its
    turns (only when evidence is required)."""
    dropped_evidence: tuple[str, ...] = ()
    """Evidence ids that were unparseable or named no turn of the conversation."""


@dataclass(frozen=True, kw_only=True)
class EngineSettings:
    """How `run_engine` ingests turns and ranks them; the defaults are engram's own.

    The other values exist for ablations (`engram.evals.bench.retrieval`); each maps to a
    setting engram has (a fusion weight, a tokenizer, what a message carries).
    """

    channels: Channels = "hybrid"
    """`hybrid` (the engine), or one channel alone for baselines (fusion weight 1 or 0)."""
    method: FusionMethod = "relative"
    lexical_weight: float = DEFAULT_LEXICAL_WEIGHT
    depth: int = 50
    """Candidates per channel (`LongTermMemory`'s default)."""
    context_turns: int = EPISODE_CONTEXT_MESSAGES
    """Previous turns of the same session indexed as the lexical context of a turn."""
    with_speakers: bool = True
    """Messages carry their speaker's name."""
    with_dates: bool = True
    """Messages carry their session's date."""
    with_captions: bool = True
    """A shared image's caption is appended to the turn's text."""
    stemming: bool = True
    """Stem English words in the lexical channel."""
    stopwords: bool = True
    """Drop English stopwords in the lexical channel."""
    ks: tuple[int, ...] = field(default=DEFAULT_KS)

    @property
    def fusion_weight(self) -> float:
        """The lexical channel's share of the fused relevance for these channels."""
        return {"hybrid": self.lexical_weight, "lexical": 1.0, "dense": 0.0}[self.channels]

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


def load_locomo(
    path: str | Path,
    conversations: Iterable[str] | None = None,
    *,
    categories: Collection[int] = RETRIEVAL_CATEGORIES,
    require_evidence: bool = True,
) -> list[Conversation]:
    """Read LoCoMo's JSON (`locomo10.json` or a subset), optionally only some sample ids.

    Args:
        path: The JSON file.
        conversations: Sample ids to keep, in this order (default: all, in the file's order).
        categories: Question categories to keep (default: 1-4, those with evidence).
        require_evidence: Skip questions none of whose evidence ids names a turn (retrieval
            cannot score them; answering can).

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
    return [
        _conversation(parsed[sample_id], path, categories, require_evidence) for sample_id in wanted
    ]


def turn_text(turn: Turn, *, with_caption: bool = True) -> str:
    """The turn's text, with a shared image's caption appended.

    Example:
        >>> turn_text(Turn("D1:4", "Bo", "Look at this.", 1, "", image_caption="a photo of a dog"))
        'Look at this. [image: a photo of a dog]'
    """
    if with_caption and turn.image_caption:
        return f"{turn.text} [image: {turn.image_caption}]"
    return turn.text


def session_date(raw: str) -> datetime | None:
    """A session's date ("1:56 pm on 8 May, 2023") as a datetime; None when unreadable.

    Example:
        >>> session_date("1:56 pm on 8 May, 2023").isoformat()
        '2023-05-08T13:56:00'
    """
    try:
        return datetime.strptime(raw.strip(), _DATE_FORMAT)
    except ValueError:
        return None


def turn_message(
    conversation: Conversation,
    turn: Turn,
    *,
    with_speaker: bool = True,
    with_date: bool = True,
    with_caption: bool = True,
) -> BaseMessage:
    """A turn as a chat message: speaker_a's a user message, speaker_b's an assistant one,
    named after the speaker, stamped with the session's date, with the turn id as message id."""
    cls = HumanMessage if turn.speaker == conversation.speaker_a else AIMessage
    when = session_date(turn.date) if with_date else None
    return cls(
        turn_text(turn, with_caption=with_caption),
        id=turn.id,
        name=turn.speaker if with_speaker else None,
        additional_kwargs={TIMESTAMP_KEY: when.isoformat()} if when else {},
    )


def sessions(conversation: Conversation) -> list[list[Turn]]:
    """The conversation's turns, one list per session, in order."""
    grouped: dict[int, list[Turn]] = {}
    for turn in conversation.turns:
        grouped.setdefault(turn.session, []).append(turn)
    return [grouped[number] for number in sorted(grouped)]


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
    """For each question of `conversation`, its turn ids best first (at least the top max(ks)),
    from engram's episode archive and episode recall."""
    user = _user_label(conversation.sample_id)
    lexical = LexicalIndex(tokenizer=settings.tokenizer())
    store = ChromaStore(
        chromadb.EphemeralClient(),
        collection=f"locomo-{uuid.uuid4().hex}",
        index={"dims": len(await embeddings.aembed_query("dims")), "embed": embeddings,
               "fields": ["content"]},
        lexical=lexical,
    )
    try:
        for number, turns in enumerate(sessions(conversation), start=1):
            messages = [
                turn_message(
                    conversation, turn, with_speaker=settings.with_speakers,
                    with_date=settings.with_dates, with_caption=settings.with_captions,
                )
                for turn in turns
            ]
            await store.abatch(episode_ops(
                messages, user_id=user, thread_id=f"{conversation.sample_id}-s{number}",
                context_messages=settings.context_turns,
            ))
        recall = LongTermMemory(
            store, fusion=settings.method, lexical_weight=settings.fusion_weight,
            depth=settings.depth,
        )
        limit = max(settings.ks)
        rankings = []
        for question in conversation.questions:
            found = await recall.asearch_episodes(user, question.text, k=limit)
            ids = dict.fromkeys(i for item in found for i in item.value["message_ids"])
            rankings.append(list(ids))
        return rankings
    finally:
        store.client.delete_collection(store.collection_name)
        lexical.close()


def _user_label(sample_id: str) -> str:
    """A namespace label for a sample id (labels cannot hold dots)."""
    return sample_id.replace(".", "_") or "conversation"


def _means(ranked: Sequence[tuple[Question, Sequence[str]]], ks: Sequence[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in ks:
        per_question = [question_metrics(ids, question.evidence, k) for question, ids in ranked]
        for name in ("any", "all", "frac"):
            values = [m[name] for m in per_question]
            out[f"{name}_at_{k}"] = sum(values) / len(values) if values else 0.0
    return out


def _conversation(
    sample: dict[str, Any], path: Path, categories: Collection[int], require_evidence: bool
) -> Conversation:
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
        for index, qa in enumerate(sample["qa"]):
            if qa["category"] not in categories:
                continue
            evidence, lost = normalize_evidence(qa.get("evidence") or [], known)
            dropped.extend(lost)
            if not evidence and require_evidence:
                skipped += 1
                continue
            questions.append(Question(
                qa["question"], qa["category"], evidence, str(qa.get("answer", "")), index
            ))
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
