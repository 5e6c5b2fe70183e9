"""The offline memory extractor: first-person statements found by rules, English and Chinese.

Used when no memory model is configured (DESIGN "Models and offline mode"). It reads the user's
messages only (the assistant's replies are not facts about the user), cuts them into sentences
and clauses, and keeps the statements that match one of these patterns, verbatim, so names,
versions, numbers and paths survive:

- lesson: "X failed because Y", "turns out you need ...", "next time ...", "the fix was ...",
  "上次…失败", "原来需要…", "下次要…";
- goal: "I plan/want/intend to ...", "my goal is ...", "我计划/打算/准备/目标是…";
- preference: "I prefer/like/love/hate/always use/don't use ...", "please always/never ...",
  "my favourite X is ...", "我喜欢/偏好/习惯/不喜欢/常用…", "不要用…", "用中文回答";
- skill: "to deploy, we run ...", "our release process is ...", "部署流程是…";
- project: "my/our project/app/repo ... uses/is ...", "项目用…";
- fact: "I work at/as ...", "I'm a data engineer", "I live in ...", "we use PostgreSQL 16",
  "I'm building X", "我在…工作", "我是一名…", "我在开发…", "我们用…".

A statement about a recognisable subject (frontend framework, editor, database, theme, ...; the
user's employer, role, location, name) gets a `key` such as `preference.frontend_framework` and
`structured_data={"subject": ..., "value": ...}`, so that a later change supersedes it. Keys are
only given to single-valued statements: "I prefer React over Vue now" is keyed, "I also like Go"
and negative statements ("I hate Vue") are not.

Limits (what an LLM extractor does better): no pronoun resolution or paraphrase (the memory is
the user's sentence, in the first person); a statement split over several messages, or implied
rather than stated, is missed; sarcasm and hypotheticals ("if I liked Vue...") are taken
literally; subjects outside the built-in vocabulary get no key, so their changes do not supersede
(the merge step may still catch near-identical restatements); questions and requests are skipped
even when they contain a fact ("since I use Vim, how do I ...?").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.messages import BaseMessage, HumanMessage

from engram.nodes.tokens import message_text
from engram.stores.memory_types import Category, MemoryCandidate
from engram.stores.secrets import redact

RULE_CONFIDENCE = 0.7
"""Confidence given to rule-extracted memories (a fixed prior: rules guess more than a model)."""

# -- vocabulary of recognisable subjects ---------------------------------------------------------
# subject -> (single-valued, terms). A term starting with "=" is matched case-sensitively.
_SUBJECTS: dict[str, tuple[bool, tuple[str, ...]]] = {
    "frontend_framework": (True, ("react", "vue", "vue.js", "angular", "svelte", "sveltekit",
                                  "=Solid", "solidjs", "next.js", "nextjs", "nuxt", "remix",
                                  "astro", "preact", "ember", "htmx", "qwik")),
    "backend_framework": (True, ("fastapi", "django", "flask", "=Express", "express.js", "nestjs",
                                 "=Spring", "spring boot", "rails", "ruby on rails", "laravel",
                                 "=Gin", "fastify", "hono", "koa")),
    "programming_language": (False, ("python", "typescript", "javascript", "=Go", "golang", "rust",
                                     "java", "kotlin", "c#", "c++", "ruby", "php", "swift", "scala",
                                     "elixir", "haskell", "clojure", "zig", "dart", "lua", "julia")),
    "editor": (True, ("vs code", "vscode", "visual studio code", "vim", "neovim", "nvim", "emacs",
                      "intellij", "pycharm", "webstorm", "cursor", "sublime text", "zed", "helix",
                      "xcode", "android studio")),
    "theme": (True, ("dark mode", "light mode", "dark theme", "light theme", "深色模式", "浅色模式",
                     "暗色模式", "暗黑模式", "亮色模式", "夜间模式", "深色主题", "浅色主题")),
    "indentation": (True, ("tabs", "2 spaces", "4 spaces", "two spaces", "four spaces", "spaces",
                           "制表符", "空格")),
    "database": (True, ("postgresql", "postgres", "mysql", "mariadb", "sqlite", "mongodb",
                        "sql server", "dynamodb", "cassandra", "cockroachdb", "supabase", "duckdb",
                        "clickhouse")),
    "orm": (True, ("drizzle orm", "drizzle", "prisma", "sqlalchemy", "typeorm", "sequelize", "gorm")),
    "package_manager": (True, ("npm", "pnpm", "yarn", "bun", "pip", "poetry", "uv", "conda", "pipenv",
                               "pdm")),
    "test_framework": (True, ("pytest", "jest", "vitest", "=Mocha", "unittest", "playwright",
                              "cypress")),
    "css_framework": (True, ("tailwind", "tailwindcss", "css modules", "styled-components", "sass",
                             "bootstrap", "unocss")),
    "os": (True, ("macos", "linux", "windows", "ubuntu", "debian", "fedora")),
    "shell": (True, ("bash", "zsh", "fish", "powershell", "nushell")),
    "cloud": (False, ("aws", "gcp", "google cloud", "azure", "vercel", "netlify", "cloudflare",
                      "heroku", "阿里云", "腾讯云")),
    "response_language": (True, ("english", "chinese", "japanese", "german", "french", "spanish",
                                 "中文", "英文", "英语", "汉语", "日语")),
    "code_style": (True, ("functional programming", "functional style", "object-oriented",
                          "函数式编程", "函数式", "面向对象")),
}

_VERSION = r"(?:\s?v?\d+(?:\.\d+)*)?"


def _term_pattern() -> re.Pattern[str]:
    parts = []
    for subject, (_, terms) in _SUBJECTS.items():
        for i, term in enumerate(sorted(terms, key=len, reverse=True)):
            text = term[1:] if term.startswith("=") else term
            body = re.escape(text) if term.startswith("=") else f"(?i:{re.escape(text)})"
            parts.append(f"(?P<{subject}__{i}>{body}{_VERSION})")
    return re.compile(r"(?<![A-Za-z0-9_.+#-])(?:" + "|".join(parts) + r")(?![A-Za-z0-9_+#])")


_TERMS = _term_pattern()

# -- patterns ----------------------------------------------------------------------------------
_I = r"(?:\bI|\bwe)"
_ADV = r"(?:\s+(?:really|strongly|much|generally|usually|always|still|definitely|also|mostly|normally|now|totally|actually|personally|just|kind of|very))*"
_ZH_ADV = r"(?:也|还|都|一直|通常|总是|比较|更|最|很|非常|特别|真的|现在|平时|主要)*"


def _p(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


@dataclass(frozen=True)
class _Rule:
    category: Category
    pattern: re.Pattern[str]
    kind: str = ""
    """How to find the subject: "pref" (vocabulary), "neg" (no key), "fav" (my favourite X is),
    or "fact.<attribute>" (the value is what follows the match)."""
    needs_detail: bool = False
    """Broad patterns keep only statements with a detail: a name, number, path or known term."""


_FAIL_EN = r"(?:fail(?:ed|s|ing|ure)?|broke|breaks|broken|crash(?:ed|es)?|didn't work|doesn't work|did not work|does not work|won't work|errored|timed? ?out|time ?outs?|blew up|hangs?|hung)"
_FAIL_ZH = r"(?:失败|报错|出错|超时|不行|不工作|挂了|崩溃|崩了|跑不起来|起不来|踩坑|踩了坑|连不上)"

_RULES: tuple[_Rule, ...] = (
    # lessons
    _Rule("lesson", _p(rf"\b{_FAIL_EN}\b.*\b(?:because|since|due to|unless|until|without|so)\b")),
    _Rule("lesson", _p(rf"^(?!(?:it|this|that|they|he|she)\b).*\b{_FAIL_EN}\b.*\b(?:again|every time|last time)\b")),
    _Rule("lesson", _p(r"\b(?:turns? out|turned out|next time|lessons? learned|note to self|don't forget to|never again)\b")),
    _Rule("lesson", _p(rf"{_I}\s+(?:learned|found out|realized|realised|discovered|figured out)\b")),
    _Rule("lesson", _p(r"\bthe (?:fix|solution|workaround|trick|culprit|root cause|problem) (?:was|is)\b")),
    _Rule("lesson", re.compile(rf"{_FAIL_ZH}.*(?:因为|由于|原因|原来|所以|需要|得用|要用|必须|，|,)|(?:又|上次|之前|每次|总是).*{_FAIL_ZH}")),
    _Rule("lesson", re.compile(r"原来(?:要|需要|是|得)|下次(?:要|得|记得|需要|一定|别)|教训|以后(?:要|得|记得|别)|记住(?:要|得)")),
    # goals
    _Rule("goal", _p(rf"{_I}(?:'m|'re|\s+am|\s+are)?{_ADV}\s+(?:plan(?:ning)?|going|intend(?:ing)?|hop(?:e|ing)|aim(?:ing)?|want(?:ing)?|would like|'d like|wish|preparing|looking forward)\s+to\s+(?!(?:know|see|ask|check|say|tell|understand|bed|sleep|eat|grab|go home|talk|thank|try this|try that|hear|go to bed)\b)")),
    _Rule("goal", _p(r"\bmy (?:main |big |long-term |next )?(?:goal|plan|aim|objective|dream|ambition|target)s? (?:is|are|was|for)\b")),
    _Rule("goal", _p(rf"{_I}(?:'ll|\s+will){_ADV}\s+(?:migrate|launch|release|ship|switch|add|build|start|learn|finish|publish|move)\b")),
    _Rule("goal", re.compile(r"(?:^|我|我们)(?:计划|打算|准备|决定|目标是|下一步要|将要|想要|希望)(?!.*(?:问|知道|了解一下|看看))|我(?:想|要)(?:学|做|开发|实现|搭建|转|换|尝试|写一个|成为|考|上线|发布)")),
    # preferences
    _Rule("preference", _p(r"\bmy (?:favou?rite|preferred|go-to|default) ([\w .+#-]{1,30}?) (?:is|are)\b"), kind="fav"),
    _Rule("preference", re.compile(r"我最喜欢的(\S{1,10}?)是"), kind="fav"),
    _Rule("preference", _p(rf"{_I}{_ADV}\s+(?:hate|dislike|loathe|can't stand|cannot stand|don't like|do not like|don't use|do not use|never use|avoid|am not a fan of|'m not a fan of|no longer use)\b"), kind="neg"),
    _Rule("preference", _p(rf"{_I}{_ADV}\s+(?:prefer|like|love|enjoy|favou?r|always use|usually use|tend to use|stick (?:with|to)|rely on|am a fan of|'m a fan of|swear by)\b"), kind="pref"),
    _Rule("preference", _p(rf"\bI{_ADV}\s+(?:use|switched to|moved to|went with|chose|picked)\b"), kind="pref"),
    _Rule("preference", _p(r"^(?:please\s+)?(?:always|never|don't|do not)\s+(?:use|write|add|put|answer|reply|respond|include|format|call|name|mix|commit|push|give|show|suggest)\b|\bplease (?:always|never)\b"), kind="pref"),
    _Rule("preference", _p(r"\b(?:answer|reply|respond|write|talk)(?: to me)? in (?:english|chinese|japanese|german|french|spanish)\b"), kind="pref"),
    _Rule("preference", re.compile(rf"(?:我|我们){_ZH_ADV}(?:不喜欢|不爱用|不用|从不用|从来不用|讨厌|避免)"), kind="neg"),
    _Rule("preference", re.compile(rf"(?:^|我|我们){_ZH_ADV}(?:喜欢|偏好|偏爱|偏向|倾向于?|习惯(?:用|于)?|常用|爱用|惯用|只用|坚持用|更喜欢|改用|换成)"), kind="pref"),
    _Rule("preference", re.compile(r"^(?:请)?(?:不要|别|禁止|一律|总是|永远不要|务必|必须)(?:用|使用|写|加|回答|回复|给)|(?:注释|回复|回答|文档|提交信息|代码注释)\s*(?:都)?(?:用|使用|写成?)\s*(?:中文|英文|英语)|(?:用|使用)(?:中文|英文|英语|汉语)(?:回答|回复|交流|写)"), kind="pref"),
    # skills
    _Rule("skill", _p(r"^(?:to|for) (?:deploy|release|build|publish|set up|install|run|start|debug|test|migrate|ship)\b[^,]{0,60},\s*(?:I|we|you)\s+(?:run|use|do|call|execute|need to|just|first|always)\b")),
    _Rule("skill", _p(r"\b(?:my|our|the) (?:deploy(?:ment)?|release|build|testing|review|setup|onboarding) (?:process|flow|workflow|steps?|procedure|recipe|checklist) (?:is|are|goes)\b|\bwhat works (?:for me |for us )?is\b")),
    _Rule("skill", re.compile(r"(?:部署|发布|构建|上线|测试|安装|配置|升级)(?:的)?(?:流程|步骤|方法|办法|套路)(?:是|：|:)|要(?:部署|发布|构建|上线)[^，。]{0,20}[，,](?:先|就|需要|得)")),
    # facts about the user
    _Rule("fact", _p(r"\bI\s+(?:currently\s+)?(?:work|am working|'m working)\s+(?:at|for)\s+"), kind="fact.employer"),
    _Rule("fact", _p(r"\bI\s+(?:currently\s+)?(?:work|am working|'m working)\s+as\s+(?:an?\s+)?"), kind="fact.job_title"),
    _Rule("fact", _p(r"\bI(?:'m|\s+am)\s+(?:an?\s+)(?=(?:[\w-]+\s+){0,3}(?:engineer|developer|designer|manager|student|scientist|researcher|teacher|professor|doctor|nurse|founder|co-founder|analyst|writer|consultant|architect|lead|cto|ceo|programmer|administrator|freelancer|intern)\b)"), kind="fact.job_title"),
    _Rule("fact", _p(r"\bmy name is\s+|\bcall me\s+(?=[A-Z])"), kind="fact.name"),
    _Rule("fact", _p(r"\bI\s+(?:live|am living|'m living)\s+in\s+|\bI(?:'m|\s+am)\s+(?:based|located)\s+in\s+|\bI\s+(?:just\s+)?moved\s+to\s+"), kind="fact.location"),
    _Rule("fact", _p(r"\bI(?:'m|\s+am)\s+(?:allergic|intolerant|vegetarian|vegan|pescatarian|diabetic|left-handed|colou?r-?blind|deaf|blind|pregnant)\b|\bI\s+(?:can't|cannot|don't)\s+eat\b")),
    _Rule("fact", _p(r"\bI\s+have\s+(?:a|an|one|two|three|four|five|\d+)\s+(?:\w+\s+)?(?:kids?|children|sons?|daughters?|dogs?|cats?|wife|husband|partner|brothers?|sisters?|twins)\b|\bmy (?:wife|husband|partner|son|daughter|kids?|children|dog|cat|brother|sister|mother|father|mom|dad)(?:'s name)? (?:is|are|was|has|loves|likes|hates)\b")),
    _Rule("fact", re.compile(r"我对\S{1,10}过敏|我(?:是)?(?:素食|吃素)|我有(?:一个|两个|三个|\d+个)?(?:孩子|儿子|女儿|狗|猫|双胞胎)|我(?:老婆|老公|妻子|丈夫|儿子|女儿|孩子)(?:叫|是)"), kind=""),
    _Rule("fact", re.compile(r"我叫|我的名字(?:是|叫)"), kind="fact.name"),
    _Rule("fact", re.compile(r"我(?:现在)?住在|我搬到了?"), kind="fact.location"),
    _Rule("fact", re.compile(r"我(?:现在)?在(?=\S{1,20}?(?:工作|上班|任职|实习))"), kind="fact.employer"),
    _Rule("fact", re.compile(r"我是(?:一名|一个|一位)?(?=\S{0,10}(?:工程师|开发者?|程序员|设计师|学生|经理|研究员|老师|教师|医生|创始人|架构师|分析师|运维))"), kind="fact.job_title"),
    _Rule("fact", re.compile(r"我(?:现在)?(?:在|正在)(?:开发|做|搞|写|维护|负责)")),
    # projects
    _Rule("project", _p(r"\b(?:my|our) (?:project|app|application|service|repo|repository|product|startup|company|team|website|bot|library)\b(?:\s+[\w-]+){0,2}?\s+is (?:called|named)\b")),
    _Rule("project", _p(r"\b(?:my|our|the) (?:project|app|application|service|repo|repository|codebase|product|backend|frontend|front-end|back-end|api|website|site|platform|monorepo|cli|library|bot|startup|stack)\b(?:\s+[\w-]+){0,3}?\s+(?:uses|use|is built|is written|runs|is deployed|deploys|depends|targets|is called|is named|is hosted|stores|is on|is|are|has)\b"), needs_detail=True),
    _Rule("project", re.compile(r"(?:项目|应用|仓库|代码库|服务|后端|前端|系统|产品|网站|接口|API)\S{0,6}?(?:用的?是?|使用|采用|基于|部署在|跑在|运行在|是用|前缀是|叫|名叫)")),
    _Rule("fact", _p(rf"\b(?:I(?:'m|\s+am)|we(?:'re|\s+are)?){_ADV}\s+(?:use|using|run|running|deploy|deploying|host|hosting|build|building|developing|working on|maintaining|migrated|switched|moved|standardi[sz]ed on|on)\b"), needs_detail=True),
    _Rule("fact", re.compile(rf"我们{_ZH_ADV}(?:用|使用|采用|基于|部署在)")),
)

# -- what is never a memory ------------------------------------------------------------------
_REMEMBER_PREFIX = re.compile(
    r"^(?:(?:can|could) you\s+)?(?:please\s+)?(?:remember|note|keep in mind|fyi|for the record|"
    r"just so you know|btw|by the way)(?:\s+that)?[:,]?\s*|^(?:请)?(?:记住|记一下|备注|顺便说一下)[：:，,]?\s*",
    re.IGNORECASE,
)
_QUESTION_EN = re.compile(
    r"^(?:what|how|why|when|where|who|which|whose|can|could|would|will|should|shall|do(?!\s+not\b|n't)|"
    r"does|did|is|are|am|have|has|may|might)\b",
    re.IGNORECASE,
)
_QUESTION_ZH = re.compile(
    r"(?:吗|呢|么|嘛)[。！!]?$|^(?:怎么|怎样|如何|为什么|为何|什么|哪|谁|是否|能不能|能否|可不可以|请问|有没有)"
)
_REQUEST = re.compile(
    r"^(?:please\s+)?(?:can you|could you|would you|help|write|create|make|generate|give|show|tell|"
    r"explain|fix|refactor|translate|summari[sz]e|find|let's|lets)\b|^(?:帮我|请帮|请你|你能|你可以|麻烦|给我|帮忙)",
    re.IGNORECASE,
)
_CHITCHAT = re.compile(
    r"\b(?:weather|sunny|rainy|raining|snowing|joke|jokes|lol|haha|how are you|good morning|"
    r"good night|nice to meet you)\b|天气|下雨|晴天|笑话|哈哈|你好吗|早上好|晚安",
    re.IGNORECASE,
)
_EPHEMERAL = re.compile(r"\b(?:today|tonight|right now|this morning|this afternoon|this evening)\b|今天|今晚|刚才|待会", re.IGNORECASE)
_CONTEXT_OBJECT = re.compile(
    r"^(?:it|this|that|these|those|them|you|him|her|so|too|a lot|very much)\b"
    r"|^(?:the |that |this |your )?(?:first |second |third |last |other |former |latter |previous |new )?"
    r"(?:one|option|approach|version|idea|answer|solution|suggestion|way|draft|reply|response)s?\W*$"
    r"|^(?:它|这|那|这个|那个|你)",
    re.IGNORECASE,
)
"""The object of a preference that only points back into the chat ("I like that idea")."""
_ADDITIVE = re.compile(r"\b(?:also|too|as well|both)\b|也|还(?!是)")
_COMPARATIVE = re.compile(
    r"\b(?:over|instead of|rather than|than|no longer|anymore|now|switched|moved|went with)\b|而不是|不再|更喜欢|改用|换成|现在",
    re.IGNORECASE,
)
_LEADING_CONJ = re.compile(r"^(?:and|but|so|also|plus|then|well|ok|okay|oh)[,\s]+|^(?:但是?|不过|而且|另外|所以|然后|还有)[，,\s]*", re.IGNORECASE)
_WHOLE_SENTENCE = ("lesson", "skill")
"""Categories whose sentences are kept whole: the cause or the steps follow a comma."""
_SENTENCES = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；;!?])|\n+")
_CLAUSES = re.compile(
    r"(?:,|;|，|；)\s*(?:and |but |so |also |plus )?(?=(?:I|I'm|I've|I'd|we|we're|my|our)\b)"
    r"|\s+(?:and|but|so)\s+(?=(?:I|I'm|we|we're|my|our)\s)|[，,](?=(?:我|但|不过|而且|另外))"
)
_DETAIL = re.compile(r"\d|[/\\]|\.[a-z]{1,4}\b|(?<!^)(?<![.!?]\s)\b(?!I\b|I'm\b|I've\b|I'd\b)[A-Z][\w.+#-]*|[\u4e00-\u9fff].*[A-Za-z]|[A-Za-z].*[\u4e00-\u9fff]")
_VALUE_END = re.compile(
    r"\s+(?:as|and|since|for|because|but|where|which|with|now|at|in|on|from|to|so)\b"
    r"|[,;!?，。；！？、]|\.(?:\s|$)|(?:工作|上班|任职|实习)|\s*$"
)


class RuleExtractor:
    """The offline extractor (see the module docstring for what it finds and what it misses).

    Example:
        >>> from langchain_core.messages import AIMessage, HumanMessage
        >>> msgs = [HumanMessage("Hi! I prefer React over Vue now.", id="m1"), AIMessage("Noted.")]
        >>> [(c.category, c.content, c.key) for c in RuleExtractor().extract(msgs)]
        [('preference', 'I prefer React over Vue now.', 'preference.frontend_framework')]
    """

    mode = "offline"

    async def aextract(
        self, messages: Sequence[BaseMessage], *, context: Sequence[BaseMessage] = ()
    ) -> list[MemoryCandidate]:
        """Candidates from the user's messages in `messages` (`context` is not needed)."""
        return self.extract(messages)

    def extract(self, messages: Sequence[BaseMessage]) -> list[MemoryCandidate]:
        """Candidates from the user's messages, in order, one per matching statement."""
        found: dict[str, MemoryCandidate] = {}
        for message in messages:
            if not isinstance(message, HumanMessage):
                continue
            ids = [message.id] if message.id else None
            for statement in statements(message_text(message)):
                candidate = classify(statement)
                if candidate is not None:
                    candidate.message_ids = ids
                    found.setdefault(candidate.content.casefold(), candidate)
        return list(found.values())


def statements(text: str) -> list[str]:
    """Sentences, cut again where a new first-person clause starts; lesson sentences stay whole."""
    out: list[str] = []
    for sentence in _SENTENCES.split(text):
        sentence = sentence.strip()
        if not sentence:
            continue
        whole = _clean(_REMEMBER_PREFIX.sub("", sentence))
        matched = _match(whole)
        if matched is not None and matched[0].category in _WHOLE_SENTENCE:
            out.append(whole)
            continue
        out.extend(c for c in (_clean(p) for p in _CLAUSES.split(sentence)) if c)
    return out


def classify(statement: str) -> MemoryCandidate | None:
    """The candidate one statement makes, or None (question, request, chit-chat, no rule, secret)."""
    text = _clean(_REMEMBER_PREFIX.sub("", statement))
    if len(text) < 4 or _is_question(text) or _CHITCHAT.search(text):
        return None
    redaction = redact(text)
    if redaction.only_secret:
        return None
    text = redaction.text
    matched = _match(text)
    if matched is None:
        return None
    rule, match = matched
    if rule.category == "goal" and _EPHEMERAL.search(text):
        return None
    if rule.kind in ("pref", "neg") and _CONTEXT_OBJECT.match(text[match.end():].strip()):
        return None
    if rule.needs_detail and not _DETAIL.search(text):
        return None
    key, data = _key(rule, match, text)
    return MemoryCandidate(
        content=text, category=rule.category, key=key, structured_data=data,
        confidence=RULE_CONFIDENCE,
    )


def _match(text: str) -> tuple[_Rule, re.Match[str]] | None:
    if _REQUEST.search(text) and not re.search(r"\b(?:always|never)\b|总是|不要|别", text, re.I):
        return None
    for rule in _RULES:
        match = rule.pattern.search(text)
        if match:
            return rule, match
    return None


def _is_question(text: str) -> bool:
    stripped = text.rstrip()
    return stripped.endswith(("?", "？")) or bool(_QUESTION_EN.match(stripped) or _QUESTION_ZH.search(stripped))


def _clean(text: str) -> str:
    text = _LEADING_CONJ.sub("", text.strip())
    return text.strip().rstrip(",，;；、").strip()


def _key(rule: _Rule, match: re.Match[str], text: str) -> tuple[str | None, dict[str, str] | None]:
    """The supersede key and structured value of a statement, when it names a single value."""
    if rule.kind.startswith("fact."):
        value = _value_after(text, match.end())
        attribute = rule.kind.split(".", 1)[1]
        return (f"fact.{attribute}", {"subject": attribute, "value": value}) if value else (None, None)
    if rule.kind == "fav":
        subject = re.sub(r"[^a-z0-9]+", "_", match.group(1).casefold()).strip("_")
        known = _terms(text[match.end():])
        subject = known[0][0] if known else subject
        value = known[0][1] if known else _value_after(text, match.end())
        if subject and value:
            return f"preference.{subject}", {"subject": subject, "value": value}
        return None, None
    terms = _terms(text[match.end():] if rule.kind in ("pref", "neg") else text)
    subjects = {s for s, _ in terms}
    if not terms or len(subjects) != 1 or rule.kind == "neg":
        data = {"subject": terms[0][0], "value": terms[0][1]} if len(subjects) == 1 else None
        return None, data
    subject, value = terms[0]
    single = _SUBJECTS[subject][0]
    comparative = bool(_COMPARATIVE.search(text))
    distinct_values = {v.casefold() for _, v in terms}
    if _ADDITIVE.search(text) or (len(distinct_values) > 1 and not comparative):
        return None, {"subject": subject, "value": value}
    if not single and not comparative:
        return None, {"subject": subject, "value": value}
    return f"{rule.category}.{subject}", {"subject": subject, "value": value}


def _terms(text: str) -> list[tuple[str, str]]:
    """Known terms in order as (subject, value with version)."""
    out = []
    for m in _TERMS.finditer(text):
        group = next(name for name, value in m.groupdict().items() if value is not None)
        out.append((group.split("__", 1)[0], m.group(0).strip()))
    return out


def _value_after(text: str, start: int) -> str:
    rest = text[start:].strip()
    end = _VALUE_END.search(rest)
    value = rest[: end.start()] if end else rest
    return value.strip()[:80]
