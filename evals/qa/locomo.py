"""LoCoMo as answer-accuracy histories: each conversation one user's history, its questions
asked after its last session.

Loading, the session split and the turn -> message conversion are the LoCoMo adapter's
(`engram.evals.locomo.engine`): speaker_a speaks as the user, speaker_b as the assistant, each
message named after its speaker and stamped with its session's date, a shared image's caption
appended. A question's id is `<sample id>:<position in the sample's qa list>`, its category
LoCoMo's name for its number; category 5 (adversarial) has no gold answer in the data, only the
tempting wrong one, so its gold answer is `LOCOMO_ADVERSARIAL_GOLD`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path

from engram.evals.locomo.engine import Conversation, load_locomo, sessions, turn_message
from engram.evals.locomo.graph import conversation_user
from engram.evals.qa.dataset import QAHistory, QAQuestion, QASession
from engram.evals.qa.protocol import LOCOMO_CATEGORIES, LOCOMO_DEFAULT_CATEGORIES
from engram.nodes.prompts import LOCOMO_ADVERSARIAL_GOLD


def parse_categories(raw: str | None) -> tuple[int, ...]:
    """LoCoMo category numbers or names, comma-separated (default: 1-4).

    Example:
        >>> parse_categories("temporal, 4"), parse_categories(None)
        ((2, 4), (1, 2, 3, 4))

    Raises:
        ValueError: A category is neither a LoCoMo number nor a name (the message lists them).
    """
    if raw is None:
        return LOCOMO_DEFAULT_CATEGORIES
    by_name = {name: number for number, name in LOCOMO_CATEGORIES.items()}
    chosen: list[int] = []
    for part in filter(None, (p.strip() for p in raw.split(","))):
        number = int(part) if part.isdigit() else by_name.get(part.lower())
        if number not in LOCOMO_CATEGORIES:
            known = ", ".join(f"{n} ({name})" for n, name in sorted(LOCOMO_CATEGORIES.items()))
            raise ValueError(f"unknown LoCoMo category {part!r}: use numbers or names of {known}")
        chosen.append(number)
    if not chosen:
        raise ValueError("no category given: pass numbers or names such as 1,2,3,4")
    return tuple(sorted(set(chosen)))


def locomo_histories(
    path: str | Path,
    conversations: Iterable[str] | None = None,
    categories: Collection[int] = LOCOMO_DEFAULT_CATEGORIES,
) -> list[QAHistory]:
    """The conversations of a LoCoMo file as histories with their questions of `categories`.

    Raises:
        FileNotFoundError: `path` does not exist.
        ValueError: Not LoCoMo data, or a requested sample id is not in it.
    """
    loaded = load_locomo(path, conversations, categories=categories, require_evidence=False)
    return [_history(conversation) for conversation in loaded]


def _history(conversation: Conversation) -> QAHistory:
    return QAHistory(
        id=conversation.sample_id,
        user_id=conversation_user(conversation),
        speakers=(conversation.speaker_a, conversation.speaker_b),
        sessions=tuple(
            QASession(turns[0].date, tuple(turn_message(conversation, t) for t in turns))
            for turns in sessions(conversation)
        ),
        questions=tuple(
            QAQuestion(
                id=f"{conversation.sample_id}:{q.index}",
                category=LOCOMO_CATEGORIES[q.category],
                text=q.text,
                gold=q.answer if q.category != 5 else LOCOMO_ADVERSARIAL_GOLD,
            )
            for q in conversation.questions
        ),
    )
