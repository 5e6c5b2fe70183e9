"""Supersede keys for the offline extractor: which attribute a statement sets, and to what value.

A statement about a single-valued attribute (the frontend framework, the editor, the indentation,
the project's database, the user's employer, ...) gets a key such as
`preference.frontend_framework` and `structured_data={"subject": ..., "value": ...}`, so a later
statement with another value supersedes it (the write policy's same-key step). The key's prefix
comes from the attribute, not from the wording: "I always use pnpm" and "we use yarn here" both set
`preference.package_manager`; "we're on MySQL 8" and "迁到 PostgreSQL 16 了" both set
`project.database`.

The subject is found from an attribute word ("indentation", "组件库", "line length") or from a
known value (a vocabulary of common tools per attribute). The value is the one chosen: after a
change marker ("switched to Y", "换成 Y"), before a contrast ("Y over X", "Y 而不是 X"), else the
first. No key is given when the statement adds a value ("I also like Go"), names several values
without choosing, is a dislike, or the attribute is not single-valued (programming languages).
"""

from __future__ import annotations

import re
from functools import cache, lru_cache

from engram.nodes.extract.patterns import Rule

# subject -> (key prefix, single-valued, values). A value starting with "=" is case-sensitive.
SUBJECTS: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    "frontend_framework": ("preference", True, (
        "react", "vue", "vue.js", "angular", "svelte", "sveltekit", "=Solid", "solidjs", "next.js", "nextjs",
        "nuxt", "remix", "astro", "preact", "ember", "htmx", "qwik", "flutter", "react native")),
    "state_management": ("preference", True, (
        "redux", "redux toolkit", "zustand", "pinia", "vuex", "mobx", "jotai", "recoil", "xstate", "ngrx",
        "riverpod", "valtio", "effector", "tanstack query", "react query")),
    "ui_library": ("preference", True, (
        "element plus", "element ui", "ant design", "antd", "material ui", "mui", "shadcn/ui", "shadcn",
        "chakra ui", "vuetify", "naive ui", "quasar", "mantine", "radix ui", "headless ui", "arco design",
        "tdesign", "vant", "primevue", "daisyui")),
    "css_framework": ("preference", True, (
        "tailwind", "tailwindcss", "css modules", "styled-components", "sass", "bootstrap", "unocss")),
    "backend_framework": ("project", True, (
        "fastapi", "django", "flask", "=Express", "express.js", "nestjs", "=Spring", "spring boot", "rails",
        "ruby on rails", "laravel", "=Gin", "fastify", "hono", "koa", "=Echo", "actix", "axum", "phoenix")),
    "programming_language": ("preference", False, (
        "python", "typescript", "javascript", "=Go", "golang", "rust", "java", "kotlin", "c#", "c++", "ruby",
        "php", "swift", "scala", "elixir", "haskell", "clojure", "zig", "dart", "lua", "julia")),
    "editor": ("preference", True, (
        "vs code", "vscode", "visual studio code", "vim", "neovim", "nvim", "emacs", "intellij", "pycharm",
        "webstorm", "cursor", "sublime text", "zed", "helix", "xcode", "android studio")),
    "theme": ("preference", True, (
        "dark mode", "light mode", "dark theme", "light theme", "深色模式", "浅色模式", "暗色模式", "暗黑模式",
        "亮色模式", "夜间模式", "深色主题", "浅色主题")),
    "indentation": ("preference", True, (
        "tabs", "tab", "2 spaces", "4 spaces", "two spaces", "four spaces", "spaces", "制表符", "2 个空格",
        "4 个空格", "两个空格", "四个空格", "空格")),
    "database": ("project", True, (
        "postgresql", "postgres", "mysql", "mariadb", "sqlite", "mongodb", "sql server", "dynamodb",
        "cassandra", "cockroachdb", "supabase", "duckdb", "clickhouse", "oracle", "tidb")),
    "orm": ("project", True, ("drizzle orm", "drizzle", "prisma", "sqlalchemy", "typeorm", "sequelize", "gorm")),
    "package_manager": ("preference", True, (
        "npm", "pnpm", "yarn", "bun", "pip", "poetry", "uv", "conda", "pipenv", "pdm")),
    "test_framework": ("preference", True, (
        "pytest", "jest", "vitest", "=Mocha", "unittest", "playwright", "cypress", "junit", "junit5", "kotest")),
    "os": ("preference", True, ("macos", "linux", "windows", "ubuntu", "debian", "fedora", "arch linux")),
    "shell": ("preference", True, ("bash", "zsh", "fish", "powershell", "nushell")),
    "cloud": ("project", False, (
        "aws", "gcp", "google cloud", "azure", "vercel", "netlify", "cloudflare", "heroku", "阿里云", "腾讯云")),
    "response_language": ("preference", True, (
        "english", "chinese", "japanese", "german", "french", "spanish", "中文", "英文", "英语", "汉语", "日语")),
    "phone": ("fact", True, (
        "iphone", "pixel", "galaxy", "samsung galaxy", "oneplus", "xiaomi", "redmi", "huawei", "honor",
        "oppo", "vivo", "nothing phone", "fairphone", "moto g", "motorola", "sony xperia", "blackberry",
        "小米", "红米", "华为", "荣耀", "苹果手机")),
    "camera": ("fact", True, (
        "canon", "nikon", "sony a7", "sony a7c", "sony a6400", "sony a1", "fujifilm", "fuji x100", "leica",
        "panasonic lumix", "lumix", "olympus", "om system", "hasselblad", "ricoh gr", "pentax")),
    "notes_app": ("preference", True, (
        "evernote", "obsidian", "=Notion", "onenote", "apple notes", "logseq", "roam research",
        "google keep", "simplenote", "notability", "goodnotes", "印象笔记", "有道云笔记", "语雀", "飞书文档")),
    "ci": ("project", True, (
        "jenkins", "github actions", "gitlab ci", "circleci", "travis ci", "buildkite", "drone ci", "teamcity",
        "azure pipelines", "bitbucket pipelines")),
    "code_style": ("preference", True, (
        "functional programming", "functional style", "object-oriented", "函数式编程", "函数式", "面向对象")),
}

# Attribute words: naming the attribute picks the subject (and, for numbers, the value).
_ATTRIBUTES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("line_length", re.compile(
        r"\b(?:line length|line width|line limit|max line|char(?:acter)?s? (?:per )?lines?|cols|columns)\b"
        r"|行宽|行长|每行", re.IGNORECASE)),
    ("indentation", re.compile(r"\bindent(?:ation|s|ing)?\b|缩进", re.IGNORECASE)),
    ("state_management", re.compile(r"\bstate management\b|\bfor state\b|状态管理", re.IGNORECASE)),
    ("ui_library", re.compile(r"\b(?:ui|component) (?:library|kit|lib)\b|组件库|UI ?库", re.IGNORECASE)),
    ("package_manager", re.compile(r"\bpackage manager\b|包管理", re.IGNORECASE)),
    ("database", re.compile(r"\bdatabase\b|数据库", re.IGNORECASE)),
    ("editor", re.compile(r"\beditor\b|\bIDE\b|编辑器", re.IGNORECASE)),
    ("response_language", re.compile(
        r"\b(?:answers?|answer me|reply|replies|respond|responses?|write to me|talk to me|speak to me)\b"
        r"|回答|回复|交流|跟我说|和我说", re.IGNORECASE)),
)
_NAMED_ONLY = frozenset({"response_language"})
"""Subjects a known value alone does not name: "I'm learning Japanese" is not about the language
of the answers."""
_NUMERIC = frozenset({"line_length"})
_NUMBER = re.compile(r"\b\d{2,3}\b")

_VERSION = r"(?:\s?v?\d+(?:\.\d+)*)?"
_CHANGE = re.compile(
    r"\b(?:switch(?:ed|ing)?|mov(?:ed|ing)|migrat(?:ed|ing)|chang(?:ed|ing)|went|upgrad(?:ed|ing)|go(?:ing)?"
    r"|convert(?:ed|ing)?)\s+(?:\S+\s+){0,4}?to\b|\bfrom now on\b|\bnow\b|\bthese days\b|\banymore\b"
    r"|换成|改成|改用|迁到|迁移到|切到|切换到|升级到|升到|换到|转到|现在|以后|从此",
    re.IGNORECASE,
)
_CHANGE_TARGET = re.compile(r"\bto\b|换成|改成|改用|迁到|迁移到|切到|切换到|升级到|升到|换到|转到", re.IGNORECASE)
_CONTRAST = re.compile(
    r"\b(?:over|instead of|rather than|than|not|no longer)\b|而不是|不用|不是|比", re.IGNORECASE
)
_ADDITIVE = re.compile(r"\b(?:also|too|as well|both)\b|也(?!是)|还(?!是)", re.IGNORECASE)
_VALUE_END = re.compile(
    r"\s+(?:as|and|since|for|because|but|where|which|with|now|at|in|on|from|to|so|last|this|next|after|before|when)\b"
    r"|[,;!?()，。；！？、（）]|\.(?:\s|$)|(?:工作|上班|任职|实习)|(?<=[\u3400-\u9fff])\s+(?=[\u3400-\u9fff])|\s*$"
)


@cache  # on first use: a command that classifies no preference never compiles it
def _term_pattern() -> re.Pattern[str]:
    parts = []
    for subject, (_, _, values) in SUBJECTS.items():
        for i, value in enumerate(sorted(values, key=len, reverse=True)):
            body = re.escape(value[1:]) if value.startswith("=") else f"(?i:{re.escape(value)})"
            parts.append(f"(?P<{subject}__{i}>{body}{_VERSION})")
    return re.compile(
        r"(?<![A-Za-z0-9_.+#-])(?:" + "|".join(parts) + r")(?![A-Za-z0-9_+#])(?!" + _OWNED + ")"
    )


_OWNED = (
    r"\s*(?:(?:api|access|auth|deploy|personal)\s+)?"
    r"(?:tokens?|keys?|passwords?|secrets?|credentials?|accounts?|logins?|账号|账户|密码|令牌|密钥)\b"
)
"""A credential or account named after a tool ("my npm token", "the AWS account", "GitHub 账号")
is not a choice of that tool: "switched my npm token to ..." changes no package manager."""


_ANYWHERE = Rule("preference", re.compile(r"^"))
_CLAUSE_END = re.compile(r"[,;!?，。；！？]|\.(?:\s|$)")


def key_for(rule: Rule, match: re.Match[str], text: str) -> tuple[str | None, dict[str, str] | None]:
    """The supersede key and `{"subject", "value"}` of a statement, or (None, data) when it has none.

    Args:
        rule: The rule that matched.
        match: Its match in `text`.
        text: The statement.

    Example:
        >>> from engram.nodes.extract.patterns import rx
        >>> rule = Rule("preference", rx(r"\\bI prefer\\b"), kind="pref")
        >>> text = "I prefer Svelte over React these days"
        >>> key_for(rule, rule.pattern.search(text), text)
        ('preference.frontend_framework', {'subject': 'frontend_framework', 'value': 'Svelte'})
    """
    if rule.kind.startswith("fact."):
        value = value_after(text, match.end())
        attribute = rule.kind.split(".", 1)[1]
        if not value or not _VALUE_CHECKS.get(attribute, bool)(value):
            return None, None
        return f"fact.{attribute}", {"subject": attribute, "value": value}
    if rule.kind == "fav":
        return _favourite(match, text)
    clause = _clause(text, match)
    scope = _object(text[match.end():]) if rule.kind == "pref" else clause
    subject, values = _subject_values(text, scope)
    if subject is None and rule.kind != "pref":
        clause = scope = text
        subject, values = _subject_values(text, scope)
    if subject is None or not values:
        return None, None
    value = _chosen(scope, values)
    data = {"subject": subject, "value": value}
    prefix, single, _ = SUBJECTS.get(subject, ("preference", True, ()))
    changed = bool(_CHANGE.search(text))
    compared = changed or bool(_CONTRAST.search(clause))
    distinct = {v.casefold() for _, v in values}
    said = clause if rule.kind != "pref" else clause[: match.end() - _clause_start(text, match)] + scope
    if rule.kind == "neg" and changed and single:  # "I ditched X, everything is in Y now"
        replacement = _replacement(text, match, subject, distinct)
        return (f"{prefix}.{subject}", {"subject": subject, "value": replacement}) if replacement else (None, data)
    if rule.kind == "neg" or not single:
        return None, data
    if (_ADDITIVE.search(said) and not changed) or (len(distinct) > 1 and not compared):
        return None, data
    return f"{prefix}.{subject}", data


def key_in(text: str) -> tuple[str | None, dict[str, str] | None]:
    """The key of a statement from its words alone (no rule's match to start from).

    Example:
        >>> key_in("and 80 char lines. old habits")
        ('preference.line_length', {'subject': 'line_length', 'value': '80'})
    """
    return key_for(_ANYWHERE, _ANYWHERE.pattern.match(text), text)


def value_after(text: str, start: int) -> str:
    """The value that follows a fact's phrase ("I work at |Acme Corp as ..." -> "Acme Corp")."""
    rest = text[start:].strip()
    end = _VALUE_END.search(rest)
    value = rest[: end.start()] if end else rest
    return value.strip().removesuffix("了").removesuffix("的")[:80]  # "搬到杭州了", "车是丰田的"


_CJK_PLACE = re.compile(r"(?!一[个间套栋座所处]|[这那](?:里|儿|边|个|间))[\u3400-\u9fff]")
"""The start of a Chinese place name: not "一个 ..." (a ...), not "这里" (here)."""


def names_a_place(value: str) -> bool:
    """Whether a location's value is a place's name ("Lisbon", "the Netherlands", "杭州"), not
    a dwelling or a part of town ("a flat", "the city centre", "一个小公寓", "这里").

    Example:
        >>> names_a_place("Lisbon"), names_a_place("the Netherlands"), names_a_place("a flat")
        (True, True, False)
    """
    name = value.removeprefix("the ").removeprefix("The ")
    return name[:1].isupper() or bool(_CJK_PLACE.match(name))


_VALUE_CHECKS = {"location": names_a_place}
"""Checks of a fact's value, per attribute: a key is set only when its value is what the key
names (a statement that fails one is kept, without a key)."""


@lru_cache(maxsize=1024)
def terms(text: str) -> tuple[tuple[str, int, str], ...]:
    """Known values in `text`, in order, as (subject, offset, value with its version).

    Cached: the pattern tries every known value at every position, and a pasted text often
    repeats its clauses.
    """
    out = []
    for m in _term_pattern().finditer(text):
        group = next(name for name, value in m.groupdict().items() if value is not None)
        out.append((group.split("__", 1)[0], m.start(), m.group(0).strip()))
    return tuple(out)


def _subject_values(text: str, scope: str) -> tuple[str | None, list[tuple[int, str]]]:
    """The subject a statement is about and its candidate values (offset in `scope`, value)."""
    named = next((s for s, pattern in _ATTRIBUTES if pattern.search(text)), None)
    if named in _NUMERIC:
        return named, [(m.start(), m.group(0)) for m in _NUMBER.finditer(scope)]
    found = terms(scope)
    if named is not None:
        values = [(at, v) for s, at, v in found if s == named]
        if values:
            return named, values
    subjects = {s for s, _, _ in found} - _NAMED_ONLY
    if len(subjects) != 1:
        return None, []
    found = [f for f in found if f[0] in subjects]
    return found[0][0], [(at, v) for _, at, v in found]


def _clause_start(text: str, match: re.Match[str]) -> int:
    starts = [m.end() for m in _CLAUSE_END.finditer(text, 0, match.start())]
    return starts[-1] if starts else 0


def _clause(text: str, match: re.Match[str]) -> str:
    """The clause of `text` the match lies in."""
    end = _CLAUSE_END.search(text, match.end())
    return text[_clause_start(text, match): end.start() if end else len(text)]


def _object(rest: str) -> str:
    """The object of a verb: what follows it up to the end of its clause ("like Vue|, React is ...")."""
    end = _CLAUSE_END.search(rest)
    return rest[: end.start()] if end else rest


def _chosen(scope: str, values: list[tuple[int, str]]) -> str:
    """The value chosen: the first after a change target ("to", "换成"), else the first."""
    for target in _CHANGE_TARGET.finditer(scope):
        after = [v for at, v in values if at >= target.end()]
        if after:
            return after[0]
    return values[0][1]


def _replacement(text: str, match: re.Match[str], subject: str, dropped: set[str]) -> str | None:
    """The value a dislike's statement turns to: a later value of the same subject, outside the
    clause that drops the others ("I ditched Evernote|, everything is in Obsidian now")."""
    end = _CLAUSE_END.search(text, match.end())
    if end is None:
        return None
    later = [v for s, _, v in terms(text[end.end():]) if s == subject and v.casefold() not in dropped]
    return later[0] if later else None


def _favourite(match: re.Match[str], text: str) -> tuple[str | None, dict[str, str] | None]:
    subject = re.sub(r"[^a-z0-9]+", "_", match.group(1).casefold()).strip("_")
    known = terms(text[match.end():])
    if known:
        subject, _, value = known[0]
    else:
        value = value_after(text, match.end())
    if not subject or not value:
        return None, None
    return f"preference.{subject}", {"subject": subject, "value": value}
