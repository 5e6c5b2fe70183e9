"""Questions left out of a run because their gold answer is known to be wrong.

An exclusion file is text, one question per line: its id, optionally the digest of its text
(`sha1:` and the first 8 hex digits of the SHA-1 of the question, `QAQuestion.digest`), and an
optional `#` comment; blank lines and lines starting with `#` are skipped:

```
# LoCoMo questions whose gold answer contradicts the conversation
conv-26:5 sha1:1c4d7e90  # temporal error
e47becba                  # a LongMemEval question id
```

A line with a digest excludes its question only when the digest matches (a list made for
another version of the data never drops the wrong question); the run reports every excluded id,
and the ids that named no question of the data or a different one.

No list ships with engram: LoCoMo's answer-key audits carry LoCoMo's non-commercial licence,
and a team writes its list from the audit it trusts (docs/evals.md).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from engram.evals.qa.dataset import QAHistory

_LINE = re.compile(r"(?P<id>[^\s#]+)(?:\s+sha1:(?P<digest>[0-9a-fA-F]{8}))?\s*(?:#.*)?")


@dataclass(frozen=True)
class Exclusion:
    """One line of an exclusion file."""

    question_id: str
    digest: str | None = None
    """The question text's digest the line expects; None excludes the id whatever its text."""


@dataclass(frozen=True)
class Excluded:
    """What a run left out, for the report."""

    ids: tuple[str, ...] = ()
    """Questions excluded from the run."""
    not_found: tuple[str, ...] = ()
    """Listed ids that name no question of the loaded data (e.g. another conversation's)."""
    other_text: tuple[str, ...] = ()
    """Listed ids whose question text differs from the listed digest: not excluded."""
    files: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, object]:
        """The report's `excluded` entry."""
        return {
            "count": len(self.ids),
            "files": list(self.files),
            "ids": list(self.ids),
            "listed_but_not_in_data": len(self.not_found),
            "listed_with_another_text": list(self.other_text),
        }


def read_exclusions(path: str | Path) -> list[Exclusion]:
    """The exclusions a file lists (see the module docstring for the format).

    Raises:
        FileNotFoundError: The file does not exist.
        ValueError: A line is not an id with an optional `sha1:xxxxxxxx` digest and comment.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"exclusion file not found at {path}: pass a text file with one question id per "
            "line (optionally followed by sha1:<8 hex digits of the question's SHA-1>)"
        )
    found: list[Exclusion] = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise ValueError(
                f"{path}:{number}: {line!r} is not a question id with an optional "
                "sha1:<8 hex digits> and # comment"
            )
        digest = match.group("digest")
        found.append(Exclusion(match.group("id"), digest.lower() if digest else None))
    return found


def apply_exclusions(
    histories: Sequence[QAHistory], exclusions: Sequence[Exclusion], files: Sequence[str] = ()
) -> tuple[list[QAHistory], Excluded]:
    """The histories without the excluded questions, and what was excluded."""
    wanted = {e.question_id: e for e in exclusions}
    excluded: list[str] = []
    other_text: list[str] = []
    seen: set[str] = set()
    kept: list[QAHistory] = []
    for history in histories:
        questions = []
        for question in history.questions:
            rule = wanted.get(question.id)
            if rule is not None:
                seen.add(question.id)
                if rule.digest is None or rule.digest == question.digest:
                    excluded.append(question.id)
                    continue
                other_text.append(question.id)
            questions.append(question)
        kept.append(replace(history, questions=tuple(questions)))
    return kept, Excluded(
        ids=tuple(excluded),
        not_found=tuple(i for i in wanted if i not in seen),
        other_text=tuple(other_text),
        files=tuple(files),
    )
