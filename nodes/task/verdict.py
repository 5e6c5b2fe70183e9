"""Whether a user's reply says the run just done did not work: a procedure learned from a run
waits for this verdict (`engram.nodes.procedures`).

Example:
    >>> said_it_failed("that didn't work, same error"), said_it_failed("great, thanks!")
    (True, False)
    >>> said_it_failed("Works, thanks! Can you check why the nightly job failed?")
    False
"""

from __future__ import annotations

import re

from engram.nodes.text.sentences import split_sentences

_NEG = (
    r"(?:(?:did|does|do|is|was|are|were|will|can|could|has|have)(?: not|n'?t)|won'?t|can'?t"
    r"|not|never|no longer)"
)
_SUBJECT = (
    r"(?:(?:^|[,;:]\s*|\b(?:and|but|so|now|hmm|nope|no|because)\s+)(?:that|this|which)"
    r"|\b(?:it|they|you))"
)
"""What was just done as a subject: "it", or "that" starting a clause (not "the tests that
failed")."""
_ABOUT_RESULT = re.compile(
    # "that didn't work", "it doesn't seem to help", "nope, not working", "you didn't fix it"
    rf"(?:^|[,;:]\s*|{_SUBJECT}(?:'s|'re| is| was| are| were| has| had)?\s+)"
    rf"(?:still\s+|also\s+)?{_NEG}\s+(?:\w+\s+){{0,2}}?"
    r"(?:work|working|worked|fix|fixed|help|helped|helping|solve|solved|right|correct"
    r"|change anything|do anything)\b"
    # "it failed", "that's wrong", "why is it still failing", "failed again", "same error"
    rf"|{_SUBJECT}(?:'s| is| was| has| had)?\s+(?:still\s+)?"
    r"(?:fail|failed|failing|fails|broken|wrong|crashing|crashed)\b"
    r"|\b(?:failed|fails|failing|broken|wrong|crashed) again\b"
    r"|\bstill (?:the )?same\b|\bsame (?:error|problem|issue|result|output)\b"
    r"|\bstill (?:getting|seeing|failing|fails|failed|broken|crashing|crashes|wrong|an error"
    r"|not\b|does ?n'?t|did ?n'?t)"
    r"|\bno luck\b|\bnot what i (?:asked|wanted|meant)\b|\bbroke (?:it|something|everything)\b"
    r"|\bmade it worse\b"
    r"|还是(?:不行|不对|报错|有问题|一样|失败|没用|错|老样子|不能|没)|没用|没有用|不管用|没效果|没有效果"
    r"|不起作用|没起作用|没解决|没有解决|没成功|没有成功|更糟"
)
"""A phrase about what was just done not working: it counts wherever the reply is judged."""
_VERDICT = re.compile(
    r"\b(?:fail|failed|fails|failing|broken|broke|wrong|incorrect|nope|stale"
    r"|not (?:right|correct|working|fixed|it)"
    r"|(?:did|does|do|is|was|has)(?: not|n'?t) (?:\w+ ){0,2}?(?:work|fix|help|solve|change)\w*"
    r"|still (?:down|there|broken|failing|wrong|stale|the same|happening|crashing|an? error)"
    r"|i still (?:get|see|have))\b"
    r"|不行|失败|(?<![报出])错了|不对|(?<!没)有问题|(?<![不没])报错|(?<![不没])出错"
)
"""A word that says something failed: a verdict on the last run only in a reply that is not a
new request ("失败了", "nope", but not "Now find out what is wrong with payments")."""
_WORKED = re.compile(
    r"(?:(?:ok(?:ay)?|yes|yep|yeah|wow|oh)\W+)*(?:(?:it|that|this)(?:'s| is| was)?\s+)?"
    r"(?:now\s+)?(?:works?|worked|working|fixed|solved|did it|did the trick|perfect|great"
    r"|awesome|excellent|nice|cool|thanks|thank you|thx|ty|done|good|looks good|lgtm)\b"
    r"|好了|可以了|行了|成功了|解决了|搞定|谢谢|多谢|完美|太好了|不错|好的|没问题"
)
"""How a reply that says it worked starts ("Works, thanks!", "thanks, that fixed it", "好了")."""
_REQUEST = re.compile(
    r"(?:(?:ok(?:ay)?|so|and|also|then|now|next|please|pls)\W+)*"
    r"(?:please|pls|can|could|would|will|let'?s|why|what|how|where|when"
    r"|which|who|is there|are there|find|check|look|fix|help|show|tell|make|add|write|create"
    r"|run|investigate|debug|figure|see|give|list|explain|update|deploy|build|open|read|search"
    r"|i need|i want|i'd like)\b"
    r"|现在|接下来|然后|下一步|再|请|帮我|帮忙|麻烦|看看|看一下|查一下|查查|为什么|怎么|如何|能不能|能否"
    r"|可以帮|另外|还有|顺便"
)
"""How a reply that asks for something new starts."""
_CONTRAST = re.compile(r"\b(?:but|however|though)\b|但是?|可是|不过")
_INTERJECTION = re.compile(
    r"(?:ok(?:ay)?|hmm*|well|so|uh+|um+|oh+|ah+|sorry|alright|嗯+|哦+|呃+|好吧)\W*"
)


def said_it_failed(text: str) -> bool:
    """Whether a user's message says that what was just done did not work.

    What judges the last run is the reply's first sentence (after an "ok." or "hmm."), and what
    a "but" or a "though" in it or in the next sentence says: a failure there counts ("Thanks,
    but the output is wrong", "ok thanks. the deploy failed though") unless it asks for
    something new. A reply that then starts by saying it worked ("Works, thanks!", "好了") did
    not fail; a phrase about the result ("that didn't work", "still the same error", "还是不行",
    "没用") counts, even in a question ("why did it fail?"); a new request names its own
    problems ("Perfect! Next: fix the failing tests", "Can you check why the nightly job
    failed?"); otherwise a failure word in the first sentence ("Now the login page is broken",
    "I still get a 502") or a phrase about the result later counts. Missing a failure stores
    steps that did not work, so the words lean that way.

    Example:
        >>> said_it_failed("Thanks! But it still doesn't work."), said_it_failed("还是不行")
        (True, True)
        >>> said_it_failed("Now find out what is wrong with payments")
        False
    """
    text = text.casefold().replace("\u2019", "'")
    sentences = [s for s in split_sentences(text) if not _INTERJECTION.fullmatch(s)]
    if not sentences:
        return False
    head, *rest = sentences
    # what follows a "but" (in the first sentence, or the next one) judges the run, unless it
    # asks for something new ("but can you check the failing lint job?")
    contrasts = [*_CONTRAST.split(head)[1:], *(_CONTRAST.split(rest[0])[1:] if rest else [])]
    contrasts += [  # "... the deploy failed though"
        s.rstrip(" .!?")[: -len("though")] for s in [head, *rest[:1]]
        if s.rstrip(" .!?").endswith(" though")
    ]
    for clause in (c.strip(" ,;:") for c in contrasts):
        if clause and not _REQUEST.match(clause) and (
            _ABOUT_RESULT.search(clause) or _VERDICT.search(clause)
        ):
            return True
    head = _CONTRAST.split(head)[0].strip()
    if _WORKED.match(head):
        return False
    if _ABOUT_RESULT.search(head):
        return True
    if _REQUEST.match(head):
        return False
    return bool(_VERDICT.search(head)) or any(_ABOUT_RESULT.search(s) for s in rest)
