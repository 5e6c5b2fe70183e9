"""The user's answer to the assistant's question about them: what the rules' wording misses.

People often state a fact only when asked: "Who helps you on the farm?" - "wife nuala does the
books, young lad cian 14 helps evenings"; "儿子多大了？" - "十四了 上初二". No first-person
wording marks these, and the answer alone lacks its topic, so the memory holds the question
before the user's words ("Who helps you on the farm? wife nuala does ..."). Only when:

- the rules found nothing in the message;
- the question is the last sentence of the assistant's message, and not an offer ("Want me to
  ...?", "要不要我..."), not about the work at hand ("What does the error say?": its answer is
  the state of the moment), not a suggestion or about this moment without asking the user
  ("Maybe take a break outside?", "今天有什么安排？": small talk; "Are you still in Berlin right
  now?" asks), not about a password, code or key (its answer may be a secret that no label
  marks);
- the answer, without its questions and requests, names a detail or has words enough to hold
  one, and is not small talk, a passing moment, a supposition, a hedge, a report of progress,
  pasted code, a bare no, not decided yet, or only a secret.
"""

from __future__ import annotations

import re

from engram.nodes.extract.filters import (
    is_chitchat,
    is_ephemeral,
    is_hedged,
    is_hypothetical,
    is_pasted,
    is_question,
    is_report,
    strip_lead,
)
from engram.nodes.extract.keys import key_in, terms
from engram.nodes.extract.text import has_detail, units
from engram.stores.memory.content import content_problem
from engram.stores.memory.types import Category, MemoryCandidate
from engram.stores.secrets import is_only_secret, redact

ANSWER_CONFIDENCE = 0.6
"""Below the rules' own (0.7): the topic comes from the assistant's question, the fact from the
user's words."""
MAX_QUESTION = 160
"""Characters of the question kept before the answer."""
MAX_AFTERWORD = 60
"""A sentence at most this long may follow the question ("... That changes how much you need.")."""

_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
_OFFER = re.compile(
    r"^(?:(?:do |would )?you (?:want|need)|(?:want|need) (?:me|a|an|some|the|to|help|more|anything)\b"
    r"|would you like|shall I|should I|can I|may I|anything else|how about|why not"
    r"|还有别的|还需要|(?:那|那就)?(?:要不|不如|或者|可以|建议))"
    r"|.*(?:要不要我|需要我|我帮你|我来帮|要我帮|给你(?:列|写|出|做))",
    re.IGNORECASE,
)
_ABOUT_THE_TASK = re.compile(
    r"\b(?:errors?|exceptions?|logs?|stack|traces?|tests?|deploy(?:s|ed|ment)?|builds?|cache[sd]?|caching"
    r"|queues?|config(?:ured|uration)?|options?|diff|commits?|branch|quer(?:y|ies)|endpoints?|requests?"
    r"|responses?|timeouts?|cpu|latency|versions?|install(?:ed)?|running|output|flags?|settings?|code"
    r"|server|database|worker|limit|memory usage|say|says|said|changed|built|going out|next on)\b"
    r"|报错|日志|错误|测试|部署|配置|版本|代码|接口|服务器|数据库|哪一步|做到|进度",
    re.IGNORECASE,
)
"""A question about the work at hand ("What does the error say?", "is the queue still rising?"):
its answer is the state of the moment, not a fact about the person."""
_ASKS_FOR_SECRET = re.compile(
    r"\b(?:pass(?:word|code|phrase)?|pin|codes?|tokens?|keys?|secrets?|cvv|cvc|ssn|login|credentials?)\b"
    r"|密码|口令|验证码|密钥|秘钥|账号|帐号",
    re.IGNORECASE,
)
"""A question whose answer may be a secret no label marks ("What's the wifi password?" - "hunter2")."""
_ADDRESSED = re.compile(r"\byou(?:r|rs|'re|'ve|'d|'ll)?\b|你|您", re.IGNORECASE)
"""A question put to the user ("Are you still in Berlin right now?"), not only about the moment
("Any plans for tonight?") or a suggestion ("Maybe take a break outside?")."""
_BARE_NO = re.compile(
    r"^(?:no|nope|nah|not (?:yet|really|sure)|none|never|dunno|idk|没有?|不是|还没|不知道|没想好|不)"
    r"[\W_]*$",
    re.IGNORECASE,
)
_HAN = re.compile(r"[\u4e00-\u9fff]")
_WORD = re.compile(r"[A-Za-z0-9']+")
_UNDECIDED = re.compile(
    r"\b(?:not sure yet|haven'?t decided|undecided|no idea yet|tbd)\b|还没想好|没想好|还没定|没定|不确定|再说吧",
    re.IGNORECASE,
)
_STILL = re.compile(
    r"\b(?:still|anymore|any more)\b|还(?:是|在|用|做|住|打算|准备|想|去|开|跑|干)|仍然|依然|继续",
    re.IGNORECASE,
)
"""A question that takes something the user said before as still true."""
_CHANGED = re.compile(
    r"(?:no|nah|nope|not any ?more|scratch|(?:i'?m |we'?re )?(?:done with|over)|quit|stopped|gave up|switched"
    r"|changed|actually no)\b"
    r"|(?:不是|不了|没有?|不|换了|换成|改成|改了|早就?不)"
    r"|.*\b(?:instead|not any ?more|no longer)\b|.*(?:换成|改成|改到|不(?:搞|做|干|用|去|考|住|开)了)",
    re.IGNORECASE,
)
"""An answer that starts by denying or says it changed."""
_CATEGORY_CUES: tuple[tuple[Category, re.Pattern[str]], ...] = (
    (
        "goal",
        re.compile(
            r"\b(?:goals?|plans?|planning|aim(?:ing)?|targets?|saving|going for|hoping|want to|trying to)\b"
            r"|目标|计划|打算|准备|规划|想要?",
            re.IGNORECASE,
        ),
    ),
    (
        "preference",
        re.compile(
            r"\b(?:prefer|like|favou?rite|enjoy|rather|usually use)\b|喜欢|爱吃|偏好|习惯",
            re.IGNORECASE,
        ),
    ),
)


def asked(assistant_text: str) -> str | None:
    """The question the assistant's message ends with (or its last sentence but a short one),
    when it asks the user something (not an offer to do something for them), redacted; else None.

    Example:
        >>> asked("Makes sense. Who helps you on the farm?"), asked("Want me to draft it?")
        ('Who helps you on the farm?', None)
        >>> asked("Still going for 120 cows? That changes how much silage you need.")
        'Still going for 120 cows?'
        >>> asked("What's your budget? Here is a first draft of the plan, with a weekly table of costs.")
    """
    sentences = [s.strip() for s in _SENTENCE_END.split(assistant_text.strip()) if s.strip()]
    if not sentences:
        return None
    last = sentences[-1]
    if len(sentences) > 1 and not _is_question_mark(last) and len(last) <= MAX_AFTERWORD:
        last = sentences[-2]  # "Still going for 120 cows? That changes how much you need."
    if (
        not _is_question_mark(last)
        or len(last) > MAX_QUESTION
        or _OFFER.match(last)
        or _ABOUT_THE_TASK.search(last)
        or _ASKS_FOR_SECRET.search(last)
        or (not _ADDRESSED.search(last) and (is_ephemeral(last) or is_hypothetical(last)))
    ):
        return None
    return redact(last).text


def _is_question_mark(sentence: str) -> bool:
    return sentence.endswith(("?", "？"))


def answer_candidate(question: str, answer: str) -> MemoryCandidate | None:
    """The memory a user's `answer` to `question` makes, or None (see the module docstring).

    Example:
        >>> answer_candidate("Who helps you on the farm?", "wife nuala does the books, cian 14 helps").content
        'Who helps you on the farm? wife nuala does the books, cian 14 helps'
        >>> answer_candidate("Any name yet?", "not yet. cavan lost again so im in no mood") is None
        True
    """
    said = statements(redact(answer).text)
    if (
        not is_statement(said)
        or _BARE_NO.match(said)
        or _UNDECIDED.search(said)
        or is_ephemeral(said)
        or is_report(said)
    ):
        return None
    content = f"{question} {said}"
    if content_problem(content) is not None:
        return None
    category = _category(question)
    key, data = key_in(said)
    if key is not None and not key.startswith(f"{category}."):
        key, data = None, None  # a term of another kind of memory ("forest" is no preference here)
    return MemoryCandidate(
        content=content,
        category=category,
        key=key,
        structured_data=data,
        confidence=ANSWER_CONFIDENCE,
    )


def changed_topic(question: str, answer: str) -> str | None:
    """What `answer` says is not true any more, when `question` took it as still true ("Still
    saving for the GPU?" - "scratch the gpu, getting a steam deck instead"; "还是报北师大新传吗？" -
    "不是 换成武大新传了"): the question without its "still"; else None. The memory it names is
    then superseded (`MemoryCandidate.replaces`).

    Example:
        >>> changed_topic("Still saving for the GPU?", "scratch the gpu, getting a steam deck instead")
        'saving for the GPU?'
        >>> changed_topic("Still saving for the GPU?", "yep, 400 of 600 now"), changed_topic("Any name yet?", "no")
        (None, None)
    """
    said = redact(answer).text.strip()
    if not _STILL.search(question) or not (
        _CHANGED.match(said) or _CHANGED.match(strip_lead(said))
    ):
        return None
    return " ".join(_STILL.sub(" ", question).split())


def statements(text: str) -> str:
    """What a message states: its pieces without fillers, questions and requests ("lettuce and
    basil. can you make me a schedule?" -> "lettuce and basil")."""
    pieces = [p.text for unit in units(text) for p in unit.pieces if p is not None]
    return strip_lead(" ".join(pieces))


def is_statement(said: str) -> bool:
    """Whether `said` (what a message states, `statements`) says something: it is not empty, only
    a secret, a question, small talk, a supposition, a hedge or pasted code, and it holds a
    detail or words enough for one (`says_something`)."""
    return not (
        not said
        or is_only_secret(said)
        or is_question(said)
        or is_chitchat(said)
        or is_hypothetical(said)
        or is_hedged(said)
        or is_pasted(said)
        or not says_something(said)
    )


def says_something(answer: str) -> bool:
    """Whether a statement holds a detail, or words enough to hold one ("十四了 上初二",
    "done with valo, its all marvel rivals now"): five words, or six Chinese characters."""
    if has_detail(answer) or terms(answer):
        return True
    return len(_HAN.findall(answer)) >= 6 or len(_WORD.findall(answer)) >= 5


def _category(question: str) -> Category:
    return next((category for category, cue in _CATEGORY_CUES if cue.search(question)), "fact")
