"""English rules of the offline extractor, in priority order (the first match decides).

Each rule is a general way people state something durable about themselves in a chat, typed
loosely (lowercase, no subject, fragments). Strong rules are explicit ("I prefer ...", "my goal
is ...", "turns out ..."); weak ones are broad ("we use ...", "the dashboard is ...", a fragment
listing versions) and keep a statement only when it names a detail and is not hedged.
"""

from __future__ import annotations

from engram.nodes.extract.patterns import Rule, rx

_I = r"(?:\bI|\bwe)"
_ADV = (
    r"(?:\s+(?:really|strongly|much|generally|usually|always|still|definitely|also|mostly|normally|now"
    r"|totally|actually|personally|just|kind of|very|honestly|so|absolutely|only|typically|mainly|pretty"
    r"much|basically))*"
)
_FAIL = (
    r"(?:fail(?:ed|s|ing|ure)?|broke|breaks|broken|crash(?:ed|es)?|didn't work|doesn't work|did not work"
    r"|does not work|won't work|errored|timed? ?out|time ?outs?|blew up|hangs?|hung|was a disaster"
    r"|was a nightmare|was a mess|was hell|did nothing|didn't help|did not help|no luck|made no difference"
    r"|crawled|got stuck|went wrong|bit me|burned me|wasted|destroyed|ruined|killed|wrecked|died|corrupted|got wiped"
    r"|was wiped|got deleted)"
)
_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?"
    r"|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_WHEN = (
    rf"(?:(?:the\s+)?end of (?:the )?(?:{_MONTH}|year|month|quarter|summer|spring|autumn|fall|winter)"
    rf"|{_MONTH}|20\d\d|q[1-4]|next (?:year|month|quarter|summer|spring|autumn|fall|winter)|this (?:year|quarter)"
    r"|summer|spring|autumn|fall|winter|christmas|new year|my birthday|\d{1,2}/\d{1,2})"
)
_GOAL_VERB = (
    r"(?:run|learn|ship|launch|release|finish|build|write|read|get|pass|lose|save|start|move|visit|travel"
    r"|buy|publish|reach|hit|complete|master|switch|migrate|quit|open|raise|hire|grow|study|climb|cycle"
    r"|swim|finally)"
)
_JOB = (
    r"(?:engineer|developer|dev|designer|manager|student|scientist|researcher|teacher|professor|doctor"
    r"|nurse|founder|co-founder|analyst|writer|consultant|architect|lead|cto|ceo|programmer"
    r"|administrator|admin|freelancer|intern|sre|devops|pm|product owner|sophomore|freshman|undergrad|grad student"
    r"|phd student|paramedic|pharmacist|electrician|plumber|carpenter|chef|cook|driver|mail carrier"
    r"|landlord|accountant|lawyer|attorney|mechanic|firefighter|police officer|veteran|retiree|caregiver"
    r"|hairdresser|barista|cashier|farmer|pilot|musician|artist|photographer|therapist|dentist|vet|midwife"
    r"|social worker|librarian|coach|athlete|stay-at-home (?:mom|mum|dad|parent)|homemaker)"
)
_PEOPLE = (
    r"(?:mom|mum|mother|dad|father|parents|wife|husband|partner|spouse|son|daughter|kids?|children|baby"
    r"|twins|brother|sister|siblings?|grandma|grandpa|grandmother|grandfather|grand(?:son|daughter|kids?)"
    r"|cousins?|aunt|uncle|niece|nephew|(?:mother|father|brother|sister)-in-law|in-laws|step(?:son|daughter"
    r"|mom|mum|dad|brother|sister)|fianc[eé]e?|girlfriend|boyfriend|(?:best )?friends?|roommate|flatmate"
    r"|neighbou?rs?|family|(?:dog|cat|kitten|parrot|bird|rabbit|hamster|horse|pet)s?|pupp(?:y|ies))"
)
_CONDITION = (
    r"(?:allergic|intolerant|vegetarian|vegan|pescatarian|diabetic|celiac|coeliac|left-handed"
    r"|colou?r-?blind|deaf|blind|pregnant|lactose intolerant|asthmatic|epileptic|gluten-free|sober"
    r"|teetotal|halal|kosher)"
)
_SHIFT = r"(?:day|night|evening|morning|early|late|graveyard|weekend|swing)\s+shifts?"
"""A work shift ("night shift", "early shifts")."""
_NAME = r"(?-i:[A-Z])[\w.'-]*(?:\s+(?-i:[A-Z])[\w.'-]*)*"
"""A capitalised name of one or more words ("Lisbon", "St Mary's")."""
_DIET = r"(?:vegetarian|vegan|pescatarian|flexitarian|keto|paleo|carnivore|raw vegan)"
_BODY = (
    r"(?:knees?|back|hips?|ankles?|shoulders?|wrists?|neck|eyes?|ears?|heart|lungs?|feet|foot|legs?"
    r"|hamstrings?|calf|calves|achilles|acl|mcl|meniscus|groin|elbows?|toes?|fingers?|thumb|ribs?"
    r"|collarbone|rotator cuff)"
)
_THING = (
    r"(?:project|app|application|service|services|repo|repository|codebase|product|backend|frontend"
    r"|front-end|back-end|api|website|site|platform|monorepo|cli|library|lib|bot|startup|stack|dev stack"
    r"|setup|homelab|home lab|server|servers|cluster|ci|pipeline|db|database|schemas?|tests?|dashboard"
    r"|namespace|model|cache|config|docs|deploys?|builds?|infra|infrastructure|team|company|tooling"
    r"|remote access|backups?|logs?|monitoring|alerts?|migrations?|queue|worker|storage"
    r"|business|shop|store|restaurant|caf[eé]|bakery|bar|farm|clinic|practice|studio|agency|salon"
    r"|channel|podcast|blog|newsletter|band|club|charity|nonprofit)"
)

RULES: tuple[Rule, ...] = (
    # lessons: what failed and why, what works instead
    Rule("lesson", rx(r"\b(?:turns? out|turned out|lessons? learned|learn(?:ed|t) (?:that |it )?(?:the )?hard way"
                      r"|note to self|never again|not doing that again|won't (?:do|make) that (?:again|mistake)"
                      r"|never\s+\w+ing\b[^.!?;]{0,40}\bagain\b|\ba lesson (?:from|for)\b|^lesson:"
                      r"|(?:been |got )?(?:burned|burnt|bitten) by"
                      r"|the (?:fix|solution|workaround|trick|culprit|root cause|problem|catch|gotcha) (?:was|is)"
                      r"|what (?:fixed|solved) it|did the trick|make sure (?:to|you)|don't forget to"
                      r"|remember to|should have|shouldn't have)\b")),
    Rule("lesson", rx(r"\b(?:(?:i )?always forget|keep forgetting|in hindsight)\b"), strong=False),
    Rule("lesson", rx(rf"{_I}\s+(?:learned|found out|realized|realised|discovered|figured out|noticed that)\b")),
    Rule("lesson", rx(rf"\b{_FAIL}\b.*\b(?:because|since|due to|unless|until|without|so|when|whenever"
                      r"|every time|if)\b")),
    Rule("lesson", rx(rf"\b(?:last time|previously|in the (?:first|last|old) version|once|back when|before)\b"
                      rf".*\b{_FAIL}\b|\b(?:tried|did|used)\b.*\b(?:and|but)\s+(?:it|that)\s+{_FAIL}")),
    Rule("lesson", rx(rf"^(?!(?:it|this|that|they|he|she)\b).*\b{_FAIL}\b.*\b(?:again|last time|every time)\b"),
         strong=False),
    Rule("lesson", rx(r"\b(?:helped|fixed it|solved it|fixed the issue|made (?:it|the) difference)\b"),
         strong=False),
    Rule("lesson", rx(r"\b(?:needs?|has to|have to|must|should)\b.*\b(?:otherwise|or else)\b"), strong=False),
    # where the user moved ("we" from one place to another): before the preferences' "moved to"
    # (a tool); passed over when either place is a known tool ("I moved to Postgres")
    Rule("fact", rx(rf"(?:\bI|{_I}(?=\s+(?:\w+\s+)?(?:relocated|moved\s+from)\b))\s+"
                    r"(?:just\s+|recently\s+|finally\s+|have\s+|'ve\s+)?(?:moved|relocated)\s+(?:back\s+)?"
                    rf"(?:from\s+{_NAME}\s+)?to"
                    r"\s+(?=(?-i:[A-Z])[\w.-]*(?:\s+(?-i:[A-Z])[\w.-]*)*(?:\s*(?:[,;!]|\.(?:\s|$)|$)|\s+(?:in|last|this|a|an"
                    r"|two|three|few|several|back|with|from|when|after|before|since|to|for (?:work|a job|my job|school"
                    r"|uni|university|college|love|good))\b))"), kind="fact.location"),
    Rule("fact", rx(r"\bI\s+used\s+to\s+live\s+in\s+[^,;.!?]+?(?:[,;]\s*|\s+)(?:but\s+|and\s+)?(?:now\s+)?"
                    r"(?:I(?:'m|\s+am)\s+(?:now\s+)?(?:in|based in|living in)|I\s+(?:now\s+)?live\s+in|now\s+in)\s+"
                    r"(?=(?-i:[A-Z]))"), kind="fact.location"),
    # where the user moved from, the new place unsaid (no key: the old place is not the current one)
    Rule("fact", rx(rf"{_I}\s+(?:just\s+|recently\s+|finally\s+)?(?:moved|relocated)\s+(?:here\s+|over\s+|away\s+)?"
                    rf"from\s+{_NAME}(?:\s*(?:[,;!]|\.(?:\s|$)|$)|\s+(?:in|last|this|a|an|two|three|few|several"
                    r"|years?|when|after|before|since|because)\b)")),
    # rent and hours worked: before the preferences' routines ("I work 4 days a week")
    Rule("fact", rx(r"\b(?:my|our)\s+rent\s+(?:is|went|goes|was|'s)\b|\bpaying\s+\$?\d+\s+(?:a|per)\s+(?:week|month)\b"
                    r"|\bI\s+work\s+\d+\s+(?:days|shifts|nights|hours)\b")),
    # a student's major: before the preferences' "switched ... to"
    Rule("fact", rx(r"\bI(?:'m|\s+am)\s+(?:changing|switching)\s+my\s+major\s+to\s+|(?:^|\bI\s+)(?:just\s+)?(?:changed|switched)"
                    r"\s+my\s+major\s+to\s+|\bmy\s+major\s+is\s+|\bI(?:'m|\s+am)\s+(?:an?\s+)(?=[\w -]{1,30}?\s+major\b)"
                    r"|\bI\s+major\s+in\s+"), kind="fact.major"),
    # preferences
    Rule("preference", rx(r"\bmy (?:favou?rite|preferred|go-to|default) ([\w .+#-]{1,30}?) (?:is|are)\b"),
         kind="fav"),
    Rule("preference", rx(rf"{_I}{_ADV}\s+(?:hate|dislike|loathe|can't stand|cannot stand|don't like|do not like"
                          r"|don't use|do not use|never use|avoid|am not a fan of|'m not a fan of|no longer use"
                          r"|stopped using|dropped|ditched|gave up on|(?:am|'m) done with|(?:am|'m) not touching"
                          r"|(?:switched|moved|migrated|went) (?:away )?from(?![^,.;!?]*\bto\b)"
                          r"|won't touch|refuse to)\b"), kind="neg"),
    Rule("preference", rx(rf"(?<!\bhow )(?<!\bwhat ){_I}{_ADV}\s+(?:prefer|like|love|enjoy|favou?r|always use|usually use|tend to use"
                          r"|stick (?:with|to)|rely on|swear by|lean|am a (?:big )?fan of|'m a (?:big )?fan of"
                          r"|can't live without)\b"), kind="pref"),
    Rule("preference", rx(r"\bI(?:'m|\s+am)?\s+(?:(?:just|now|still|mostly|only|always)\s+)*(?:use|using"
                          r"|keep (?:my|all my|our|all our) [\w ]{1,20}? in"
                          r"|switched to|moved to|went with|chose|picked|indent with|format with|write in"
                          r"|shoot (?:on|with)|record (?:on|with)|edit (?:in|on|with)|play on|draw (?:on|in|with)"
                          r"|code in|work in)\b"), kind="pref"),
    Rule("preference", rx(r"\bI\s+(?:always|never|usually|only|generally|normally|typically|tend to)\s+(?!\w+ed\b)\w+")),
    Rule("preference", rx(r"\bI\s+(?:want|like|need)\s+(?:this|it|things|everything|them|my \w+|all \w+)\s+(?:in|as|with"
                          r"|to be)\b")),
    Rule("preference", rx(r"(?:^|[,;]\s*)(?:please\s+)?(?:always|never(?!\s+(?:done|been|heard|seen|tried|used|had|got))"
                          r"|(?:don't|do not)(?!\s+(?:know|care|think|remember|get|understand|mind|worry|see|mean|even|really"
                          r"|bother|blame|ask|panic|stress|judge|laugh)\b)|avoid|no more)\s+\w+|\bplease (?:always|never)\b"
                          r"|^no\s+(?!problem|worries|idea|way|clue|need|rush|thanks|luck|one|longer|it|it's|that|this|i|we"
                          r"|you|not|more)\w+")),
    Rule("preference", rx(r"^(?:switched|moved|migrated|changed|converted|went back)\b.*\bto\b"), kind="pref"),
    Rule("preference", rx(rf"{_I}{_ADV}\s+(?:switched|moved|migrated|changed|converted|went)\s+(?:back\s+)?"
                          r"(?:(?:everything|all|it|us|over)\s+)*from\s+[^,.;!?]{1,40}?\s+(?:over\s+|back\s+)?to\b"),
         kind="pref"),
    Rule("preference", rx(r"\b(?:only|always|everywhere|exclusively|or nothing|all the way)\s*(?:[,.;!]|$)"
                          r"|\b(?:from now on|going forward|these days|from here on|instead of|rather than)\b"
                          r"|\b(?:old|bad|force of) habits?\b|\bby habit\b")),
    Rule("preference", rx(r"\b(?:answer|reply|respond|write|talk)(?: to me)? in (?:english|chinese|japanese|german"
                          r"|french|spanish)\b")),
    Rule("preference", rx(r"^if you (?:need|want|have)\b.*\b(?:use|prefer|pick|go with)\b")),
    Rule("preference", rx(r"\bI(?:'m|\s+am)\s+an?\s+(?:huge\s+|big\s+|massive\s+|lifelong\s+)?(?:[\w-]+\s+){1,2}fan\b"
                          r"|\bI\s+(?!(?:was|had|got|did|went|came|said|saw|forgot|felt)\b)(?:\w+\s+){1,5}?every\s+"
                          r"(?:day|morning|evening|night|week|weekend|month|year|summer|winter"
                          r"|(?:mon|tues|wednes|thurs|fri|satur|sun)day)s?\b"
                          r"|\bI\s+(?!(?:was|had|got|did|went|came|said|saw|forgot|felt|spent|paid|lost)\b)(?:\w+\s+){1,4}?"
                          r"\d+\s*(?:[\w-]+\s+){0,3}?(?:a|per|each)\s+(?:day|week|night|morning|month)\b")),
    Rule("preference", rx(r"\bplease\s+(?:use|write|keep|answer|reply|stick to|avoid|format)\b.*\b(?:throughout|always"
                          r"|from now on|every time|by default|going forward|everywhere|in (?:all|every))\b"
                          r"|\bno need to (?:explain|define|introduce|spell out)\b"
                          r"|\bI\s+(?:do|write|run|keep)\s+(?:all|most)\s+(?:of\s+)?my\s+[\w ]{1,20}?\s+in\s+")),
    Rule("preference", rx(r"\bkeep (?:it|things|answers|replies|responses|them|it all) (?:short|simple|brief|concise|casual"
                          r"|light|plain)\b|\bbullet(?:ed)? (?:points|lists?)\b(?! or\b)|\bno (?:long |big )?(?:paragraphs|essays)\b"
                          r"|\bshort (?:answers|replies)\b")),
    # goals
    Rule("goal", rx(r"(?:^|\b(?:my|the|our|new|next|main|big) )(?:main |big |long-term |next |only |new )?(?:goal|plan|aim"
                    r"|objective|dream|ambition|target|resolution)s?\b(?: for [\w ]{1,20})?\s*(?:is|are|was|:)"
                    r"|^(?:also\s+|still\s+)?saving\s+(?:up\s+)?for\s+(?:an?\s+|the\s+|my\s+)")),
    Rule("goal", rx(rf"{_I}(?:'m|'re|\s+am|\s+are)?{_ADV}\s+(?:plan(?:ning)?|going|intend(?:ing)?|aim(?:ing)?"
                    r"|preparing|training|saving(?: up)?|signed up|registered)\s+(?:to|for)\s+(?!(?:know|see|ask|check"
                    r"|say|tell|understand|bed|sleep|eat|grab|go home|talk|thank|try this|try that|hear|go to bed"
                    r"|lunch|dinner|read the docs)\b)")),
    Rule("goal", rx(rf"{_I}(?:'m|'re|\s+am|\s+are)?{_ADV}(?:'d|\s+would)?\s+(?:hop(?:e|ing)|want(?:ing)?|like"
                    r"|wish|dream(?:ing)? of|looking forward)\s+to\s+(?!(?:know|see|ask|check|say|tell|understand"
                    r"|bed|sleep|eat|grab|talk|thank|try|hear|describe|write it down|tidy)\b)"), strong=False),
    Rule("goal", rx(rf"{_I}(?:'ll|\s+will|'m going to|\s+am going to){_ADV}\s+(?:migrate|launch|release|ship"
                    r"|switch|add|build|start|learn|finish|publish|move|run|write|quit)\b"), strong=False),
    Rule("goal", rx(rf"^{_GOAL_VERB}\b.*\b(?:by|before|until|in|for|this|next)\s+{_WHEN}\b"), strong=False),
    Rule("goal", rx(r"\b(?:I(?:'m|\s+am)|we(?:'re|\s+are))\s+(?:flying|heading|travel(?:l)?ing|driving|going)\s+(?:back\s+)?to"
                    r"\s+(?=(?-i:[A-Z]))"), strong=False),
    # skills: a reusable way of doing something
    Rule("skill", rx(r"^(?:to|for) (?:deploy|release|build|publish|set up|install|run|start|debug|test|migrate"
                     r"|ship|back up|restore|upgrade)\b[^,]{0,60},\s*(?:I|we|you)\s+(?:run|use|do|call|execute"
                     r"|need to|just|first|always|tag|push|merge|deploy|build|publish|bump|cut|open|create)\b")),
    Rule("skill", rx(r"\b(?:my|our|the) (?:deploy(?:ment)?|release|build|testing|review|setup|onboarding|backup"
                     r"|upgrade|migration) (?:process|flow|workflow|steps?|procedure|recipe|checklist|routine)"
                     r" (?:is|are|goes)\b|\bwhat works (?:for me |for us )?is\b|\bthe way (?:I|we) do it\b")),
    Rule("skill", rx(r"\byou (?:run|do|call|type|execute|open|click|go|push|tag|merge|build|deploy|create|set|start)"
                     r"\b.*\bthen\b|^first\b.*\bthen\b")),
    Rule("skill", rx(r"(?:^|\bI\s+)(?:just\s+|finally\s+)?(?:did|took|finished|completed|passed|done)\s+(?:a|an|the|my)\s+"
                     r"(?:[\w-]+\s+){0,3}?(?:course|training|apprenticeship|certificate|certification)\b")),
    # facts about the user
    Rule("fact", rx(r"\bI\s+(?:currently\s+)?(?:work|am working|'m working)\s+(?:at|for)\s+"
                    r"|\bI\s+(?:just\s+)?(?:started|joined)\s+(?:at\s+)?(?=(?-i:[A-Z]))"
                    r"|\bI\s+(?:just\s+|recently\s+|finally\s+)?(?:quit|left)\s+[^.;!?]{1,40}?\s+(?:and|to)\s+(?:then\s+|just\s+)?"
                    r"(?:joined|started at|went to|moved to)\s+(?=(?-i:[A-Z]))"
                    r"|\bI\s+(?:just\s+|recently\s+|finally\s+)?(?:got|landed|accepted|took|started)\s+an?\s+(?:new\s+)?"
                    r"(?:job|position|role)\s+(?:as\s+(?:an?\s+)?[\w -]{1,30}?\s+)?(?:at|with)\s+(?=(?-i:[A-Z]))"),
         kind="fact.employer"),
    Rule("fact", rx(r"\bI(?:\s+(?:just\s+|finally\s+)?(?:got\s+)?(?:moved|switched|transferred|went|changed)\s+(?:back\s+)?to"
                    r"|(?:'m|\s+am)\s+(?:now\s+|still\s+)?on|\s+(?:now\s+|still\s+)?work)"
                    rf"(?=\s+(?:the\s+)?{_SHIFT}\b)\s+(?:the\s+)?"), kind="fact.shift"),
    Rule("fact", rx(r"\bI\s+(?:just\s+|recently\s+|finally\s+|also\s+)?(?:quit|left|gave up)\s+(?:my|the|that)\s+"
                    r"(?:[\w-]+\s+){0,3}?(?:job|position|role|gig)\b"
                    r"|\bI\s+(?:also\s+|still\s+)?work\s+(?:the|a|as a)\s+[\w -]{1,25}?\s+(?:at|for|in)\s+"
                    r"|\bI\s+(?:just\s+)?(?:got|was|have been|'ve been)\s+(?:laid off|fired|let go|made redundant)\b"
                    r"|\bI\s+(?:just\s+|finally\s+)?retired\b"
                    r"|\bI\s+(?:just\s+|recently\s+|finally\s+|have\s+|'ve\s+)?(?:quit|stopped|gave up|kicked)\s+"
                    r"(?:smoking|drinking|alcohol|caffeine|coffee|sugar|meat|dairy|vaping|cigarettes|booze|gluten|soda)\b"
                    r"|\bI\s+(?:just\s+)?sold\s+my\s+[^.;!?]{1,30}?\s+and\s+(?:bought|got)\s+an?\s+")),
    Rule("fact", rx(r"\bI\s+(?:currently\s+)?(?:work|am working|'m working)\s+as\s+(?:an?\s+)?"
                    r"|\bI\s+(?:just\s+)?(?:got|was|have been|'ve been)\s+promoted\s+to\s+(?:an?\s+)?"),
         kind="fact.job_title"),
    Rule("fact", rx(r"\bI(?:'m|\s+am)\s+(?=\d{1,2}(?:\s+(?:years?\s+old|yo))?\s*(?:[,;!]|\.(?:\s|$)|$|and\b|now\b))"),
         kind="fact.age"),
    Rule("fact", rx(rf"\bI(?:'m|\s+am)\s+(?:an?\s+)(?=(?:[\w-]+\s+){{0,3}}{_JOB}\b)"), kind="fact.job_title"),
    Rule("fact", rx(r"\bmy name is\s+|\bcall me\s+(?=(?-i:[A-Z]))|\bI\s+(?:legally\s+)?changed\s+my\s+name\s+to\s+"),
         kind="fact.name"),
    Rule("fact", rx(r"\bI\s+(?:live|am living|'m living)\s+in\s+|\bI(?:'m|\s+am)\s+(?:based|located)\s+in\s+"),
         kind="fact.location"),
    Rule("fact", rx(r"\bI(?:'m|\s+am)\s+(?:(?:now|still|strictly|fully|mostly|a)\s+)?"
                    rf"(?={_DIET}\b)|\bI(?:'m|\s+am)\s+(?=no longer\s+(?:a\s+)?{_DIET}\b|not\s+(?:a\s+)?{_DIET}\s+any\s?more\b)"
                    r"|\bI\s+(?:just\s+|recently\s+|finally\s+)?(?:became|went|turned|have been|'ve been)\s+(?:a\s+)?"
                    rf"(?={_DIET}\b)"), kind="fact.diet"),
    Rule("fact", rx(rf"\bI(?:'m|\s+am)\s+(?:(?:a|an|also|mildly|severely|very)\s+)?(?:(?!not\b)[\w-]+\s+)?{_CONDITION}\b"
                    r"|\bI\s+(?:can't|cannot|don't|do not)\s+(?:eat|drink|have)\b"
                    r"|(?:^|\bI\s+)(?:just\s+)?(?:hurt|injured|broke|sprained|strained|pulled|tore|twisted|dislocated|fractured)"
                    rf"\s+my\s+(?:\w+\s+)?{_BODY}"
                    rf"|\bmy\s+(?:left\s+|right\s+)?{_BODY}\s+(?:is|are|has been|have been|hurts?|aches?)\b"
                    rf"|\bI\s+(?:have|'ve got|got)\s+(?:a\s+)?(?:bad|weak|injured|dodgy|bum|sore|broken|torn|busted"
                    rf"|bad left|bad right|weak left|weak right)\s+(?:\w+\s+)?{_BODY}"
                    r"|\bI\s+(?:have|'ve got)\s+(?:type [12] )?(?:asthma|diabetes|adhd|dyslexia|migraines|arthritis|a heart"
                    r" condition|high blood pressure|celiac|insomnia|tinnitus|anxiety|depression|ibs|eczema)"
                    r"|(?:^|\bI\s+)(?:was\s+|got\s+|have been\s+|'ve been\s+)?diagnosed with\b")),
    Rule("fact", rx(rf"{_I}\s+(?:have|'ve got|have got|adopted|got)\s+(?:a|an|one|two|three|four|five|\d+)\s+"
                    rf"(?:\w+\s+)?{_PEOPLE}\b"
                    rf"|{_I}\s+(?:have|'ve got|adopted|got)\s+(?:a|an)\s+(?:[\w-]+\s+){{1,3}}(?:named|called)"
                    r"\s+(?-i:[A-Z])"
                    rf"|\b(?:my|our)\s+{_PEOPLE}(?:,?\s+(?:(?-i:[A-Z][a-z]+)|[a-z]+),?)?(?:'s name)?\s+(?:just\s+|recently\s+"
                    r"|finally\s+|already\s+)?(?:(?:is|are|was)(?!\s+(?:calling|here|home|back|waiting|asleep|sleeping"
                    r"|yelling|shouting|out|busy|talking|texting|downstairs|upstairs|on the phone|at the door)\b)|has|have"
                    r"|can't|cannot|doesn't|don't|hates|loves|likes|needs|lives|live|works|work|studies|goes|turns"
                    r"|turned|just turned|plays|was born|starts|started|attends|teaches|owns|moved|got diagnosed|was diagnosed"
                    r"|has been diagnosed)\b"
                    rf"|\b(?:my|our)\s+{_PEOPLE},?\s+(?-i:[A-Z][a-z]+),?\s+\w+s\b"
                    r"|\bI(?:'m|\s+am)\s+(?:married|engaged|divorced|widowed|a (?:single )?(?:mom|mum|dad|parent"
                    r"|father|mother))\b"), kind="other"),
    Rule("fact", rx(r"\bI\s+(?:now\s+|still\s+)?drive\s+(?:an?|the)\s+(?:\w+\s+){0,2}?(?=(?-i:[A-Z0-9]))"),
         kind="fact.car"),
    Rule("fact", rx(r"\bI\s+(?:teach|lecture|tutor)\s+(?!(?:you|myself|them|him|her)\b)"
                    r"|\bI\s+(?:own|ride)\s+(?:a|an|my)\s+"
                    r"|\bI\s+(?:have\s+|'ve\s+)?(?:just\s+|finally\s+|recently\s+)?(?:qualified|certified|graduated)\s+(?:as|from|in)\b"
                    r"|\bI\s+(?:just\s+|finally\s+)?passed\s+my\s+[\w ]{1,20}?(?:test|exam|boards)\b"
                    r"|\bI\s+(?:speak|can speak)\s+(?=(?-i:[A-Z])|(?:english|spanish|french|german|italian|portuguese|mandarin"
                    r"|cantonese|chinese|japanese|korean|arabic|hindi|russian|dutch|polish|turkish|vietnamese|tagalog"
                    r"|swahili|greek|hebrew|urdu|bengali|punjabi|farsi|persian|ukrainian|romanian|swedish)\b)|\bI(?:'m|\s+am)\s+(?:fluent|a native speaker)\s+in\b"
                    r"|\b(?:native language|mother tongue|first language) is\b")),
    Rule("fact", rx(r"\bI(?:'m|\s+am|'ve been|\s+have been)\s+(?:currently\s+|still\s+|now\s+)?(?:learning"
                    r"|studying|taking)\s+(?!(?:a look|a break|a while|a lot|a sec|that|this|it|notes?|the day"
                    r"|care|over|a step)\b)"), strong=False),
    Rule("fact", rx(r"\b(?-i:[A-Z][a-z]+)\s*\((?:my|our)\s+(?:manager|boss|lead|tech lead|mentor|team lead|cto|pm)\)"
                    r"|\bmy (?:manager|boss|lead|tech lead|mentor|team lead|supervisor|advisor|adviser|phd supervisor|tutor"
                    r"|therapist|gp|doctor|coach|landlord)(?:'s name)?\s+is\s+(?=(?-i:[A-Z]))"),
         kind="other"),
    Rule("fact", rx(r"\b(?:he|she|(?-i:[A-Z][a-z]+))\s+(?:owns|leads|runs|maintains|manages|is in charge of"
                    r"|is responsible for)\b"), kind="other", strong=False),
    Rule("fact", rx(r"\bI(?:'m|\s+am)\s+(?:the\s+)?(?:primary\s+|secondary\s+)?on[- ]call\b"
                    r"|\bI\s+(?:look after|own|maintain|am responsible for|'m responsible for|am in charge of"
                    r"|'m in charge of|run)\s+(?:the|a|our|my)\b|\b(?:they|he|she)\s+put me on\b"
                    r"|\bI(?:'m|\s+am)\s+(?:on|in)\s+the\s+[\w-]+\s+team\b")),
    # a life: origin, studies, jobs left, trips, what is on the way
    Rule("fact", rx(r"\bI\s+was\s+born\s+(?:in|on)\b|\bI\s+grew\s+up\s+in\b"
                    r"|\bI\s+(?:studied|majored in|graduated (?:from|in))\b|\bI\s+(?:have|hold|got|did)\s+(?:an?\s+|my\s+)"
                    r"(?:PhD|doctorate|master'?s|bachelor'?s|MBA|degree|diploma)\b"
                    r"|\bI\s+(?:quit|left)\s+(?:my\s+(?:job|position|role)|(?-i:[A-Z]))"
                    r"|\bI\s+(?:taught(?!\s+(?:him|her|them|me|you|myself|us|it)\b)|used to (?:work|teach)|worked (?:as|at|for)|was an?\s+(?:\w+\s+)?(?:teacher|nurse"
                    r"|engineer|doctor|developer|manager|designer|accountant|lawyer|chef|pilot|driver|officer))\b"
                    rf"|{_I}\s+(?:went|travel(?:l)?ed|flew|drove|moved)\s+(?:back\s+)?to\s+(?=(?-i:[A-Z]))")),
    Rule("fact", rx(r"\b(?:we(?:'re|\s+are)|I(?:'m|\s+am)|and\s+I\s+are)\s+expecting\b"), kind="other"),
    Rule("fact", rx(r"\b(?:my\s+)?(?:physio|physiotherapist|doctor|doc|gp|consultant|specialist|surgeon|dentist"
                    r"|cardiologist|neurologist|optician|midwife)\s+(?:says|said|told me|wants me|has me|put me)\b")),
    Rule("fact", rx(r"\b(?:is|'s)\s+my\s+(?:dog|cat|puppy|pup|kitten|horse|pony|parrot|rabbit|bunny|hamster|pet)\b"
                    r"|^(?-i:[A-Za-z][a-z]+)\s+the\s+(?:collie|lab|labrador|terrier|spaniel|retriever|sheepdog|beagle|poodle"
                    r"|husky|dog|cat|kitten|puppy|pup|horse|pony)\s+(?:had|has|is|was|got)\b"), kind="other"),
    Rule("fact", rx(r"\b(?:my|our)\s+(?:rent|mortgage|salary|income|commute)\s+(?:is|was|takes)\b"), strong=False),
    Rule("fact", rx(r"\b(?:I've|I have|I)\s+(?:already\s+)?(?:read|finished|completed|passed|visited)\s+(?=(?-i:[A-Z]))"
                    r"|\bevery\s+(?:other|second|third|fourth|\d+(?:st|nd|rd|th))\s+(?:day|week|month|weekend)\b"),
         strong=False),
    Rule("fact", rx(r"(?:\b(?:my|our|the)\s+|^)budget(?:'s| is| of)\b"), strong=False),
    Rule("fact", rx(rf"\b(?:I(?:'m|\s+am)|we(?:'re|\s+are)?){_ADV}\s+(?:building|developing|working on"
                    r"|maintaining|making|writing|renovating|remodel(?:l)?ing|restoring|redoing)\b"), strong=False),
    # projects: the stack, structure and conventions of what the user works on
    Rule("project", rx(r"\b(?:my|our) (?:project|app|application|service|repo|repository|product|startup|company"
                       r"|team|website|bot|library|tool|side project|cli)\b(?:\s+[\w-]+){0,2}?\s+is (?:called|named)\b"
                       r"|\bcalling it\b|\bit's called\b")),
    Rule("project", rx(rf"\b(?:my|our|the)\s+(?:[\w-]+\s+){{0,2}}?{_THING}\b(?:\s+[\w-]+){{0,3}}?\s+(?:uses|use"
                       r"|is built|are built|is written|are written|runs|run|is deployed|deploys|depends|targets"
                       r"|is hosted|stores|is on|are on|is|are|'s|has|have|lives?|goes|go|sits?|opens|closes|sells|serves"
                       r"|employs|makes|publishes|posts)\b"),
         strong=False),
    Rule("fact", rx(rf"\bwe(?:'re|\s+are)?{_ADV}\s+(?:use|using|run|running|deploy|deploying|host|hosting"
                       r"|on|standardi[sz]ed on|migrated|switched|moved|rely on|build with|ship with)\b"
                       r"|\bwe\s+(?:\w+\s+){1,3}?with\b|\bwe\s+(?:don't|do not|never)\s+(?:use|run|deploy)\b"),
         strong=False),
    Rule("project", rx(r"\b(?:it's|it is|they're|it's going|they go|it goes|it lives|they live)\s+(?:in|under"
                       r"|into|at)\s+(?=\S*[/.])|\bit is\.?$|\bit is\b(?=\.)|^\w[\w\s-]{0,20}\bit is\b"),
         strong=False),
    Rule("project", rx(r"\b(?:is|are) (?:git-?ignored|enabled|disabled|turned on|turned off|on by default|pinned"
                       r"|required)\b"), strong=False),
)
"""English rules, first match wins."""
