"""What a statement says is gone: the clause naming the thing a change retires.

Offline, only keyed attributes (`keys`) supersede, and most changes people state have no key:
"we're ditching Docker Hub, ... everything moves to ECR now", "scratch the ingress-nginx idea",
"Dr. Asante changed his levodopa to 4 times a day", "潜店就换成仙本那的一家". Each names what it
changes, next to a word that says it changed. `retired` returns that clause without the change
word ("we're Docker Hub", "the ingress-nginx idea", "潜店就 仙本那的一家"); the rule extractor
sets it as the candidate's `replaces`, and the write policy supersedes the current memory most
similar to it, when that memory is similar enough and shares a term with it (its stated-change step, as for
an answer that changes what the assistant asked about). A statement that names nothing it changes
retires nothing.

The change words are those the rules already read as a change (`keys`, `answers`, the dislikes
of `en`): no new phrasing. A sentence that asks or supposes ("should we drop Jira?", "要是把卡罗拉
换成比亚迪..."), and a clause about someone else ("my colleague switched to Zed") or about this
moment only ("soup instead of a sandwich today") retire nothing, nor do words in quotes. A clause must name two terms
besides its change word, or one name ("we dropped Jira"): "英国不去了" names too little to tell
the trip from an English teacher.
"""

from __future__ import annotations

import re

from engram.nodes.extract.filters import (
    about_someone_else,
    is_ephemeral,
    is_hypothetical,
    is_question,
)
from engram.stores.lexical.index import lexical_terms
from engram.stores.memory.write.specifics import specifics

_CHANGE = re.compile(
    r"\b(?:no longer|not any ?more|anymore|no more(?! than)|instead|scratch|ditch(?:ed|ing)?"
    r"|dropp(?:ed|ing)(?!\s+(?:from|to|by)\b)|stopped(?: using)?|gave up(?: on)?|done with|quit)\b"
    r"|\b(?:switch(?:ed|ing)?|mov(?:ed|ing)|migrat(?:ed|ing)|chang(?:ed|ing)|upgrad(?:ed|ing)"
    r"|convert(?:ed|ing)?)\b(?=.{0,60}?\bto\b)|\b(?:switched|moved|migrated) (?:away )?from\b"
    r"|换成|改成|改用|迁到|迁移到|切到|切换到|升级到|换到|换了|改了|不再|早就?不"
    r"|不(?:搞|做|干|用|去|考|住|开)(?P<object>[^，。；！？,.;!?]{0,12}?)了",
    re.IGNORECASE,
)
"""A word that says something changed or ended ("ditching", "switched ... to", "换成"); in "不用
Slack了" the words around what it names (`object`)."""
_QUOTED = re.compile(r"[\"“”「『][^\"“”「」『』]*[\"“”」』]|(?<!\w)['‘].*?['’](?!\w)")
"""Words in quotes. A change said in them is someone's words reported ("a blog post said 'we
don't use Jenkins anymore'"), not the user's; a name in them is only set apart ("we don't use
"Jira" anymore")."""
_SENTENCE = re.compile(r"(?<=[.!?。！？\n])")
_CLAUSE = re.compile(r"[,.;!?，。；！？\n]+|(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")
"""Where a clause ends: punctuation, and a space between Chinese words (typed instead of a comma;
a space around an English name is not: "剪辑不用 Audition 了")."""
MIN_TERMS = 2
"""Terms a clause must name besides its change word (the lexical index's: stemmed words, Chinese
bigrams), unless one of them is a name, number or identifier."""


def retired(text: str) -> str | None:
    """The first clause of `text` that says something changed, without its change word, when it
    names enough to find what changed; else None (see the module docstring).

    Example:
        >>> retired("ALSO we're ditching Docker Hub, everything moves to ECR")
        "ALSO we're Docker Hub"
        >>> retired("还有猫砂也换了 膨润土灰太大 现在用豆腐砂了")
        '还有猫砂也'
        >>> retired("I use Docker Hub for images"), retired("should we drop Jira?")
        (None, None)
    """
    unquoted = _QUOTED.sub(lambda q: " " if _CHANGE.search(q.group()) else q.group(), text)
    for sentence in _SENTENCE.split(unquoted):
        if is_question(sentence) or is_hypothetical(sentence):
            continue
        for clause in _CLAUSE.split(sentence):
            found = _CHANGE.search(clause)
            if found is None or _passing(clause):
                continue
            named = found.group("object") or ""
            topic = " ".join(f"{clause[:found.start()]} {named} {clause[found.end():]}".split())
            if len(lexical_terms(topic)) >= MIN_TERMS or specifics(topic):
                return topic
    return None


def _passing(clause: str) -> bool:
    """A clause that changes nothing of the user's: a supposition, someone else's change, a
    change of this moment only."""
    return is_hypothetical(clause) or about_someone_else(clause) or is_ephemeral(clause)

