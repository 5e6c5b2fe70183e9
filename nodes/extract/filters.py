"""What the offline extractor never keeps: fillers, questions, requests, small talk, passing
moments, hypotheticals, hedges, other people's tastes and objects that only point back into the
chat. English and Chinese, written for text as people type it (lowercase, no punctuation).
"""

from __future__ import annotations

import re

_FILLER_WORDS = (
    r"ok|okay|kk|cool|nice|great|perfect|awesome|amazing|thanks|thank you|thx|ty|tysm|yes|yep|yeah"
    r"|yup|ya|nope|nah|sure|fair enough|lol|lmao|haha|hahaha|heh|ugh|hmm+|oh|ah|aha|oops|wow|whoa"
    r"|hey|hi|hello|yo|morning|good morning|evening|bye|bye for real|brb|alright|got it|makes sense"
    r"|good catch|good point|good shout|good to know|sounds good|exactly|indeed|agreed|sorry|anyway"
    r"|actually|honestly|so|and|but|also|then|welp|meh|phew|yay|woohoo|omg|oh no|oh right"
    r"|oh wait|ok cool|looks good|all green|ship it|nice one|cheers|np|no worries|for real"
)
_FILLER_BEFORE_PUNCT = r"no|right|well|fine|same|true|done|later|wait|k|fair|perfect|great"
"""Fillers only when punctuation follows ("no, ..."): otherwise they start a statement ("no class inheritance")."""
_FILLER_ZH = (
    r"好|好的|好吧|好滴|行|行吧|嗯+|哦+|噢|喔|对+|对的|是的|是啊|可以|可以的|谢谢|谢啦|多谢|感谢|哈+|嘿+|呵呵"
    r"|早|早啊|在吗|收到|明白|懂了|了解|没问题|完美|不错|不错不错|太好了|好主意|真香|唉|哎|啊|呀|嗯嗯|ok|OK"
    r"|回来了|等下|稍等|算了|就这样|先这样|就它了|就它|就这个|对对对|真的|厉害|牛|绝了|emmm+|呃|额"
)
_LEAD = re.compile(
    rf"^(?:[^\w\"'`]+|(?:{_FILLER_WORDS}|oh and|and also|and then|by the way|btw|plus|while I have you"
    r"|speaking of \w+|quick one|quick question|quick q|random q|random question|one more thing|big one|last thing"
    r"|(?:please |can you |could you )?(?:remember|note|keep in mind)(?:\s+that\b|:)|for the record"
    r"|just so you know|fyi"
    rf"|one last thing|side note|fwiw|tbh|imo)\b[\s,.:;!~—-]*|(?:{_FILLER_BEFORE_PUNCT})[,.:;!~—-]+\s*"
    rf"|(?:{_FILLER_ZH})(?:[\s,，。.!！:：~]+|$)"
    r"|还有(?=[\s,，]|我)"
    r"|(?:但是|不过|而且|另外|所以|然后|对了|顺便说一下|顺便|跟你说下|跟你说个事|跟你说|先说下|先说几个情况"
    r"|话说|其实|反正|(?:请)?(?:记住|记一下|备注)[：:，,]?)[\s,，。.!！:：~]*)",
    re.IGNORECASE,
)
_ONLY_FILLER = re.compile(
    rf"^(?:(?:{_FILLER_WORDS}|{_FILLER_BEFORE_PUNCT}|{_FILLER_ZH})[\s\W_]*)+$", re.IGNORECASE
)

_QUESTION_EN = re.compile(
    r"\?\s*$"
    r"|^(?:what|how|why|where|who|which|whose|when)(?:'s|'re|\s+(?:is|are|was|were|do|does|did|can|could"
    r"|should|would|will|about|if|much|many|long|often|kind|sort|type|version|one|ones|else))\b"
    r"|^how\b|^why\b"
    r"|^(?:what|which|whose|how many|how much)\b.*\b(?:should|would|could|can|do|does|did|is|are|will)\s+"
    r"(?:i|we|you|it|they)\b"
    r"|^(?:is|are|was|were|does|did|can|could|should|would|will|has|isn't|aren't|doesn't|won't|shouldn't"
    r"|wouldn't|can't|didn't)\s+\w"
    r"|^(?:can|could|would|will|should|shall|do|does|did|is|are|am|was|were|have|has|may|might|any)\s+"
    r"(?:i|you|we|it|he|she|they|there|this|that|these|those|my|our|your|the|a|an|anyone|someone|ideas?)\b",
    re.IGNORECASE,
)
_QUESTION_ZH = re.compile(
    r"[吗呢么嘛][。！!？?~～]*$|[?？]\s*$|^(?:请问|问一下|问下|问问|问个|想问|我想问|我想知道)"
    r"|怎么|为什么|为啥|(?<!没)什么(?!都)|啥|咋|哪(?:个|里|儿|些|家|种|天)|多少|几(?:个|天|点|号|次|种)"
    r"|是不是|要不要|有没有|能不能|可不可以|会不会|用不用|够不够|行不行|好不好|对不对|该不该"
)
_REQUEST = re.compile(
    r"^(?:please\s+|pls\s+)?(?:can|could|would|will)\s+(?:you|u)\b"
    r"|^(?:please\s+|pls\s+)?(?:help|show|tell|give|write|draft|make|create|generate|explain|fix|check"
    r"|review|sketch|scaffold|build me|find|translate|summari[sz]e|remind me|walk me|suggest|recommend"
    r"|let's|lets|let me|start with|go ahead|do that|do it|keep that|keep it|add that|try|rewrite"
    r"|refactor|list them|paste|send|look at|take a look|(?:i\s+)?need (?:some |your |a little |a bit of )?help)\b"
    r"|^(?:请)?(?:帮我|帮忙|帮|请你|你帮|你给|你能|你可以|你觉得|你说慢|你慢|你再|你讲|你教|你还是|麻烦|给我|提醒我|记一下|记着|你记|先帮|再帮|看看"
    r"|看下|你看|我看下|我看看|我试试|试试|我去(?!年|过|了|世))",
    re.IGNORECASE,
)
_RULE_WORDS = re.compile(
    r"\b(?:always|never)\b|\bkeep (?:it|things|answers|replies) (?:short|simple|brief|concise|plain)\b"
    r"|总是|永远|一律|不要|别",
    re.IGNORECASE,
)
"""Words that make a request a lasting rule ("keep it short", "别用术语")."""

_CHITCHAT = re.compile(
    r"\b(?:weather|rain(?:ing|y|ed)?|snow(?:ing|ed)?|sunny|cloudy|humid|freezing|heatwave|joke|jokes"
    r"|movie|movies|tv show|netflix|burrito|hangover|hungover|exhausted|sleepy|bored|stressed"
    r"|what a day|long day|crazy day|how are you|good night|nice to meet you|tonight's game|match"
    r"|derby|getting a cold|headache|hoarse|traffic|commute|(?:in )?no mood|(?:lost|won) again)\b"
    r"|天气|下雨|下雪|晴天|阴天|热死|冷死|好热|好冷|笑话|(?:点|叫|吃|订)了?(?:个|份)?外卖|吃饭去|吃饭了|麻辣烫|咖啡(?!馆|店|厅)|地铁|堵车|累了|好累|困了"
    r"|烦死|压力山大|无聊|晚安|早安|感冒|头疼|说多了都是泪",
    re.IGNORECASE,
)
_LAUGHED_OFF = re.compile(
    r"\b(?:lol|lmao|lmfao|rofl|haha+|hehe+|jk)\W*$|[😂🤣😅]\W*$|(?:哈){2,}\W*$", re.IGNORECASE
)
_EPHEMERAL = re.compile(
    r"\b(?:today|tonight|right now|this morning|this afternoon|this evening|this week|tomorrow"
    r"|in a bit|in an hour|one sec|for now|at the moment|rn|just now|later today|meanwhile)\b"
    r"|今天|今晚|刚才|刚刚|待会|等会|一会儿|马上|明天|这周|本周|晚点|现在先|暂时",
    re.IGNORECASE,
)
_HYPOTHETICAL = re.compile(
    r"^(?:if|what if|suppose|supposing|imagine|assuming|in case|maybe|perhaps|hypothetically"
    r"|might|wondering|not sure)\b(?!\s+you\b.*\b(?:use|prefer|pick|write|go with)\b)"
    r"|^(?:如果|假如|要是|万一|假设|也许|或许|说不定|不知道|我在想|在想)",
    re.IGNORECASE,
)
_HEDGE = re.compile(
    r"\b(?:i think|i guess|i suppose|probably|maybe|not sure|perhaps|might|kinda|sort of|i assume"
    r"|looks like|seems like|seems to|could be)\b"
    r"|好像|可能|也许|估计|应该是|大概吧",
    re.IGNORECASE,
)
_THIRD_PARTY = re.compile(
    r"^(?:my |our |the |a |his |her )?(?:friend|friends|coworker|coworkers|colleague|colleagues|boss"
    r"|team|teammate|teammates|someone|somebody|everyone|everybody|people|they|he|she|his|her|their"
    r"|whole team|client|clients|customer|customers|users?)\b"
    r"|^(?:我的?)?(?:朋友|同事|老板|领导|同学|他们|她们|他|她|别人|大家|有人|团队|客户)",
    re.IGNORECASE,
)
_REPORT = re.compile(
    r"\b(?:error|errors|exception|trace|traceback|log|logs|warning|output|dashboard|graph|metrics?)\s+"
    r"(?:says|say|shows?|showed|said|reads?)\b|\btook\s+(?:\d|a|an|about|like|ages)|\bthis time\b"
    r"|^I\s+(?:just\s+)?(?:pushed|merged|deployed|restarted|ran|checked|tried|opened|closed|rebased|reverted"
    r"|updated|bumped|fixed|found|added|wrote|changed|removed|deleted|killed)\b"
    r"|\bfrom\b.*\bto\b|\b(?:went|goes|going|dropped|jumped|climbed|grew|rose|fell|down|up|back)\s+(?:from|to|by"
    r"|a lot)\b|\bafter\s+\d+|\bnow at\b|\bgoing up\b|\bin a row\b"
    r"|\b(?:deploying|pushing|merging|installing|rebuilding|restarting|rolling out)\b|^there(?:'s| is| are)\b"
    r"|从.{1,12}到|降到|涨到|变成|还在|快.{1,8}了|(?:写|做|弄|搞|改)完|搞定|完成了|过了|好了|上线了"
    r"|(?:跑|用|花|等)了\s*\d+\s*(?:分钟|秒|小时)|日志里|报错(?:是|说)|全是|卡在|卡住|我(?:刚|刚刚)?(?:重启|推|合并|部署|改|删)了",
    re.IGNORECASE,
)
_PASTED = re.compile(
    r"^\s*[\"“`']|=>|\(\{|\}\)|;\s*$|^\s*(?:export|import|const|let|var|def|function|return|class|SELECT|sudo)\s",
)
_POINTS_BACK = re.compile(
    r"^(?:it|this|that|these|those|them|you|him|her|so|too|a lot|very much|both)\b"
    r"|^(?:the |that |this |your )?(?:first |second |third |last |other |former |latter |previous |new )?"
    r"(?:one|option|approach|version|idea|answer|solution|suggestion|way|draft|reply|response)s?\W*$"
    r"|^(?:它|这|那|这个|那个|你)",
    re.IGNORECASE,
)


def strip_lead(text: str) -> str:
    """`text` without leading fillers, interjections and conjunctions ("oh and so I ..." -> "I ...").

    Example:
        >>> strip_lead("ok so. yeah I use uv"), strip_lead("嗯 对了 我喜欢深色模式")
        ('I use uv', '我喜欢深色模式')
    """
    text = text.strip()
    while True:
        stripped = _LEAD.sub("", text, count=1).strip()
        if stripped == text:
            return text
        text = stripped


def is_noise_clause(clause: str) -> bool:
    """Whether a clause says nothing to keep: a filler, a question or a request.

    Example:
        >>> [is_noise_clause(c) for c in ("thx!", "can you help", "要不要也管一下", "I use uv")]
        [True, True, True, False]
    """
    text = clause.strip().rstrip(",，、;；")
    if not text or _ONLY_FILLER.match(text):
        return True
    head = strip_lead(text)
    if not head:
        return True
    return is_question(text) or (bool(_REQUEST.match(head)) and not _RULE_WORDS.search(head))


def is_question(text: str) -> bool:
    """A question, English or Chinese ("what's the best db", "这个怎么用", "... right?")."""
    head = strip_lead(text)
    return bool(_QUESTION_EN.search(head) or _QUESTION_ZH.search(head))


def is_chitchat(text: str) -> bool:
    """Small talk: weather, food, mood, sports, how the day went."""
    return bool(_CHITCHAT.search(text))


def is_aside(text: str) -> bool:
    """A remark laughed off at its end ("browns lost again so thats my mood lol", "...哈哈"): said in
    passing, not part of the statement before it."""
    return bool(_LAUGHED_OFF.search(text))


def is_ephemeral(text: str) -> bool:
    """About this moment only ("today", "right now", "今晚", "待会")."""
    return bool(_EPHEMERAL.search(text))


def is_hypothetical(text: str) -> bool:
    """A supposition or a wondering ("if I liked Vue ...", "maybe ...", "如果..."), not a statement;
    "if you need X, use Y" is an instruction and passes."""
    return bool(_HYPOTHETICAL.match(strip_lead(text)))


def is_hedged(text: str) -> bool:
    """Said with doubt ("I think", "probably", "好像")."""
    return bool(_HEDGE.search(text))


def about_someone_else(text: str) -> bool:
    """Whether the statement's subject is another person ("my friend prefers ...", "他喜欢...")."""
    return bool(_THIRD_PARTY.match(strip_lead(text)))


def is_report(text: str) -> bool:
    """A report of the moment: progress, a change, a measurement, what a log or an error says, what
    the user just did ("heap went from 90MB to 400MB", "the logs show 502s", "已经做完了")."""
    return bool(_REPORT.search(text))


def is_pasted(text: str) -> bool:
    """Pasted material rather than a statement: a quoted error message, a line of code."""
    return bool(_PASTED.search(text))


def points_back(obj: str) -> bool:
    """Whether the object of a statement only points back into the chat ("... that idea", "... it")."""
    return bool(_POINTS_BACK.match(obj.strip()))
