"""Secrets recognised by a telling word before them: passwords, PINs, tokens, login pairs.

After `is`/`=`/`:` (or `是`/`为`...) any value is taken, unless it is a word that describes the
secret instead of being it ("the password is required", "密码是多少"); a quoted value is taken
whole, spaces included. After a bare space only a value that looks like one counts (digits for a
PIN or CVV; digits, symbols or mixed case for a password; a long letters-and-digits string for a
token), so "password manager" and "token limit" stay. A login written as "user / password" after
"login", "credentials" or "账号" loses its password half, and so does "e-mail / password" with no
word before it.

Every pattern has a `value` group (or `quoted`, for a quoted value): the secret, which is all
that is redacted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from engram.stores.secrets.formats import Rule

_IS = (
    r"[\"'`]?(?:\s+(?:is|was|are)(?:\s+(?:gonna|going\s+to)\s+be)?(?:\s+(?:set\s+to|now|still"
    r"|just|also|always|simply|actually|currently))?\s+|\s+will\s+be\s+|\s*[=:：]\s*"
    r"|\s+(?:set\s+to|changed\s+to)\s+"
    r"|\s*(?:就|也|还|都|仍然|依然|一直|其实)?(?:是|为|設為|设为|设置为|设成|改成|改为|换成)了?\s*"
    r"|\s*,?\s+(?i:it'?s|its)\s+)"
)
"""A separator after which whatever follows is the secret (a JSON/YAML key may close its quote);
an adverb may stand before the value ("the pin is still 4321", "密码还是abc123"), the value may
be one to come ("the wifi pw is gonna be ...", "will be"), and people type "it's" for "is"
("passport no, its HK492817")."""
_QUOTE_OPEN = r"[\"'`“「]"
_QUOTE_CLOSE = r"[\"'`”」]"
_END = r"[\"'`“”「」]?(?=[\s，。；！？、,;\"'`“”「」)]|[.!?:](?:\s|$)|$)"
_VALUE = r"[\"'`“”「」]?(?P<value>[^\s\"'`“”「」，。；！？、,;]+?)" + _END
_QUOTED = _QUOTE_OPEN + r"(?P<quoted>[^\"'`”」\n]{1,200}?)" + _QUOTE_CLOSE
"""A quoted value: taken whole, whatever it says ('the password is "correct"')."""

_DIGITS = r"\d{3,8}"
_KEYPAD = r"[#*]?(?:\d{3,8}|\d{1,3}(?:-\d{1,3}){2,4})[#*]?"
"""Digits as typed on a keypad, which may start or end with `#` or `*` ("4471#"), or a dial
combination ("12-34-56")."""
_KEYED = r"[#*]\d{3,8}[#*]?|\d{3,8}[#*]"
"""Digits with the `#` or `*` a keypad takes ("4471#"): a code to key in, whatever it opens."""
_PASSWORD_LIKE = (
    r"(?=[!-+\--:<-~]*(?:\d|[^\w\s:]|:(?=[!-~])|[A-Z][!-~]*[a-z]|[a-z][!-~]*[A-Z]))"
    r"[!-+\--:<-~]{4,}(?<!:)"
)
"""Printable ASCII but `,` and `;`, with a digit, a symbol or mixed case somewhere, not ending in
`:` ("password rules: ..." names a topic)."""
_ID_NUMBER = r"(?=(?:[A-Za-z0-9-]| (?=\d))*\d)[A-Za-z0-9](?:[A-Za-z0-9-]| (?=\d)){4,22}[A-Za-z0-9](?: [A-Za-z](?![\w-]))?"
"""An identity document's number: 6-24 letters, digits, dashes or spaces before digits, with a
digit, and maybe a final letter ("QQ 12 34 56 C")."""
_ACCOUNT_NUMBER = r"\d(?:[ -]?\d){5,33}(?![\d-])"
"""A bank account number: 6 to 34 digits, maybe grouped by spaces or dashes."""
_TOKEN_LIKE = r"(?=\S*\d)(?=\S*[A-Za-z])[A-Za-z0-9_\-.+/=]{16,}(?::[A-Za-z0-9]{1,8})?"
"""Letters and digits, 16 or more, and maybe a short `:suffix` (DeepL's keys end in `:fx`)."""
_ZH_PASSWORD = r"(?:支付|登录|登陆|交易|取款|开机|管理员|数据库|邮箱|WiFi|wifi|WIFI)?(?:密码|口令)"

NOT_A_VALUE = frozenset(
    """
    a an the my your his her our their its this that it here there below above attached same
    required wrong incorrect invalid valid correct right expired expiring too not missing empty
    blank weak strong long short still different changed reset set saved stored secure safe
    hidden in on at of for with written shared needed optional mandatory unknown forgotten lost
    ok okay fine good bad new old simple easy hard complex compromised leaked encrypted hashed
    masked protected what which where how none null n/a configured enabled disabled rotated
    revoked sent emailed case-sensitive password pass passwd pw pwd secret token key gonna going
    free available included open public down slow fast working broken off unlimited
    """.split()
)
"""Words after "is" that describe a secret instead of being it ("the password is wrong")."""
NOT_A_VALUE_ZH = ("什么", "多少", "啥", "错", "对", "正确", "必填", "空", "过期", "几位", "不对",
                  "一样", "相同", "忘", "多长", "哪")
"""The same for Chinese, as prefixes ("密码是多少？", "密码是错的")."""


@dataclass(frozen=True)
class _Label:
    """Telling words, and what a value must look like to count as the secret they label."""

    kind: str
    words: str
    triggers: tuple[str, ...]
    """Lower-case strings, one of which the words contain (see `Rule.triggers`)."""
    value: str
    """Pattern a value must match in full (always after a bare space; after `is`/`=`/`:` too
    when `strict`)."""
    strict: bool = False
    """Whether the value must match `value` even after `is`/`=`/`:` ("the key is simplicity")."""
    space: str = r"\s+"
    """What may separate the words from a bare value (Chinese writes them together)."""


_LABELS: tuple[_Label, ...] = (
    _Label("card_security_code",
           r"(?i:\b(?:cvv2?|cvc2?|cid|csc|card\s+security\s+code|security\s+code))",
           ("cvv", "cvc", "cid", "csc", "security"), _DIGITS, strict=True),
    _Label("card_security_code", r"安全码|(?i:cvv|cvc)码", ("码",), _DIGITS, strict=True,
           space=r"\s*"),
    _Label("password", r"(?i:\b(?:pin(?:\s+(?:code|number))?|passcode|combo(?:\s+lock)?|combination\s+lock|padlock|(?:door|alarm|gate|garage|lock|locker|safe"
           r"|keypad|entry|building|lockbox|key\s+box)\s+(?:code|combination)|key\s*safe|lockbox|key\s+box))",
           ("pin", "passcode", "code", "combination", "combo", "padlock", "safe", "box"), _KEYPAD,
           strict=True),
    _Label("password", r"(?i:\bcode)", ("code",), _KEYED, strict=True),
    _Label("password",
           r"(?i:\bc[óo]digo\s+(?:del?|de\s+la|da|do)\s+(?:portal|puerta|port[ãa]o|porta|acceso|acesso|entrada"
           r"|alarma|alarme|garaje|garagem)|\bcode\s+(?:de\s+(?:la\s+|l'))?(?:porte|portail|entr[ée]e"
           r"|alarme)|\bdigicode|\bt[üu]r(?:öffner)?code|\bcodice\s+(?:del\s+)?(?:portone|cancello"
           r"|porta|allarme))",
           ("código", "codigo", "code", "codice"), _KEYPAD, strict=True,
           space=r"(?:\s+(?:es|é|est|ist|è)\s+|\s*[:：]\s*|\s+)"),
    _Label("national_id",
           r"(?i:\b(?:ssn|social\s+security(?:\s+(?:number|no\.?|#))?|national\s+insurance(?:\s+(?:number|no\.?))?"
           r"|nino|\bni\s+(?:number|no\.?)|passport(?:\s+(?:number|no\.?|#))|(?:national|personal|government|citizen(?:ship)?|resident|identity)"
           r"\s+(?:id\s+)?(?:card\s+)?(?:number|no\.?|#)|(?:\bmy\s+id|\bid\s+card)\s+(?:number|no\.?|#)"
           r"|tax\s+(?:id|number|file\s+number)|driver'?s\s+licen[cs]e(?:\s+(?:number|no\.?|#))?"
           r"|licen[cs]e\s+(?:number|no\.?)|member(?:ship)?\s+(?:id|number|no\.?|#)"
           r"|policy\s+(?:number|no\.?|#)"
           r"|(?:medicare|medicaid|nhs|health\s+(?:card|insurance))(?:\s+card)?(?:\s+(?:id|number|no\.?|#))?))",
           ("ssn", "social", "insurance", "ni", "passport", "id", "tax", "licen", "member",
            "policy", "medic", "nhs", "health"), _ID_NUMBER, strict=True),
    _Label("national_id",
           r"身份证(?:号码?)?|护照(?:号码?)|社保(?:卡)?号码?|驾(?:驶)?照号码?|驾驶证号码?|考生号|准考证号?码?",
           ("身份证", "护照", "社保", "驾", "考生", "准考"), _ID_NUMBER, strict=True, space=r"\s*"),
    _Label("bank_account",
           r"(?i:\b(?:acct|(?:bank\s+|checking\s+|savings\s+)?account)(?:\s*(?:number|num|no\.?|#))?)",
           ("acct", "account"), _ACCOUNT_NUMBER, strict=True),
    _Label("bank_account", r"(?:银行)?(?:账号|帐号|账户|帐户)", ("账", "帐"), _ACCOUNT_NUMBER,
           strict=True, space=r"\s*"),
    _Label("bank_account", r"(?:账号|帐号|账户|帐户)(?:是|为|[:：])?\s*[\u4e00-\u9fff]{1,16}?(?:银行|行)",
           ("账", "帐"), _ACCOUNT_NUMBER, strict=True, space=r"\s*"),
    _Label("password", r"(?i:pin)\s*码|验证码|门禁码", ("码",), _KEYPAD, strict=True, space=r"\s*"),
    _Label("password", r"(?i:\b(?:password|passwd|passphrase|pwd|pw|pass\s+word|wi-?fi\s+pass(?:code)?))",
           ("pass", "pw"), _PASSWORD_LIKE),
    _Label("password", _ZH_PASSWORD, ("密码", "口令"), _PASSWORD_LIKE, space=r"\s*"),
    _Label("api_token",
           r"(?i:\b(?:secret[_\s]?key|(?:client|app|api)[_\s]?secret|api[_\s\-]?key|apikey|app[_\s]?key"
           r"|access[_\s]?(?:token|key)"
           r"|auth[_\s]?token|token|private[_\s\-]?key(?:[_\s\-]?id)?|(?:aws_)?secret_?access_?key|account_?key"
           r"|shared_?access_?key|signing_?key|encryption_?key|master_?key))",
           ("secret", "api", "key", "access", "auth", "token"), _TOKEN_LIKE),
    _Label("api_token", r"(?i:\b(?:key|secret))", ("key", "secret"), _TOKEN_LIKE, strict=True),
    _Label("api_token", r"密钥|秘钥|私钥|令牌", ("密钥", "秘钥", "私钥", "令牌"), _TOKEN_LIKE,
           space=r"\s*"),
)

_CHOSEN = r"(?:\s+(?i:i|we|you|they)(?:\s+(?i:just|finally))?\s+(?i:set|use|used|chose|picked|made|gave\s+it))?"
"""Who chose the secret, between its name and its value ("the pw i set is X")."""
_STRONG = (
    r"(?=\S*\d)(?=\S*[A-Za-z])(?=\S*[!@#$%^&*+=?~])(?!\S*://)"
    r"(?![\w.+-]+@[\w-]+(?:\.[\w-]+)+(?:[.!?]?(?:\s|$)))"  # an e-mail address
    r"(?!\d{4}-\d\d-\d\d)"  # a date or timestamp
    r"(?![A-Z][A-Z0-9]+-\d+(?:#\d+)?[.!?]?(?:\s|$))"  # a ticket (SEC-2024#4)
    r"[!-~]{8,}?"
)
"""A password beyond doubt: 8+ printable characters with a letter, a digit and a symbol, not a
URL, an e-mail address, a date or a ticket id."""
_LEET = (
    r"(?=\S*[A-Z])(?=\S*[a-z])(?=\S*[A-Za-z]\d[A-Za-z])(?=[\w-]*\d[A-Za-z_-]+\d)[A-Za-z0-9_-]{10,}?"
)
"""A password as people make them up, with a digit for a letter ("Gr4fana-adm1n-2025"): 10+
letters, digits, `-` or `_`, mixed case, a digit between two letters and another digit later (a
name like "K8sCluster" or "OAuth2Proxy" has one)."""
_PW_LATER = re.compile(
    r"(?i:\b(?:password|passwd|passphrase|pwd|pw))\b[^\n.!?]{1,60}?\s"
    r"[\"'`“「]?(?P<value>" + _STRONG + "|" + _LEET + r")" + _END
)
"""A password typed a few words after its name ("heres the keystore pw in case u need it for the
gradle config ferry-ks-Pa55!"): only a value that cannot be an ordinary word."""
_ZH_PASSWORD_LATER = re.compile(
    _ZH_PASSWORD + r"[^\n，。；！？,;]{0,10}?(?:是|为|[:：]|设的|设了|用的)\s*[\"'`“「]?(?P<value>"
    + _PASSWORD_LIKE
    + r")" + _END
)
"""A Chinese password named a few words before its value ("密码我老忘 是Zhao2025!pin", "密码设的
Lq2024!ab"): only a value that looks like one."""
_ZH_PW_LATER = re.compile(
    _ZH_PASSWORD + r"[^\n，。；！？,;]{1,20}?(?<![!-~])(?P<value>" + _STRONG + r")" + _END
)
"""A Chinese password typed a few words after its name, with no 是 or colon ("登录 密码 我 老忘 你
记 一下 Gk2025@wh"): only a value that cannot be an ordinary word, as `_PW_LATER`."""
_ZH_ID_LATER = re.compile(
    r"(?:身份证|护照|社保卡?)(?:号码?)?[^\d\n，。；！？,;]{1,8}?(?<![0-9A-Za-z])"
    r"(?P<value>\d{17}[\dXx]|[A-Za-z]{1,2}\d{7,8})(?![0-9A-Za-z])"
)
"""An identity or passport number a few words after its name ("身份证 我的是3101..."), whatever
its checksum says (a number typed wrong is still the person's)."""

_LOGIN_WORDS = (
    r"(?:(?i:\b(?:login|log-in|sign-in|signin|credentials?|creds|user(?:name)?\s*/\s*pass(?:word)?))"
    r"(?:\s+(?:for|to|on|of|at)(?:\s+[\w.\-@]+){1,3}?)?"
    r"|(?:账号|帐号|账户|登录|登陆)(?:信息|名)?(?:和|与|/)?(?:密码)?)"
)
_LOGIN = re.compile(
    _LOGIN_WORDS + _IS + r"(?P<user>[^\s/:|,;，；]+)\s*[/:|]\s*" + _VALUE
)
"""`login is alice / Tr0ub4dor`, `账号 bob:pa55`: the password half is the value."""
_EMAIL_LOGIN = re.compile(
    r"(?<![\w.+/:-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+\s*[/|]\s*(?![^\s@]*@|\S*/)[\"'`]?(?P<value>"
    + _PASSWORD_LIKE + r")"
    + _END
)
"""`chef@koboramen.com / Tonk0tsu!2025`: an e-mail address, a slash and a password-like value is a
login, also with no word saying so."""
_PASS = re.compile(
    r"(?:(?i:\b(?:user(?:name)?|login|account)\b)|用户名|账号|帐号)[^\n]{0,60}?"
    r"(?i:\bpass)\s*[=:：]\s*" + _VALUE
)
"""`user: alice pass: hunter2`: "pass" counts only after a user name on the same line."""

_CREDENTIAL_WORDS = (
    r"(?i:\b(?:client|app|api|access)[_ ]?(?:id|key|secret)\b|\bappkey\b|\bappid\b)|开放平台|密钥|秘钥"
)
_HEX_KEY = r"(?<![0-9a-fA-F])(?P<value>[0-9a-f]{32}|[0-9a-f]{64})(?![0-9a-fA-F])"
_HEX_NEAR_CREDENTIAL = (
    re.compile(rf"(?:{_CREDENTIAL_WORDS})[^\n]{{0,80}}?{_HEX_KEY}"),
    re.compile(rf"{_HEX_KEY}(?=[^\n]{{0,80}}?(?:{_CREDENTIAL_WORDS}))"),
)
"""A 32- or 64-digit lower-case hex key on the line of an app's credentials ("开放平台给了我这个
8f3c... 还有 client_id"): hex alone is a hash (a checksum, a commit), so only the words around it
tell a key. A 40-digit one (a git commit) never counts; a checksum on the line of such words is
redacted too."""
_ZH_DIGITS_LATER = re.compile(
    _ZH_PASSWORD + r"[^\d\n，。；！？,;]{1,10}?(?<!\d)(?P<value>\d{6})(?!\d)"
)
"""A Chinese payment or bank password typed a few words after its name ("支付密码我输了好几遍258369"):
six digits, as those passwords are."""
_PERSONAL_NUMBER = (
    r"(?:(?i:(?:my|our|his|her|their|the)\s+)?(?i:\w+'s\s+)?(?i:birthday|birth\s*date|date\s+of\s+birth"
    r"|dob|anniversary|wedding\s+date|phone(?:\s+number)?|house\s+number|zip(?:\s+code)?|postcode"
    r"|last\s+(?:four|4|six|6)(?:\s+digits)?|maiden\s+name)\b|(?i:(?:my|our|his|her|their|the)\s+)?"
    r"(?i:\w+'s\s+name)\b"
    r"|(?:我|我的|他|她|老婆|老公|孩子|儿子|女儿|妈妈?|爸爸?)?的?(?:生日|出生日期|结婚纪念日|纪念日|手机号码?"
    r"|手机尾号|尾号|门牌号|车牌号)(?:的?后(?:四|六|4|6)位)?)"
)
_DATE_OR_DIGITS = (
    r"(?<![\d-])(?:\d{4}[-./年]\d{1,2}[-./月]\d{1,2}日?|\d{1,2}[-/.]\d{1,2}|\d{3,11})(?!\d)"
)
_DERIVED_VALUE = (
    r"(?P<value>" + _PERSONAL_NUMBER + r"(?:[^\d\n。；！？;]{0,16}?" + _DATE_OR_DIGITS + r")?)"
)
"""A password or PIN said to be a personal number ("my pin is my birthday 0316", "密码是生日
19880316", "wifi密码就是手机号 139..."): the description goes with the number, since the memories
may hold the birthday or the phone number that would give the secret away."""
ENV_SECRET = re.compile(
    r"\b(?:(?i:[A-Z][A-Z0-9_]*(?:PASSWORD|PASSWD|PWD|SECRET|TOKEN(?!S)|API_?KEY|PRIVATE_KEY"
    r"|ACCESS_KEY|(?:MASTER|ENCRYPTION|SIGNING|CLIENT|APP|AUTH|LICENSE|ACCOUNT|SSH)_?KEY)"
    r"[A-Z0-9_]*)\s*[=:]|[A-Z][A-Z0-9_]*_SK\s*[=:]|SK\s*=)\s*" + _VALUE
)
"""`*_PASSWORD=`, `*_SECRET=`, `*_TOKEN=`, `*_API_KEY=` assignments in any case (environment
files, config, code: `app_secret=...`), and the secret half of a cloud AK/SK pair as it is
named in them (`ALIYUN_SK=`, `SK=`)."""


def label_patterns() -> tuple[Rule, ...]:
    """Every labelled rule, in the order they are applied (a personal number named as the secret
    first, then quoted values)."""
    passwords = [label for label in _LABELS if label.kind == "password"]
    derived = "|".join(f"(?:{label.words})" for label in passwords)
    triggers = tuple(dict.fromkeys(t for label in passwords for t in label.triggers))
    # before the labels, which would take the description for the value
    out = [Rule("password", re.compile(f"(?:{derived})" + _IS + _DERIVED_VALUE), triggers)]
    for label in _LABELS:
        words = (
            rf"(?:{label.words})(?:\s+(?:for|of|to|by|on|at)(?:\s+[\w.\-@]+){{1,5}}?){{0,2}}"
            + _CHOSEN
        )
        strict = rf"[\"'`“”「」]?(?P<value>{label.value})" + _END
        patterns = [] if label.strict else [words + _IS + _QUOTED]
        patterns += [words + _IS + (strict if label.strict else _VALUE), words + label.space + strict]
        out += [Rule(label.kind, re.compile(p), label.triggers) for p in patterns]
    out.append(Rule("password", _LOGIN, ("login", "log-in", "sign", "cred", "user", "账", "帐",
                                          "登录", "登陆")))
    out.append(Rule("password", _EMAIL_LOGIN, ("@",)))
    out.append(Rule("password", _PASS, ("pass",)))
    out.append(Rule("password", _ZH_DIGITS_LATER, ("密码",)))
    out.append(Rule("password", _ZH_PASSWORD_LATER, ("密码", "口令")))
    out.append(Rule("password", _ZH_PW_LATER, ("密码", "口令")))
    out.append(Rule("password", _PW_LATER, ("pass", "pw")))
    out.append(Rule("national_id", _ZH_ID_LATER, ("身份证", "护照", "社保")))
    out += [Rule("api_token", pattern, ("id", "key", "secret", "开放平台", "密钥", "秘钥"))
            for pattern in _HEX_NEAR_CREDENTIAL]
    out.append(Rule("password", ENV_SECRET, ("pass", "pwd", "secret", "token", "key", "sk")))
    return tuple(out)


def describes_secret(value: str) -> bool:
    """Whether a value after "is" is a word about the secret, not the secret."""
    lowered = value.lower().strip(".!?")
    return lowered in NOT_A_VALUE or value.startswith(NOT_A_VALUE_ZH)
