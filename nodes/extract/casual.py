"""English as typed in quick chats, spelled out for the rules: "im vegetarian" reads as "I'm
vegetarian", "i wanna break 60" as "I want to break 60", "bc" as "because".

Only words that mean one thing in a chat are expanded (not "ill", "id", "were" or "wont"); the
rules read the spelled-out text, while a memory keeps the user's own words.
"""

from __future__ import annotations

import re

_SPELLINGS = {
    "i": "I", "im": "I'm", "ive": "I've", "iam": "I am", "dont": "don't", "doesnt": "doesn't",
    "didnt": "didn't", "cant": "can't", "isnt": "isn't", "wasnt": "wasn't", "arent": "aren't",
    "havent": "haven't", "hasnt": "hasn't", "wouldnt": "wouldn't", "couldnt": "couldn't",
    "shouldnt": "shouldn't", "thats": "that's", "theyre": "they're", "youre": "you're",
    "shes": "she's", "hes": "he's", "wanna": "want to", "gonna": "going to", "gotta": "have to",
    "u": "you", "ur": "your", "bc": "because", "cuz": "because", "coz": "because", "b/c": "because",
    "w/": "with", "w/o": "without", "rn": "right now", "atm": "at the moment", "tho": "though",
    "pls": "please", "plz": "please", "ppl": "people", "bf": "boyfriend", "gf": "girlfriend",
}
_WORD = re.compile(
    r"(?<![\w'/])(?:" + "|".join(re.escape(w) for w in sorted(_SPELLINGS, key=len, reverse=True))
    + r")(?![\w'/]|\.\w)",
    re.IGNORECASE,
)


def spelled_out(text: str) -> str:
    """`text` with chat spellings written out.

    Example:
        >>> spelled_out("im a nursing major, i wanna switch bc clinicals clash w/ track")
        "I'm a nursing major, I want to switch because clinicals clash with track"
    """
    return _WORD.sub(lambda m: _SPELLINGS[m.group(0).casefold()], text)
