"""Cutting a user message into pieces for the offline extractor, and telling details apart.

A message is cut into units (lines and list items), units into sentences, sentences into clauses
(at commas, and in Chinese also at a space between two Chinese characters, which people type in
place of a comma). Clauses that say nothing durable by themselves — fillers ("ok", "lol", "嗯"),
questions and requests — are dropped. The remaining clauses are grouped into pieces: a piece
starts at a sentence, or at a clause with its own first-person subject or a topic shift ("and I
...", "also ...", "，我..."). The extractor classifies pieces and groups them into memories.

A *detail* is what makes a statement specific and worth keeping verbatim: a number, a version, a
path or file name, a code identifier (`snake_case`, `camelCase`, `kebab-case`, `--flag`), an
acronym or a capitalised name inside a sentence, Latin words inside Chinese text, a counted
Chinese quantity (三次, 两年), or something quoted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from engram.nodes.extract.filters import is_noise_clause, strip_lead
from engram.stores.secrets import REDACTED

_CJK = r"\u3400-\u9fff"
_HAS_CJK = re.compile(f"[{_CJK}]")
_LIST_MARKER = re.compile(
    r"^\s*(?:\(?\d{1,2}[).:]\s+|\d{1,2}[、：]|[-*•]\s+|[①-⑩]"
    r"|第[一二三四五六七八九十\d]{1,3}(?:个|点|条|步|件)?(?:是|[，,:：]|\s))\s*"
)
_INLINE_ITEM = re.compile(r"(?<=\s)(?=\d{1,2}\)\s)")
"""A numbered item "2) ..." that starts in the middle of a line."""
_SENTENCE_END = re.compile(r"(?<=[.!?…])\s+|(?<=[。！？；;!?])\s*|\s*(?:—|--|–)\s+")
_CLAUSE_END = re.compile(
    rf"\s*[,，、]\s*|(?<=[{_CJK}])\s+(?=[{_CJK}])"
    r"|\s+(?=(?i:and|but|so)\s+(?i:I|I'm|im|I've|ive|I'd|I'll|we|we're|we've|my|our)\b)"
    r"(?!(?i:and\s+I\s+(?:are|were))\b)"  # "my wife and I are ...": one subject
)
_OPENER = re.compile(
    r"^(?:I|I'm|I've|I'd|I'll|im|ive|we|we're|we've|we'd|we'll|my|our|me)\b|^(?:我|我们|咱们)",
    re.IGNORECASE,
)
_SHIFT = re.compile(
    r"^(?:also|plus|btw|by the way|oh and|and also|another thing|one more thing|besides)\b"
    r"|^(?:另外|还有|对了|顺便|而且我|再就是)"
    r"|^(?:以前|目标)(?!的)",  # a chain of topics typed with spaces: the past, a goal
    re.IGNORECASE,
)
_IMPLIED_SUBJECT = re.compile(
    r"^(?:(?:currently|now|also|still)\s+)?(?:work(?:ing)?\s+(?:at|for|as)|live\s+in|living\s+in|based\s+in"
    r"|drive\s+an?)\s"
    r"|^(?:现在|目前|也|还)?(?:住在|在[^，。,\s]{1,20}?(?:工作|上班|任职|实习)(?:[，,、。；;\s]|$)"
    r"|在[^，。,\s]{0,12}?(?:公司|银行|医院|学校|大学|工厂|集团|单位)(?:做|当))",
    re.IGNORECASE,
)
"""A clause that goes on about the user without repeating the subject ("I live in Austin, |work at
Dell"; "我住在杭州，|在阿里上班"): it opens a statement of its own, read with the subject."""
_CONTINUATION = re.compile(
    r"^(?:learned that|that's why|that's because|which is why|this is why)\b"
    r"|^(?:like|e\.g\.?|i\.e\.?|such as|for example|for instance|so|because|since|which"
    r"|otherwise|unless|except|especially|including|even|with|without|via|not)\b"
    r"|^(?:比如|例如|因为|所以|不然|否则|就是|尤其|特别是|包括|不是|而不是)",
    re.IGNORECASE,
)

_DETAIL = re.compile(
    r"(?<![A-Za-z0-9_.])[vV#~+]?\d+(?:[.:,/-]\d+)*(?:\.x)?[A-Za-z%]*"  # numbers, versions, sizes
    r"|\b[A-Za-z]+\d\w*"                                # S3, k8s, EC2
    r"|`[^`]+`|\"[^\"]{2,}\"|“[^”]{2,}”|《[^》]+》|「[^」]+」"  # quoted or code
    r"|[\w.~-]{0,200}[/\\][\w.~/\\-]+"                  # paths, URLs (bounded: linear time)
    r"|(?<![\w.])\.\w[\w.-]*"                          # dotfiles: .env, .npmrc
    r"|\b\w+\.(?:ya?ml|json|toml|ini|conf|cfg|env|md|txt|py|ts|tsx|js|jsx|go|rs|java|kt|rb|php|sh"
    r"|sql|db|lock|xml|html|css|vue|dart|swift|c|h|cpp)\b"
    r"|\b[a-z]+[A-Z]\w*"                               # camelCase
    r"|\b[A-Z][a-z]+[A-Z]\w*"                          # PascalCase, ThinkPad
    r"|\b[A-Z]{2,}s?\b"                                # acronyms
    r"|\b[A-Za-z]+(?:[_-][A-Za-z0-9]+)+\b"             # snake_case, kebab-case
    r"|\b[A-Za-z_]\w+\.[A-Za-z_]\w+(?:\.\w+)*\b"        # dotted names: table.column, pkg.mod
    r"|\b\w+=\S+"                                      # settings: sslmode=disable
    r"|(?<![\w-])--?[A-Za-z][\w-]*"                    # command-line flags
    r"|(?:[二两三四五六七八九十百千万]|一[二两三四五六七八九十百千万])[一二两三四五六七八九十百千万]*\s*"
    r"(?:次|天|个|年|月|周|小时|分钟|晚|人|台|岁|公里|斤|本)"             # 三次, 两年 (not 一个: "a")
)
_INNER_NAME = re.compile(r"(?<=[^.!?:\s]\s)(?!I\b|I'm\b|I've\b|I'd\b|I'll\b)[A-Z][a-z]+")
"""A capitalised word that does not start a sentence: a name."""
_LATIN_IN_CJK = re.compile(r"[A-Za-z]{2,}")
_NOT_DETAILS = frozenset({"OK", "LOL", "OMG", "BTW", "FYI", "IMO", "TBH", "ASAP", "AM", "PM", "TV", "AGAIN"})


@dataclass(frozen=True)
class Piece:
    """A run of clauses of one sentence that the extractor judges as one statement."""

    text: str
    """The clauses, verbatim (dropped clauses removed)."""
    start: int
    """Offset of the first clause in the message text."""
    end: int
    """Offset just after the last clause (including its separator)."""
    opens: bool
    """Starts with its own subject or a topic shift: a new memory begins here when it matches."""
    first_person: bool
    """Starts with a first-person subject ("I ...", "we ...", "我...")."""
    continues: bool
    """Starts like an elaboration ("like ...", "because ...", "比如..."): it belongs to the memory before."""
    sentence_start: bool
    """First piece of its sentence."""
    implied_subject: bool = False
    """Goes on about the user without a subject (`_IMPLIED_SUBJECT`): read as "I ..." / "我..."."""


@dataclass(frozen=True)
class Unit:
    """A line or list item of a message and its pieces; None between pieces marks dropped text."""

    pieces: list[Piece | None]
    list_item: bool


def units(text: str) -> list[Unit]:
    """The units of a message, each with its pieces in order.

    Example:
        >>> [[p.text if p else None for p in u.pieces] for u in units("ok. I use uv, can you help?")]
        [[None, 'I use uv']]
    """
    out = []
    for start, end in _unit_spans(text):
        marker = _LIST_MARKER.match(text, start, end)
        body_start = marker.end() if marker and marker.end() < end else start
        out.append(Unit(_pieces(text, body_start, end), list_item=marker is not None))
    return out


def has_cjk(text: str) -> bool:
    """Whether `text` holds Chinese (or other CJK) characters."""
    return bool(_HAS_CJK.search(text))


def details(text: str) -> list[str]:
    """The details in `text` (see the module docstring), in order, repeats included.

    Example:
        >>> details("we run Postgres 16 behind pgbouncer, config in ops/pg.ini")
        ['16', 'ops/pg.ini', 'Postgres']
    """
    text = text.replace(REDACTED, " ")
    found = [m.group(0) for m in _DETAIL.finditer(text) if m.group(0).strip() not in _NOT_DETAILS]
    found += [m.group(0) for m in _INNER_NAME.finditer(text)]
    if has_cjk(text):
        found += _LATIN_IN_CJK.findall(text)
    return found


def has_detail(text: str) -> bool:
    """Whether `text` names something specific (see `details`)."""
    return bool(details(text))


def _unit_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for line in re.finditer(r"[^\n]+", text):
        cuts = [line.start(), *(m.start() for m in _INLINE_ITEM.finditer(text, line.start(), line.end())),
                line.end()]
        spans.extend((a, b) for a, b in pairwise(cuts) if text[a:b].strip())
    return spans


def _pieces(text: str, start: int, end: int) -> list[Piece | None]:
    pieces: list[Piece | None] = []
    for s_start, s_end in _spans(_SENTENCE_END, text, start, end):
        clauses = _spans(_CLAUSE_END, text, s_start, s_end)
        kept = [(a, b) for a, b in clauses if not is_noise_clause(text[a:b])]
        if not kept:
            pieces.append(None)
            continue
        group: list[tuple[int, int]] = []
        first = True
        implied = False
        for a, b in clauses:
            if (a, b) not in kept:
                if group:
                    pieces.append(_piece(text, group, first, implied))
                    first, implied, group = False, False, []
                continue
            head = strip_lead(text[a:b])
            # a clause without its subject goes on about the user only after the user spoke
            goes_on = bool(group) and bool(_IMPLIED_SUBJECT.match(head)) and (
                implied or bool(_OPENER.match(strip_lead(text[group[0][0]:group[0][1]])))
            )
            if group and (_OPENER.match(head) or _SHIFT.match(text[a:b].strip()) or goes_on):
                pieces.append(_piece(text, group, first, implied))
                first, implied, group = False, goes_on, []
            group.append((a, b))
        if group:
            pieces.append(_piece(text, group, first, implied))
    return pieces


def _piece(text: str, group: list[tuple[int, int]], sentence_start: bool, implied: bool) -> Piece:
    start, end = group[0][0], group[-1][1]
    body = text[start:end].strip().rstrip(",，、;；").strip()
    head = text[group[0][0]:group[0][1]].strip()
    first_person = implied or bool(_OPENER.match(strip_lead(head)))
    return Piece(
        text=body,
        start=start,
        end=end,
        opens=first_person or bool(_SHIFT.match(head)),
        first_person=first_person,
        continues=bool(_CONTINUATION.match(head)),
        sentence_start=sentence_start,
        implied_subject=implied,
    )


def _spans(separator: re.Pattern[str], text: str, start: int, end: int) -> list[tuple[int, int]]:
    """(start, end) of the parts of text[start:end] between separators; each keeps its separator."""
    spans = []
    at = start
    for m in separator.finditer(text, start, end):
        if m.end() > at and m.start() > at:
            spans.append((at, m.end()))
            at = m.end()
    if at < end and text[at:end].strip():
        spans.append((at, end))
    return [(a, b) for a, b in spans if text[a:b].strip(" ,，、;；.。!！?？—–-")]
