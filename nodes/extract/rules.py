"""The offline memory extractor: first-person statements found by rules, English and Chinese.

Used when no memory model is configured. It reads the user's
messages (the assistant's replies are not facts about the user; only a question the user answers
is kept with the answer, see `answers`) and keeps, verbatim, the statements that say something
durable, so names, versions, numbers and paths survive:

1. secrets are redacted from the message first (`engram.stores.secrets`);
2. the message is cut into pieces (`text`): lines and list items, sentences, clauses;
   fillers, questions and requests are dropped;
3. each piece is judged by the rules (`en`, `zh`, first match wins; see there
   for what each category looks like) and the filters (`filters`: small talk, passing
   moments, hypotheticals, hedges, other people's tastes); a piece that lists two or more details
   without a verb ("node 20, fastify 4, on EKS") is a project fact;
4. pieces become memories: a matching piece starts a memory, unless it goes on with the one before
   (same category and no new subject, or an elaboration such as "like ..." or "比如..."); pieces
   that match nothing extend the memory before them, or lead into the next one of their unit; a
   list item is one memory, and a goal when the user announced a list of goals ("my goals for
   this year", "几个目标") earlier in the window or its context;
5. a memory from a weak rule needs a detail; a statement about a single-valued attribute gets a
   supersede key (`keys`);
6. a statement that names what it changes ("we're ditching Docker Hub") replaces the memory it
   names (`retired`, `MemoryCandidate.replaces`), also from a message the rules kept nothing
   else of (an update-only candidate: written only where it retires a memory).

Limits (what an LLM extractor does better): no pronoun resolution or paraphrase (the memory is the
user's words); a fact split over several messages ("they put me on Harbor" ... "kotlin 1.9,
java 21"), a fact only the assistant stated and the user confirmed ("that was it"), and
statements implied rather than said are missed; sarcasm is taken literally; only attributes
known to `keys` get keys, so other changes do not supersede (the merge step may still
catch near-identical restatements), except where a statement names what it changes
(`retired`: "scratch the ingress-nginx idea" retires the memory about ingress-nginx); a long
technical chat yields observations that were true only for a moment ("the heap is at 400MB")
when they read like configuration.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from engram.nodes.extract.answers import answer_candidate, asked, changed_topic
from engram.nodes.extract.casual import spelled_out
from engram.nodes.extract.en import RULES as EN_RULES
from engram.nodes.extract.filters import (
    about_someone_else,
    is_aside,
    is_chitchat,
    is_ephemeral,
    is_hedged,
    is_hypothetical,
    is_pasted,
    is_report,
    points_back,
    strip_lead,
)
from engram.nodes.extract.keys import key_for, key_in, terms, value_after
from engram.nodes.extract.patterns import Rule, first_match, rx
from engram.nodes.extract.retired import retired
from engram.nodes.extract.text import Piece, Unit, details, has_cjk, has_detail, units
from engram.nodes.extract.updates import update_candidates
from engram.nodes.extract.zh import RULES as ZH_RULES
from engram.nodes.text.tokens import message_content
from engram.stores.memory.content import content_problem
from engram.stores.memory.types import MemoryCandidate
from engram.stores.secrets import REDACTED, is_only_secret, redact

RULE_CONFIDENCE = 0.7
"""Confidence given to rule-extracted memories (a fixed prior: rules guess more than a model)."""

_INVENTORY = Rule("project", rx(r"^"), strong=False)
"""A fragment naming two or more details without a rule's wording ("512Mi limit, 256Mi request")."""
_LISTED_GOAL = Rule("goal", rx(r"^"))
"""An item of a list the user announced as goals."""
_GOAL_LIST = rx(
    r"\b(?:goals?|resolutions?|objectives|bucket list|planning|plans for|to-?do list|targets)\b"
    r"|目标|计划|规划|心愿|愿望|立个?flag"
)
_NUMERIC = re.compile(r"^[~+#]?\d+(?:[.,]\d+)?$|^[一二两三四五六七八九十百千万]+")
"""A detail that is only a number or a counted quantity (not an address, a time or a version)."""
_TOPIC_WINDOW = 8
"""How many earlier user messages an announced list of goals holds for."""


@dataclass
class _Draft:
    """A memory being assembled: the rule that started it and its pieces."""

    rule: Rule
    match: re.Match[str]
    head: str
    """The text the rule matched (the starting piece without its leading fillers)."""
    pieces: list[Piece] = field(default_factory=list)


class RuleExtractor:
    """The offline extractor (see the module docstring for what it finds and what it misses).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> msgs = [HumanMessage("hi! I prefer Svelte over React now.", id="m1"), AIMessage("Noted.")]
        >>> [(c.category, c.content, c.key) for c in RuleExtractor().extract(msgs)]
        [('preference', 'I prefer Svelte over React now.', 'preference.frontend_framework')]
    """

    mode = "offline"

    def __init__(self, *, follow_changes: bool = True) -> None:
        """Args:
            follow_changes: A statement that names what it changes ("scratch the ingress-nginx
                idea") replaces the memory it names (`engram.nodes.extract.retired`), also when
                the rules kept nothing else of its message (an update-only candidate). Off
                under a memory model, whose merge decision judges changes.
        """
        self.follow_changes = follow_changes

    async def aextract(
        self, messages: Sequence[BaseMessage], *, context: Sequence[BaseMessage] = ()
    ) -> list[MemoryCandidate]:
        """Candidates from the user's messages in `messages`; `context` may announce a goal list."""
        return self.extract(messages, context=context)

    def extract(
        self, messages: Sequence[BaseMessage], *, context: Sequence[BaseMessage] = ()
    ) -> list[MemoryCandidate]:
        """Candidates from the user's messages, in order, one per statement found, then the
        updates that name what they change."""
        proposed, updates = self.propose(messages, context=context)
        return [*proposed, *(u for u in updates if u.replaces is not None)]

    def propose(
        self, messages: Sequence[BaseMessage], *, context: Sequence[BaseMessage] = ()
    ) -> tuple[list[MemoryCandidate], list[MemoryCandidate]]:
        """`extract`'s candidates apart: the statements the rules read, and an update-only
        candidate for each user message they kept nothing from (`engram.nodes.extract.updates`),
        with what it names as changed (`replaces`; None when it names nothing, or with
        `follow_changes` off)."""
        earlier = [message_content(m) for m in context if isinstance(m, HumanMessage)]
        question = _question_in(context[-1]) if context else None
        found: dict[str, MemoryCandidate] = {}
        for message in messages:
            if not isinstance(message, HumanMessage):
                question = _question_in(message)
                continue
            text = message_content(message)
            goal_list = any(_GOAL_LIST.search(t) for t in earlier[-_TOPIC_WINDOW:])
            candidates = message_candidates(text, goal_list=goal_list)
            if self.follow_changes:
                for candidate in candidates:
                    candidate.replaces = retired(candidate.content)
            if not candidates and question is not None:
                candidates = [c for c in [answer_candidate(question, text)] if c is not None]
            replaces = changed_topic(question, text) if question is not None else None
            for candidate in candidates:
                candidate.message_ids = [message.id] if message.id else None
                candidate.replaces = replaces or candidate.replaces
                found.setdefault(candidate.content.casefold(), candidate)
            earlier.append(text)
            question = None
        proposed = list(found.values())
        updates = update_candidates(messages, proposed)
        if self.follow_changes:
            for update in updates:
                update.replaces = retired(update.content)
        return proposed, updates


def _question_in(message: BaseMessage) -> str | None:
    """The question an assistant's message ends with, asking the user (see `answers`)."""
    return asked(message_content(message)) if isinstance(message, AIMessage) else None


def classify(statement: str) -> MemoryCandidate | None:
    """The first candidate a statement makes, or None (question, request, small talk, no rule,
    only a secret).

    Example:
        >>> classify("我们用的 MySQL 8").key, classify("what's the best editor?")
        ('project.database', None)
    """
    return next(iter(message_candidates(statement)), None)


def message_candidates(text: str, *, goal_list: bool = False) -> list[MemoryCandidate]:
    """The memories one user message states (secrets redacted).

    Args:
        text: The message.
        goal_list: Whether the user announced a list of goals just before: list items are goals.
    """
    text = redact(text).text
    out = []
    for unit in units(text):
        for draft in list(_drafts(unit, text, goal_list)):
            candidate = _candidate(draft, text)
            if candidate is not None:
                out.append(candidate)
    return out


@dataclass(frozen=True)
class _Hit:
    """What `_judge` found in a piece."""

    rule: Rule
    match: re.Match[str]
    head: str
    """The piece without its leading fillers: the text the rule matched."""
    points_back: bool = False
    """The statement's object only points back ("I really like it"): it confirms what came before."""


def _reading(text: str, implied_subject: bool = False) -> str:
    """What the rules read of a piece: its leading fillers left out, chat spellings written out
    (English), and its subject when it is implied ("..., work at Dell" reads "I work at Dell")."""
    head = strip_lead(text)
    if has_cjk(head):
        return f"我{head}" if implied_subject else head
    head = spelled_out(head)
    return f"I {head}" if implied_subject else head


def _judge(text: str, implied_subject: bool = False) -> _Hit | None:
    """The rule a piece matches after the filters, or None (see `_reading`)."""
    head = _reading(text, implied_subject)
    if len(head) < 3 or is_hypothetical(head):
        return None
    found = first_match(
        head,
        ZH_RULES if has_cjk(head) else EN_RULES,
        lambda rule, match: not _names_a_tool(rule, match, head),
    )
    if found is None and _lists_details(head):
        found = _INVENTORY, _INVENTORY.pattern.match(head)
    if found is None:
        return None
    rule, match = found
    if rule.kind != "other" and about_someone_else(head):
        return None
    if (not rule.strong or rule.category in ("goal", "fact", "project")) and (
        is_ephemeral(head) or is_chitchat(head)
    ):
        return None
    if not rule.strong and (is_hedged(head) or is_pasted(head)):
        return None
    if not rule.strong and rule.category != "lesson" and is_report(head):
        return None  # a lesson is a report by nature ("bumping the timeout helped")
    back = rule.kind in ("pref", "neg") and points_back(head[match.end():])
    return _Hit(rule, match, head, points_back=back)


def _names_a_tool(rule: Rule, match: re.Match[str], text: str) -> bool:
    """Whether where the user moved is a known tool: "I moved to Postgres" (or "from MySQL to
    ...") is a preference, not an address."""
    if rule.kind != "fact.location":  # a company may share a tool's name ("I work at Vercel")
        return False
    return bool(terms(f"{match.group(0)} {value_after(text, match.end())}"))


def _drafts(unit: Unit, text: str, goal_list: bool) -> Iterable[_Draft]:
    """Group a unit's pieces into memories (step 4 of the module docstring)."""
    current: _Draft | None = None
    lead: Piece | None = None
    for piece in unit.pieces:
        if piece is None:
            if not unit.list_item:
                current = None
            lead = None
            continue
        hit = _judge(piece.text, piece.implied_subject)
        if current is None and lead is not None:
            # a rule may need the whole sentence ("to deploy, we run ...")
            joined = _judge(text[lead.start:piece.end])
            if joined is not None and (hit is None or _rank(joined.rule) < _rank(hit.rule)):
                hit = joined
        if unit.list_item and goal_list and current is None and (hit is None or hit.rule.category == "preference"):
            # an item of an announced goal list is a goal, also a routine ("每周去健身房三次")
            head = strip_lead(piece.text)
            hit = _Hit(_LISTED_GOAL, _LISTED_GOAL.pattern.match(head), head)
        if hit is not None and hit.points_back and current is None and lead is None:
            hit = None  # "I like it" with nothing before it to like
        if hit is None:
            passing = (
                is_chitchat(piece.text) or is_ephemeral(piece.text) or is_hypothetical(piece.text)
                or (piece.sentence_start and not piece.first_person and is_aside(piece.text))
            )
            if current is not None and not passing:
                current.pieces.append(piece)
            elif current is not None:
                current = None
            else:
                lead = None if passing or piece.first_person else piece
            continue
        if current is not None and (
            unit.list_item
            or piece.continues
            or hit.points_back
            or (not piece.opens and hit.rule.category == current.rule.category)
        ):
            current.pieces.append(piece)
            continue
        current = _Draft(hit.rule, hit.match, hit.head, [p for p in (lead, piece) if p is not None])
        lead = None
        yield current


def _rank(rule: Rule) -> int:
    """A rule's priority: its place in its language's list (lower wins)."""
    rules = ZH_RULES if rule in ZH_RULES else EN_RULES
    return rules.index(rule) if rule in rules else len(rules)


def _lists_details(text: str) -> bool:
    """Two or more details, one of them more than a number."""
    found = set(details(text))
    named = [d for d in found if not _NUMERIC.match(d)]
    return len(found) >= 2 and bool(named)


def _candidate(draft: _Draft, text: str) -> MemoryCandidate | None:
    # A piece after the first that holds a redacted secret ("my key is [REDACTED]", "my passport
    # number is [REDACTED] for the visa") is not part of what the memory says.
    pieces = [draft.pieces[0], *(p for p in draft.pieces[1:] if REDACTED not in p.text)]
    content = _content(pieces, text)
    if content_problem(content) is not None or is_only_secret(content):
        return None
    said = " ".join(p.text for p in pieces)
    if not draft.rule.strong and not (has_detail(said) or terms(said)):
        return None
    key, data = key_for(draft.rule, draft.match, draft.head)
    if key is None and draft.rule.kind == "neg" and len(pieces) > 1:
        # a dislike whose later pieces name what replaced it ("I no longer use X, I'm on Y now")
        said_all = _reading(content)
        match = draft.rule.pattern.search(said_all)
        whole = key_for(draft.rule, match, said_all) if match else (None, None)
        if whole[0] is not None:
            key, data = whole
    if data is None:
        key, data = key_in(content)
    return MemoryCandidate(
        content=content, category=draft.rule.category, key=key, structured_data=data,
        confidence=RULE_CONFIDENCE,
    )


def _content(pieces: list[Piece], text: str) -> str:
    """The pieces' text from the message, verbatim from the first piece's statement on (leading
    fillers such as "ok so" or "please remember that" left out); runs that are not adjacent are
    joined by a space."""
    runs: list[list[Piece]] = []
    for piece in pieces:
        if runs and runs[-1][-1].end >= piece.start:
            runs[-1].append(piece)
        else:
            runs.append([piece])
    parts = []
    for run in runs:
        raw = text[run[0].start:run[-1].end]
        if not parts:
            first = text[run[0].start:run[0].end].strip()
            raw = raw.strip()[len(first) - len(strip_lead(first)):]
        parts.append(raw.strip().rstrip(",，、;；—-").strip())
    return " ".join(p for p in parts if p)
