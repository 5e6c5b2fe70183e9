"""Extraction: the offline rule extractor (English and Chinese) and the LLM extractor's contract."""

from __future__ import annotations

import time

import pytest
from fakes import NGramEmbeddings, StructuredFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.memory import InMemoryStore

from engram.nodes.extract.llm import ExtractionError, LLMExtractor, SaveMemories, make_extractor
from engram.nodes.extract.rules import RuleExtractor
from engram.stores.memory.long_term import LongTermMemory


def extract(*texts: str) -> list:
    return RuleExtractor().extract([HumanMessage(t, id=f"m{i}") for i, t in enumerate(texts)])


@pytest.mark.parametrize(
    ("text", "category"),
    [
        # English, as written
        ("I prefer React over Vue now.", "preference"),
        ("I always use pnpm.", "preference"),
        ("Please always answer in Chinese.", "preference"),
        ("Never use class components.", "preference"),
        ("I hate tabs in YAML files.", "preference"),
        ("My favorite editor is Neovim.", "preference"),
        ("I work at Acme Corp as a data engineer.", "fact"),
        ("I have a cousin called Anna who lives in Lyon.", "fact"),
        ("My best friend is moving to Berlin next month.", "fact"),
        ("I have two rabbits named Bo and Mo.", "fact"),
        ("I'm a senior backend developer.", "fact"),
        ("I live in Berlin.", "fact"),
        ("I'm building MJ Studio, a multimodal AI workbench.", "fact"),
        ("I'm allergic to peanuts.", "fact"),
        ("We use PostgreSQL 16 for everything.", "fact"),
        ("Our app uses Next.js 14 and Tailwind.", "project"),
        ("The API prefix is /api/v2.", "project"),
        ("Docker build failed because of the network timeout.", "lesson"),
        ("Turns out you need proxy-env to run docker compose.", "lesson"),
        ("The fix was to pin numpy to 1.26.", "lesson"),
        ("To deploy, we run make release and then helm upgrade.", "skill"),
        ("I plan to add video generation to MJ Studio.", "goal"),
        ("My goal is to run a marathon in 2027.", "goal"),
        # English, as typed in a chat
        ("i mostly write go these days, python only for scripts", "preference"),
        ("no semicolons please", "preference"),
        ("single quotes everywhere", "preference"),
        ("svelte all the way, I really like it", "preference"),
        ("I never deploy on weekends", "preference"),
        ("we're on Rails 7 with sidekiq for jobs", "fact"),
        ("the staging cluster is gke-eu-west1, prod is in us-central", "project"),
        ("our api gateway runs Kong 3.4", "project"),
        ("the docs live in docs/handbook", "project"),
        ("we deploy everything with ArgoCD", "fact"),
        ("terraform 1.7, aws provider 5.x, state in S3", "project"),
        ("I have a bad right shoulder so no overhead presses", "fact"),
        ("I'm lactose intolerant", "fact"),
        ("my daughter is allergic to eggs", "fact"),
        ("Dana (my manager) approves all schema changes", "fact"),
        ("I'm on call every other week", "fact"),
        ("learned the hard way that sqlite locks the whole db on writes", "lesson"),
        ("tried bumping the pool size to 50 and that did nothing", "lesson"),
        ("last time we used celery beat for this it broke silently", "lesson"),
        ("note to self: vite needs the base path set for github pages", "lesson"),
        ("bumping the timeout to 30s helped", "lesson"),
        ("first build the wheel, then upload it with twine", "skill"),
        ("I want to finish the Kubernetes certification by March", "goal"),
        ("finish the CKA before summer", "goal"),
        ("I'm training for the Berlin half in April", "goal"),
        # Chinese
        ("我喜欢用 TypeScript，代码风格偏向函数式编程，多用组合而不是继承", "preference"),
        ("我常用 TypeScript 严格模式", "preference"),
        ("我不喜欢用 class 继承", "preference"),
        ("代码注释用中文", "preference"),
        ("禁止使用 any 类型", "preference"),
        ("我在开发 MJ Studio", "fact"),
        ("我们用 PostgreSQL 16", "fact"),
        ("我在字节跳动工作", "fact"),
        ("我是一名数据工程师", "fact"),
        ("项目用 Nuxt 4 + SQLite", "project"),
        ("Docker 构建又失败了，网络超时", "lesson"),
        ("下次要记得用 proxy-env", "lesson"),
        ("上次用这个方案失败了", "lesson"),
        ("部署流程是：先构建镜像，再推送，最后 helm upgrade", "skill"),
        ("计划添加视频生成功能", "goal"),
        ("我打算明年学 Rust", "goal"),
        # Chinese, as typed in a chat
        ("引号统一用单引号", "preference"),
        ("我一般用 VS Code 写前端", "preference"),
        ("出差我一般不坐红眼航班", "preference"),
        ("每次都要过道的位置", "preference"),
        ("我们后端是 Kotlin + Ktor，部署在阿里云", "project"),
        ("日志都在 /var/log/app 下面", "project"),
        ("用 supervisor 跑 celery", "project"),
        ("我女儿对芒果过敏", "fact"),
        ("我老公不吃香菜", "fact"),
        ("我的导师是王老师", "fact"),
        ("之前用 Redis 做队列 丢过消息 后来换成 RabbitMQ 就稳了", "lesson"),
        ("还有个坑 时区一定要用 UTC 存", "lesson"),
        ("先跑 make test，然后打 tag，再等 CI 发版", "skill"),
        ("争取 11 月前把驾照考下来", "goal"),
        ("明年想去冰岛看极光", "goal"),
        # a second set, written to check the rules generalise
        ('I always squash commits before merging', 'preference'),
        ('never put secrets in the Dockerfile', 'preference'),
        ('we run everything on Hetzner, three CX31 boxes', 'fact'),
        ('our monorepo uses Turborepo with pnpm workspaces', 'project'),
        ('my manager is Aiko, she prefers written updates', 'fact'),
        ("I'm allergic to shellfish", 'fact'),
        ('learned the hard way that cron runs in UTC on the server', 'lesson'),
        ('last time we used Mongo for this it was a nightmare, joins everywhere', 'lesson'),
        ('the fix was setting max_connections to 200', 'lesson'),
        ('my goal for this year is to get the AWS SA Pro cert', 'goal'),
        ('I want to ship the beta by June', 'goal'),
        ('I prefer Vitest over Jest these days', 'preference'),
        ('I work at Initech as a platform engineer', 'fact'),
        ('we deploy with GitHub Actions and Terraform', 'fact'),
        ('I use neovim with lazy.nvim', 'preference'),
        ('the api is on FastAPI 0.110 and Python 3.12', 'project'),
        ('I live in Lyon', 'fact'),
        ('4 spaces, always', 'preference'),
        ('to release, we tag main and the pipeline does the rest', 'skill'),
        ('I have two kids', 'fact'),
        ('我习惯用 Vim 写代码', 'preference'),
        ('我们的数据库是 MySQL 8，部署在腾讯云', 'project'),
        ('下次记得先备份再迁移', 'lesson'),
        ('我打算年底前考 CKA', 'goal'),
        ('项目用的 Django 5 + Celery', 'project'),
        ('我不喜欢用 ORM 写复杂查询', 'preference'),
        ('之前用 SQLite 并发写入老是锁表 后来换成 Postgres 就好了', 'lesson'),
        ('我老婆对海鲜过敏', 'fact'),
        ('发布流程是：先合并到 main，再打 tag', 'skill'),
        ('我在腾讯工作', 'fact'),
        # everyday life, away from software: family, pets, health, work, home, languages
        ('We have two cats and a border collie', 'fact'),
        ('we adopted a tabby called Noodle last spring', 'fact'),
        ('my daughter Ines starts school in September', 'fact'),
        ('My brother works as a paramedic in Leeds', 'fact'),
        ("I'm married, no kids yet", 'fact'),
        ('I teach piano to adults on weekends', 'fact'),
        ('I drive an old Volvo V70', 'fact'),
        ('I speak Dutch and some Spanish', 'fact'),
        ("I'm learning Korean with Duolingo", 'fact'),
        ('I was diagnosed with celiac disease in 2019', 'fact'),
        ('I recently moved to Valencia', 'fact'),
        ('our cafe opens at 7 and closes at 3 on Sundays', 'project'),
        ("I'm saving for a trip to Peru next year", 'goal'),
        ('we are renovating the bathroom, about 8k so far', 'fact'),
        ('you have to bleed the radiators every October, otherwise the top floor stays cold', 'lesson'),
        ('I grew up in Cork', 'fact'),
        ("I have a master's in nursing", 'fact'),
        ('I left Initech in March', 'fact'),
        ('we flew to Lisbon for our anniversary', 'fact'),
        ('my wife and I are expecting twins in October', 'fact'),
        ("I'm 41", 'fact'),
        ('I was promoted to head chef in 2023', 'fact'),
        ("I'm gluten intolerant, so no pasta", 'fact'),
        ("I'm heading to Oslo on the 12th", 'goal'),
        ("I'm a lifelong Celtic fan", 'preference'),
        ('I swim 2 km every Wednesday', 'preference'),
        ('my husband Tomas does all the cooking', 'fact'),
        ('frost killed the seedlings because I planted them out too early', 'lesson'),
        ('我们家养了两只柯基', 'fact'),
        ('I sprained my left ankle playing football', 'fact'),
        ('I shoot with a Fujifilm X-T5', 'preference'),
        ("I'd like to run a sub-3 marathon by 2027", 'goal'),
        ('我每周六下午踢足球', 'preference'),
        ('我在复旦读博', 'fact'),
        ('论文方向换了，改做推荐系统', 'project'),
        ('上次没备份数据库就升级，结果数据恢复不了，以后一定先备份', 'lesson'),
        ('我受不了香菜，所以从来不吃', 'preference'),
        ('my right shoulder has been sore since the move', 'fact'),
        ('I worked as a paralegal for six years', 'fact'),
        ('我们在杭州开了一家咖啡馆', 'project'),
        ('我有鼻炎，春天最难受', 'fact'),
        ('我女儿明年考研', 'fact'),
        ('之前搬家没贴标签找东西找疯了，以后打包一定要贴标签', 'lesson'),
        ('我家养了两只猫', 'fact'),
        ('我儿子今年满三岁', 'fact'),
        ('我上个月搬到深圳了', 'fact'),
        ('我在一所小学教英语', 'fact'),
        ('我会说四川话', 'fact'),
        ('我最近在学吉他', 'fact'),
        ('前年确诊了高血压', 'fact'),
        ('我开的是一辆二手卡罗拉', 'fact'),
        ('我一般周六早上去游泳', 'preference'),
        ('我们的花店早上9点开门', 'project'),
        # life changes
        ('We moved from Berlin last year', 'fact'),
        ('I switched from VS Code to Neovim', 'preference'),
        ('I quit smoking last year', 'fact'),
        ('I got laid off in June', 'fact'),
        ('I retired last spring', 'fact'),
        ('My daughter just started college in Boston', 'fact'),
        ('我戒烟了', 'fact'),
        ('烟戒掉了，省了不少钱', 'fact'),
        ('我已经不吃肉了', 'fact'),
        ('我退休了', 'fact'),
        ('我把房子卖了，现在租房住', 'fact'),
        # said tersely, without a subject
        ("keep it short no essays", "preference"),
        ("learned hard way last yr, red tape on every treated cow now", "lesson"),
        ("plan is 120 cows by 2027 if the bank plays ball", "goal"),
        ("saving for a new bike, got 180 out of 600", "goal"),
        ("physio says no lifting bags over 25 kg", "fact"),
        ("bran the collie had pups", "fact"),
        ("nugget is my cat", "fact"),
        ("自己学会用剪映剪视频了", "skill"),
        ("六级我去年考了580", "skill"),
        ("我在小寨开油泼面馆的 开了八年了", "fact"),
        ("你说简单点 别整那些专业词", "preference"),
        # typed casually: lower case, no apostrophes, chat spellings
        ('im vegetarian btw', 'fact'),
        ('i speak portuguese at home', 'fact'),
        ('strained my calf on a run, out for two weeks', 'fact'),
        ('never eating gas station sushi again', 'lesson'),
        ('new goal is a sub-20 5k', 'goal'),
        ('i gave up the weekend bar job', 'fact'),
        ('i do 20 pushups a day', 'preference'),
        ('我是一名护士', 'fact'),
        ('我做会计的', 'fact'),
        ('以前在工厂干过两年', 'fact'),
        ('快递不干了', 'fact'),
        ('我女儿在上海', 'fact'),
        ('老大上初二 老二上幼儿园', 'fact'),
        ('以后晚上不开车了', 'lesson'),
        ('宁可多等一会也不坐黑车', 'lesson'),
        ('平时一般去公园打太极', 'preference'),
        ('目标 明年考上研究生', 'goal'),
        ('我膝盖不好 爬不了楼', 'fact'),
        ('我在苏州开了个小作坊 做木工的', 'project'),
        ('我想年底前攒够五万块', 'goal'),
        ('以后网购只买自营的', 'lesson'),
        ('今后我一定先备份再升级', 'lesson'),
        ('我去年考了个会计证', 'fact'),
        ('我报了一个英语培训班', 'fact'),
        ('我现在不在那家公司做了', 'fact'),
        ('就是颈椎不好 不能久坐', 'fact'),
        ('我是北京一所大学的应届毕业生', 'fact'),
        ('Please use metric units throughout', 'preference'),
        ('no need to explain the basics, I know them', 'preference'),
        ('I have just qualified as a paramedic', 'fact'),
        ('my cat Miso got diagnosed with kidney disease', 'fact'),
        ('A lesson from this winter: the pipes freeze if the heating goes off', 'lesson'),
        ('二宝刚满月 大宝今年四岁了', 'fact'),
        ('回复简单点 别跟我讲大道理', 'preference'),
        ('每次先喂奶再洗澡 这个办法挺管用', 'lesson'),
        ('我就想攒够十万回老家开个小卖部', 'goal'),
        ('明年想在城东开第二家店', 'goal'),
        ('我不干顺丰了 跳到京东了', 'fact'),
        ('现在每周两天在家办公', 'fact'),
        ('白天婆婆过来帮忙带孩子', 'fact'),
        ('医院说是花生过敏', 'fact'),
        ('房租一个月1500', 'fact'),
        ('老家是安徽阜阳的', 'fact'),
        ('谈了个对象 也是老乡', 'fact'),
        ('our rent went up to 1200 a month', 'fact'),
        ('i work 4 days a week at the cafe', 'fact'),
    ],
)
def test_statements_get_their_category_verbatim(text, category):
    [candidate] = extract(text)
    assert candidate.category == category
    assert candidate.content == text.rstrip()  # details (names, versions, paths) kept verbatim
    assert candidate.message_ids == ["m0"]


@pytest.mark.parametrize(
    "text",
    [
        "Hi!", "Thanks, that's great.", "How are you?", "It's sunny today, I love this weather!",
        "Tell me a joke.", "I love it!", "I like your answer.", "I'm going to bed.",
        "I want to know how this works.", "Can you help me write a SQL query?",
        "What is the best database?", "Do you prefer React or Vue?", "My friend prefers Vue.",
        "I'd like a summary of this.", "It crashed again.", "I think I prefer the second option.",
        "I use it every day.", "I like that idea.", "我喜欢这个",
        "My password is hunter2.", "My API key is sk-proj-abcdefghijklmnopqrstuv.",
        "My card number is 4111 1111 1111 1111.",
        "你好！", "今天天气不错", "谢谢", "这个怎么用？", "帮我写个数据库查询", "你喜欢 Vue 吗",
        "我的密码是abc123", "哈哈哈，讲个笑话",
        # chat as typed: acknowledgements, progress, moods, questions without a question mark
        "ok cool", "looks good, merge it", "👍", "lol yeah", "perfect, thx",
        "ugh this week is brutal", "so tired today", "the pasta was amazing lol",
        "deploying now", "tests are running", "what flag do I need for that",
        "should I use a queue here", "which one is faster", "any ideas why it hangs",
        "if I used Go I'd be done by now", "maybe I'll try Zig someday",
        "my coworker swears by emacs", "everyone on my team uses Arch",
        "let me check the logs", "one sec", "brb coffee",
        "好的 那就这样", "嗯嗯", "累死了 今天开了一天会", "外面下雨了 烦",
        "这个报错是什么意思", "要不要加个索引", "我同事喜欢用 Vim", "如果用 Go 写会不会快点",
        "我先去吃个饭", "等下 我看看日志",
        "PIN 4821", "cvv 317", "支付密码 880088",
        # reports of the moment, questions, other people, moods
        'the pod restarted twice in the last hour',
        'heap is at 310MB after the load test',
        'CI took 9 min this time',
        'ok the migration finished, 4.2M rows',
        'looks like the p95 is 80ms on the canary',
        'the error says ECONNRESET on port 443',
        'I pushed the fix to the branch, PR #482',
        'running the benchmark again with 8 workers',
        "it's deployed to staging now",
        'lol the intern broke prod again',
        'brb, standup',
        'nvm I found it, typo in the env var name',
        'hmm the test passes locally but not in CI',
        'the logs show 502s from the ALB around 14:05',
        'sure, go with the second approach',
        'thanks, that makes sense',
        'why does npm install take so long here',
        'where do I put the nginx config',
        'could be the DNS cache',
        'my coworker Tom thinks we should use Kafka',
        'the client wants the report by Friday',
        'just had lunch, back now',
        "it's so hot in the office today",
        'weekend was great, went hiking',
        "I'm tired, long night",
        'ugh meetings all day',
        'is Postgres 16 stable enough',
        "what's the difference between ECS and EKS",
        'I tried it, same error',
        'restarting the service now',
        '数据已经同步完了 一共 12 万条',
        'CI 跑了 15 分钟',
        '刚才那个报错是 ECONNREFUSED',
        '我重启了一下 好了',
        '日志里全是 502',
        '今天加班到十点 累死',
        '同事说要用 Kafka',
        "I'm taking notes",
        "I'm learning a lot from this thread",
        'we have a meeting at 3pm',
        '我开的是会员卡',
        '我在学着用这个工具',
        '我教你一个办法',
        "I'm not allergic to anything",
        "I'm not vegan",
        '我在学校门口等你',
        '我有病啊，问这个',
        'I taught him how to swim last summer lol',
        'my dad does that all the time haha',
        '这个方案行不行',
        '先这样吧 明天再看',
        '构建又卡在 npm install 了',
        'My mom is calling me, brb',
        'my kids are asleep finally',
        '我卖了',
        '我在家做饭',
        '猫在挠门',
        '老公在开车',
        '周末想去爬山',
        '我开玩笑的',
        'the Jets lost again last night... dont know why I bother',
        "don't worry about it",
        '问下 这个多少钱',
        '我不过敏',
    ],
)
def test_chitchat_questions_and_secrets_yield_nothing(text):
    assert extract(text) == []


def test_only_user_messages_are_sources():
    messages = [
        HumanMessage("Docker keeps timing out", id="u1"),
        AIMessage("I prefer Vue. Your environment needs proxy-env to run docker commands.", id="a1"),
    ]
    assert RuleExtractor().extract(messages) == []


def _answer(question: str, answer: str, *, context: bool = False) -> list[tuple[str, str]]:
    asking = AIMessage(f"Nice. {question}", id="a1")
    said = HumanMessage(answer, id="u1")
    found = (
        RuleExtractor().extract([said], context=[asking])
        if context
        else RuleExtractor().extract([asking, said])
    )
    return [(c.category, c.content) for c in found]


@pytest.mark.parametrize(
    ("question", "answer", "expected"),
    [
        ("Who helps you on the farm?", "wife nuala does the books. young lad cian 14 helps evenings",
         ("fact", "Who helps you on the farm? wife nuala does the books. young lad cian 14 helps evenings")),
        ("儿子多大了？", "十四了 上初二", ("fact", "儿子多大了？ 十四了 上初二")),
        ("Still saving for the GPU?", "scratch the gpu, getting a steam deck instead. need 550 got 320",
         ("goal", "Still saving for the GPU? scratch the gpu, getting a steam deck instead. need 550 got 320")),
        ("还住宿舍吗？", "没 跟室友在街道口合租了个单间 一个月1200",
         ("fact", "还住宿舍吗？ 没 跟室友在街道口合租了个单间 一个月1200")),
        # the request in the answer is not part of it
        ("What do you grow?", "tomatoes and 3 kinds of basil. can you make me a watering schedule?",
         ("fact", "What do you grow? tomatoes and 3 kinds of basil.")),
        # a short sentence after the question
        ("Who helps you on the farm? That's a lot of cows.", "wife nuala does the books",
         ("fact", "Who helps you on the farm? wife nuala does the books")),
    ],
)
def test_an_answer_to_the_assistants_question_is_kept_with_the_question(question, answer, expected):
    assert _answer(question, answer) == [expected]
    assert _answer(question, answer, context=True) == [expected]  # asked in the earlier window


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        ("Want a checklist?", "pls. new tenant for parma starts june 1"),  # an offer, not a question
        ("按一天干6小时算，几个月能攒够，我帮你算算？", "你算算 谢谢你啊 攒够了就去北京看孙子"),
        ("What does the error say exactly?", "failed to resolve source metadata: i/o timeout"),  # the moment
        ("Any name yet?", "not yet. cavan lost again sunday so im in no mood"),  # small talk
        ("Which one?", "no"),
        ("回程呢？", "回程还没想好 先放着"),  # not decided
        ("那要不先写周报？", "周报五分钟的事 敷衍一下"),  # a suggestion, not a question about the user
        ("How is it going?", "I think it's fine, maybe 20 done"),  # hedged
        # small talk: a question about this moment, a suggestion
        ("今天有什么安排？", "刚起 外面雾霾好重 下午去公司"),
        ("Any plans for tonight?", "pizza and the new season of severance with my flatmate"),
        ("Maybe take a break outside?", "grabbed a stroopwafel and an iced coffee, back at it"),
        ("也许出去走走？", "楼下便利店买了个饭团 继续写"),
    ],
)
def test_no_memory_from_an_answer_that_says_nothing_lasting(question, answer):
    assert _answer(question, answer) == []


ORDINARY_ANSWERS = [
    ("Who helps you on the farm?", "wife nuala does the books. young lad cian 14 helps evenings"),
    ("儿子多大了？", "十四了 上初二"),
    ("Still saving for the GPU?", "scratch the gpu, getting a steam deck instead. need 550 got 320"),
    ("还住宿舍吗？", "没 跟室友在街道口合租了个单间 一个月1200"),
    ("What do you grow?", "tomatoes and 3 kinds of basil"),
    ("Where do you work these days?", "at a bakery in leith, early shifts mostly"),
    ("Do you have any pets?", "two cats, miso and tofu, both rescues"),
    ("What's your daughter studying?", "nursing at napier, second year"),
    ("周末一般干嘛？", "带娃去公园 晚上在家打羽毛球"),
    ("你老家是哪的？", "湖南岳阳 每年过年回去"),
    ("How long have you been climbing?", "about 3 years, mostly bouldering at the depot"),
    ("你做什么工作的？", "在银行做风控 干了五年了"),
    # asked of the user, though about now or as a guess
    ("Are you still living in Berlin right now?", "nope, hamburg since may, near the harbour"),
    ("What are you working on at the moment at your job?", "migrating billing to stripe connect"),
    ("Perhaps you're a morning person?", "yes, up at 5:30 for a run most days"),
]
"""Answers to ordinary questions about the user: each keeps its memory whatever rule is added
that removes small talk."""


@pytest.mark.parametrize(("question", "answer"), ORDINARY_ANSWERS)
def test_an_ordinary_answer_about_the_user_is_kept(question, answer):
    [(_, content)] = _answer(question, answer)
    assert content.startswith(question)


@pytest.mark.parametrize(
    ("question", "answer", "replaces"),
    [
        ("Still saving for the GPU?", "scratch the gpu, getting a steam deck instead", "saving for the GPU?"),
        ("还是报北师大新传吗？", "不是 换成武大新传了", "报北师大新传吗？"),
        ("Are you still on Lyft?", "nah im done with lyft, its all uber now", "Are you on Lyft?"),
        ("Still saving for the GPU?", "yep, 400 of 600 now", None),  # still true
        ("How many cows do you have?", "no, 90 cows, same as ever", None),  # no "still"
    ],
)
def test_an_answer_that_changes_what_the_question_took_as_true_replaces_it(question, answer, replaces):
    found = RuleExtractor().extract([AIMessage(question, id="a1"), HumanMessage(answer, id="u1")])
    assert found and all(c.replaces == replaces for c in found)


def test_an_answer_the_rules_already_read_is_not_kept_twice():
    assert _answer("What do you use?", "I prefer Vim for everything") == [
        ("preference", "I prefer Vim for everything")
    ]


def test_an_answer_secret_is_redacted_with_the_question():
    [(_, content)] = _answer("Where does your sister Maya live now?", "lisbon since 2023, door code 4471")
    assert "4471" not in content and "lisbon since 2023" in content
    assert _answer("What's the wifi password?", "hunter2") == []  # only a secret


def test_a_message_with_several_statements_gives_several_candidates():
    candidates = extract("Hey! I work at Acme as a data engineer and I plan to learn Rust this year. What's new?")
    assert [(c.category, c.content) for c in candidates] == [
        ("fact", "I work at Acme as a data engineer"),
        ("goal", "I plan to learn Rust this year."),
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a new first-person subject starts a new memory
        ("ruff for linting, I switched from pylint ages ago. and I indent with tabs",
         ["ruff for linting, I switched from pylint ages ago.", "I indent with tabs"]),
        # an elaboration without a subject stays with its statement
        ("I lean towards small modules. one class per file, no barrels",
         ["I lean towards small modules. one class per file, no barrels"]),
        ("Kotlin always, coroutines over RxJava. like structured concurrency everywhere",
         ["Kotlin always, coroutines over RxJava. like structured concurrency everywhere"]),
        # a question or request in the middle is dropped, the statements around it kept
        ("our CI is Buildkite, can you check the pipeline? we deploy with Helm 3 btw",
         ["our CI is Buildkite", "we deploy with Helm 3 btw"]),
        ("缓存用 Memcached 1.6 在 10.1.2.3 上 要不要加监控",
         ["缓存用 Memcached 1.6 在 10.1.2.3 上"]),
        # a fragment before a statement leads into it
        ("billing-svc question. we're on Flask 3 with celery", ["billing-svc question. we're on Flask 3 with celery"]),
    ],
)
def test_pieces_are_grouped_into_memories(text, expected):
    assert [c.content for c in extract(text)] == expected


def test_items_of_an_announced_goal_list_are_goals():
    context = [HumanMessage("ok, my goals for next year, keep me honest", id="c1")]
    window = [
        HumanMessage("1) swim 2km without stopping. open water, by July", id="m1"),
        HumanMessage("2) read 20 books. mostly history", id="m2"),
        HumanMessage("haha we'll see", id="m3"),
    ]
    candidates = RuleExtractor().extract(window, context=context)
    assert [(c.category, c.content) for c in candidates] == [
        ("goal", "swim 2km without stopping. open water, by July"),
        ("goal", "read 20 books. mostly history"),
    ]
    # without the announcement a bare list item is not a goal
    assert RuleExtractor().extract([HumanMessage("2) read 20 books. mostly history", id="m2")]) == []


def test_chinese_goal_list_items():
    messages = [
        HumanMessage("今年想立几个目标", id="m0"),
        HumanMessage("第一个 考到 PMP 证书", id="m1"),
        HumanMessage("第二个 每天背 30 个单词", id="m2"),
    ]
    assert [(c.category, c.content) for c in RuleExtractor().extract(messages)] == [
        ("goal", "考到 PMP 证书"),
        ("goal", "每天背 30 个单词"),
    ]


def test_secrets_inside_a_statement_are_redacted_not_kept():
    [c] = extract("prod db is MySQL 8.0 on db-prod-2, user svc_app password Kq7!mZp2x")
    assert "Kq7!mZp2x" not in c.content and "[REDACTED]" in c.content
    assert "MySQL 8.0" in c.content and "svc_app" in c.content
    [c] = extract("数据库是 PG 15，账号 app_rw 密码 Hx8#ee21，在 10.2.0.7")
    assert "Hx8#ee21" not in c.content and "app_rw" in c.content


def test_a_later_clause_that_holds_a_secret_is_left_out_of_the_memory():
    [c] = extract("I live in Ghent now, my passport number is 533380006 for the visa form")
    assert c.content == "I live in Ghent now"


def test_a_chinese_topic_chain_splits_at_a_goal_or_the_past():
    found = extract("目标 攒够二十万 回老家开个面馆 以前在食堂干过五年")
    assert [(c.category, c.content) for c in found] == [
        ("goal", "目标 攒够二十万 回老家开个面馆"),
        ("fact", "以前在食堂干过五年"),
    ]


def test_a_remark_laughed_off_after_a_statement_is_not_part_of_it():
    [c] = extract("im a mail carrier, weekends are for the flats. the jets lost again so thats my mood lol")
    assert c.content == "im a mail carrier, weekends are for the flats."


def test_a_sentence_that_only_holds_a_secret_is_left_out_of_the_memory():
    [c] = extract("I prefer Vim. my aws key is AKIAIOSFODNN7EXAMPLE")
    assert c.content == "I prefer Vim."
    [c] = extract("我喜欢用 Vim。我的密码是 Hx8#ee21abc")
    assert "密码" not in c.content and "Vim" in c.content


@pytest.mark.parametrize("unit", ["x", "a.", "a/", "我", "-a", '"a '])
def test_extraction_time_grows_linearly_with_a_long_unbroken_message(unit):
    # A pasted blob (a base64 image, a minified file) must not stall consolidation: 4x the
    # text may take about 4x the time, far from the 16x of a quadratic scan.
    def seconds(chars: int) -> float:
        text = unit * (chars // len(unit))
        runs = []
        for _ in range(3):
            start = time.process_time()  # CPU time: other processes on the machine do not count
            extract(text)
            runs.append(time.process_time() - start)
        return min(runs)

    assert seconds(40_000) / seconds(10_000) < 10


def test_remember_prefix_is_stripped():
    [c] = extract("Please remember that I prefer tabs over spaces.")
    assert (c.category, c.content, c.key) == ("preference", "I prefer tabs over spaces.", "preference.indentation")


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("I prefer React over Vue now.", "preference.frontend_framework", "React"),
        ("I like Vue for frontend work.", "preference.frontend_framework", "Vue"),
        ("我更喜欢 React 而不是 Vue", "preference.frontend_framework", "React"),
        ("My favorite editor is Neovim.", "preference.editor", "Neovim"),
        ("We use PostgreSQL 16 for everything.", "project.database", "PostgreSQL 16"),
        ("We switched to MySQL 8 last month.", "project.database", "MySQL 8"),
        ("我们用的 MariaDB 10", "project.database", "MariaDB 10"),
        ("上周已经迁到 CockroachDB 了", "project.database", "CockroachDB"),
        ("I work at Acme Corp as a data engineer.", "fact.employer", "Acme Corp"),
        ("I just started at Globex, mostly backend", "fact.employer", "Globex"),
        ("I live in Berlin.", "fact.location", "Berlin"),
        ("我住在北京", "fact.location", "北京"),
        ("我上个月搬到深圳了", "fact.location", "深圳"),
        ("I relocated to Singapore for work.", "fact.location", "Singapore"),
        ("我在字节跳动工作", "fact.employer", "字节跳动"),
        ("redux toolkit always, no context soup", "preference.state_management", "redux toolkit"),
        ("状态管理我们用 MobX", "preference.state_management", "MobX"),
        ("组件库从 Vuetify 换成 Naive UI 了", "preference.ui_library", "Naive UI"),
        ("120 char lines, old habit", "preference.line_length", "120"),
        ("2 spaces from now on", "preference.indentation", "2 spaces"),
        ("缩进统一用 4 个空格", "preference.indentation", "4 个空格"),
        ("I use bun for everything now", "preference.package_manager", "bun"),
        # changes: the new value is the key's
        ("I switched from VS Code to Neovim last month.", "preference.editor", "Neovim"),
        ("I moved from Berlin to Lisbon in March.", "fact.location", "Lisbon"),
        ("I used to live in Paris but now I'm in Madrid.", "fact.location", "Madrid"),
        ("I quit my job at Google and joined Stripe.", "fact.employer", "Stripe"),
        ("I got a new job as a nurse at St Mary's hospital.", "fact.employer", "St Mary's hospital"),
        ("I'm not vegetarian anymore.", "fact.diet", "not vegetarian anymore"),
        ("I became vegan in January.", "fact.diet", "vegan"),
        ("I changed my name to Sam Lee after the wedding.", "fact.name", "Sam Lee"),
        ("我换工作了，现在在字节跳动。", "fact.employer", "字节跳动"),
        ("我换了一辆特斯拉", "fact.car", "特斯拉"),
        ("We relocated from Leeds to York in 2019.", "fact.location", "York"),
        ("I got a new job as a React developer at Vercel.", "fact.employer", "Vercel"),  # a company
        ("I keep all my recipes in Notion", "preference.notes_app", "Notion"),
        ("I don't use React anymore, Vue is fine", "preference.frontend_framework", "Vue"),
        ("I no longer use Windows, I'm on macOS now", "preference.os", "macOS"),
        ("i dont use windows anymore, im on macos now", "preference.os", "macos"),
        ("我不用 yarn 了，现在都用 pnpm", "preference.package_manager", "pnpm"),
        ("我在一家物流公司做会计", "fact.employer", "一家物流公司做会计"),
        ("im changing my major to biology", "fact.major", "biology"),
        ("i'm a history major", "fact.major", "history major"),
        ("I got moved to night shift", "fact.shift", "night shift"),
        ("I work the day shift at the hospital", "fact.shift", "day shift"),
        ("我今年58", "fact.age", "58"),
        ("我去年搬到了杭州", "fact.location", "杭州"),  # 我去年 is last year, not "let me go"
        ("车是丰田的", "fact.car", "丰田"),
        ("提了一辆理想L7", "fact.car", "理想L7"),
        ("闺女给我买了个华为手机 好多功能不会用", "fact.phone", "华为手机"),
    ],
)
def test_single_valued_statements_get_a_key(text, key, value):
    [c] = extract(text)
    assert (c.key, c.structured_data["value"]) == (key, value)


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ("I moved to Postgres 16 last year", "project.database", "Postgres 16"),  # a tool, not a place
        ("I'm learning Japanese", None, None),  # not the language of the answers
        ("I speak German at home", None, None),
        ("I moved to Slack for team chat.", None, None),  # an unknown tool: not where they live
        ("We moved from Berlin last year.", None, None),  # where they lived, not where they live
        ("We moved from Jenkins to GitHub Actions.", "project.ci", "GitHub Actions"),  # not a place
        ("I sold my Honda and bought a Tesla Model 3.", None, None),  # a car? a guitar brand?
        ("answer me in Japanese from now on", "preference.response_language", "Japanese"),
    ],
)
def test_a_known_value_sets_only_the_attribute_the_statement_is_about(text, key, value):
    [c] = extract(text)
    assert (c.key, (c.structured_data or {}).get("value") if key else None) == (key, value)


@pytest.mark.parametrize(
    "text",
    [
        "switched my npm token to a new one, the old one leaked",
        "rotated the AWS access keys this morning",
        "I changed my Notion password yesterday",
        "Obsidian 账号换成公司邮箱了",
    ],
)
def test_a_credential_named_after_a_tool_is_no_choice_of_that_tool(text):
    assert [c.key for c in extract(text)] in ([], [None])


def test_a_clause_without_a_subject_is_the_users_only_after_the_user_spoke():
    [c] = extract("谈了个对象 也是老乡 在观澜那边电子厂上班")
    assert c.key is None  # where the partner works is not the user's employer
    assert [c.key for c in extract("我住在杭州，在阿里上班")] == ["fact.location", "fact.employer"]


def test_a_city_that_shares_a_tool_name_sets_no_tool():
    assert [c.key for c in extract("I live in Joplin now, home every weekend")] == ["fact.location"]


def test_a_bike_or_scooter_bought_is_not_the_car():
    keys = [c.key for t in ("我新买了一辆自行车", "我换了一辆电动车") for c in extract(t)]
    assert "fact.car" not in keys
    assert [c.key for c in extract("我换了一辆特斯拉")] == ["fact.car"]


def test_the_key_comes_from_the_clause_that_states_the_choice():
    [c] = extract("I really like Svelte, Angular always felt heavy to me")
    assert (c.key, c.structured_data["value"]) == ("preference.frontend_framework", "Svelte")
    [c] = extract("mobx, always mobx, redux got way too verbose")
    assert (c.key, c.structured_data["value"]) == ("preference.state_management", "mobx")


@pytest.mark.parametrize(
    "text",
    [
        '"TypeError: cannot read properties of undefined (reading \'id\')" in the worker',
        "const cache = new Map<string, User>()",
        "my bank card is 4000 0566 5566 5556, exp 04/29",
        "我的卡号是 6217 0033 1000 2345 678",
    ],
)
def test_pasted_code_errors_and_card_data_make_no_memory(text):
    assert extract(text) == []


@pytest.mark.parametrize(
    "text",
    ["I also like Go.", "I hate Angular.", "I like Python.", "Our app uses Next.js 14 and Tailwind.", "I like pizza.",
     "I like Vue and Svelte.", "I hate Angular, React is ok I guess"],
)
def test_additive_negative_or_multi_valued_statements_get_no_key(text):
    [c] = extract(text)
    assert c.key is None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("I like Vue for frontend work.", "I prefer React over Vue now."),
        ("yarn always, it's what I know", "switched everything to pnpm, yarn is too slow for me"),
        ("我们用的 MySQL 5.6", "上个月已经迁到 TiDB 了"),
        ("缩进用 tab", "缩进改成 2 个空格 以后都这样"),
        ("I live in Lyon.", "I moved to Porto in September."),
        ("我现在住在成都", "我九月份搬到杭州了"),
        ("I drive a 2015 Honda Civic.", "Sold the Civic, I drive a Tesla Model 3 now."),
        ("I'm vegetarian.", "I'm vegan now."),
        ("I use an iPhone 12.", "I switched to a Pixel 8."),
        ("I'm 33.", "I'm 34 now."),
        ("I shoot on a Canon R6 with two primes.", "Sold the Canon, I shoot on a Sony A7 IV now."),
        ("I work as a line cook.", "I got promoted to sous chef."),
        ("我在字节跳动工作", "我上个月跳槽到腾讯了"),
        ("我开的是一辆 2015 年的思域", "我现在开的是特斯拉 Model 3"),
        ("I work at Initech.", "I left Initech and joined Hooli as a PM."),
        ("I'm vegan.", "I'm no longer vegan, I eat fish again."),
        ("我在美团上班", "工作换了，现在在京东"),
        ("我开的是一辆卡罗拉", "卡罗拉卖了，换了一辆比亚迪汉"),
        ("I keep my notes in Evernote.", "I ditched Evernote, everything is in Obsidian now."),
        ("im a biology major", "switched my major to nursing"),
        ("i work the night shift at the bakery", "they moved me to day shift finally, I'm on day shift now"),
        ("我的车是丰田的", "上个月提了一辆特斯拉"),
        ("我用的是小米手机", "儿子给我寄了个苹果手机 小米给老伴了"),
    ],
)
def test_a_changed_preference_supersedes_through_the_write_policy(old, new):
    store = InMemoryStore(index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]})
    ltm = LongTermMemory(store)
    [first] = ltm.upsert("u", extract(old), message_ids=["m1"])
    [second] = ltm.upsert("u", RuleExtractor().extract([HumanMessage(new, id="m9")]))
    assert second.action == "superseded" and second.superseded[0].id == first.memory.id
    assert [m.content for m in ltm.list("u")] == [new]


# -- the LLM extractor ------------------------------------------------------------------------

ANSWER = {
    "memories": [
        {"category": "preference", "content": "The user prefers React", "importance": 0.9,
         "key": "preference.frontend_framework"},
        {"category": "lesson", "content": "Docker needs proxy-env", "importance": 0.85},
    ]
}


async def test_llm_extractor_returns_candidates_and_redacts_the_transcript():
    model = StructuredFakeChatModel(structured_responses=[ANSWER])
    extractor = LLMExtractor(model)
    messages = [
        HumanMessage("I prefer React now; my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789", id="m1"),
        AIMessage("Noted!", id="m2"),
    ]
    candidates = await extractor.aextract(messages, context=[HumanMessage("earlier: I like Vue", id="m0")])
    assert [(c.category, c.content, c.importance, c.key) for c in candidates] == [
        ("preference", "The user prefers React", 0.9, "preference.frontend_framework"),
        ("lesson", "Docker needs proxy-env", 0.85, None),
    ]
    [(schema, sent)] = model.structured_calls
    assert schema is SaveMemories and SaveMemories.__doc__.startswith("Save the long-term memories")
    prompt = "\n".join(m.text for m in sent)
    assert "ghp_" not in prompt and "[REDACTED]" in prompt
    assert "Earlier messages" in prompt and "earlier: I like Vue" in prompt
    assert prompt.index("earlier: I like Vue") < prompt.index("I prefer React now")


async def test_llm_extractor_without_context_has_no_context_section():
    model = StructuredFakeChatModel(structured_responses=[{"memories": []}])
    assert await LLMExtractor(model).aextract([HumanMessage("hi", id="m1")]) == []
    assert "Earlier messages" not in model.structured_calls[0][1][-1].text


async def test_llm_extractor_retries_once_then_rejects_malformed_output():
    model = StructuredFakeChatModel(structured_responses=[
        None,
        {"memories": [{"category": "mood", "content": "happy", "importance": 0.9}]},
        {"memories": [{"category": "fact", "content": "x", "importance": 8}]},
        {"memories": [{"category": "fact", "content": "The user lives in Oslo", "importance": 0.8}]},
    ])
    extractor = LLMExtractor(model)
    messages = [HumanMessage("I prefer React", id="m1")]
    with pytest.raises(ExtractionError, match="literal_error"):
        await extractor.aextract(messages)
    assert len(model.structured_calls) == 2
    retry = model.structured_calls[1][1]
    assert "could not be used" in retry[-1].text and "expected SaveMemories" in retry[-1].text

    # The retry after the bad importance succeeds: the model saw its error and corrected it.
    [memory] = await extractor.aextract(messages)
    assert memory.content == "The user lives in Oslo"
    assert "less than or equal to 1" in model.structured_calls[3][1][-1].text


async def test_llm_extractor_keeps_only_keys_of_the_memorys_own_category():
    answer = {"memories": [
        {"content": "The user indents with tabs", "category": "preference", "importance": 0.9,
         "key": "Preference.Indentation"},
        {"content": "The user works at Acme", "category": "fact", "importance": 0.8,
         "key": "fact"},
        {"content": "The user uses Vim", "category": "preference", "importance": 0.8,
         "key": "project.editor"},
    ]}
    model = StructuredFakeChatModel(structured_responses=[answer])
    found = await LLMExtractor(model).aextract([HumanMessage("tabs; Acme; Vim", id="m1")])
    assert [c.key for c in found] == ["preference.indentation", None, None]


def test_make_extractor_picks_by_model():
    assert make_extractor(None).mode == "offline"
    assert make_extractor(StructuredFakeChatModel()).mode == "llm"


def test_the_extraction_choice_follows_the_model() -> None:
    """auto: the rules without a model, review for engram's small local models, write for any
    other model; an explicit choice that needs a model is refused without one."""
    from engram.nodes.extract.llm import WritingExtractor, extraction_for
    from engram.nodes.extract.review import ReviewExtractor
    from engram.nodes.extract.rules import RuleExtractor
    from engram.nodes.model.calls import LOCAL_MODEL_METADATA

    hosted = StructuredFakeChatModel()
    local = StructuredFakeChatModel(metadata={LOCAL_MODEL_METADATA: "local:0.5b"})
    assert isinstance(make_extractor(None), RuleExtractor)
    assert isinstance(make_extractor(local), ReviewExtractor)
    assert isinstance(make_extractor(hosted), WritingExtractor)
    assert isinstance(make_extractor(local, "write"), WritingExtractor)
    assert isinstance(make_extractor(hosted, "review"), ReviewExtractor)
    assert isinstance(make_extractor(hosted, "rules"), RuleExtractor)
    assert [extraction_for(None, "rules"), extraction_for(hosted, "auto")] == ["rules", "write"]
    # a small model behind a base URL (Ollama, llama-server) reviews; a large one writes
    from langchain_openai import ChatOpenAI

    def served(name: str) -> ChatOpenAI:
        return ChatOpenAI(model=name, base_url="http://127.0.0.1:9/v1", api_key="unused")

    assert [extraction_for(served(n)) for n in ("qwen2.5:1.5b", "llama3.2:3b", "qwen2.5:14b",
                                                 "gpt-4o-mini")] == [
        "review", "review", "write", "write"
    ]
    for choice in ("write", "review"):
        with pytest.raises(ValueError, match="needs a memory model"):
            make_extractor(None, choice)


async def test_the_writing_extractor_adds_the_rules_candidates() -> None:
    """What the model writes, then what the rules find: the write policy de-duplicates."""
    from engram.nodes.extract.llm import WritingExtractor

    answer = {"memories": [{"content": "The user's team ships on Fridays", "category": "project",
                            "importance": 0.7, "key": None}]}
    model = StructuredFakeChatModel(structured_responses=[answer])
    found = await WritingExtractor(model).aextract(
        [HumanMessage("I'm vegetarian. Also we ship every Friday.", id="m1")]
    )
    contents = [c.content for c in found]
    assert contents[0] == "The user's team ships on Fridays"
    assert any("vegetarian" in c for c in contents[1:]), contents


PLACES = [
    ("I live in Lisbon", "Lisbon"),
    ("I moved from Berlin to Lisbon", "Lisbon"),
    ("我住在杭州", "杭州"),
    ("I live in the Netherlands.", "the Netherlands"),
    ("I'm based in São Paulo, mostly remote.", "São Paulo"),
    ("I live in Évora with my partner.", "Évora"),
    ("我现在住在上海浦东", "上海浦东"),
]
NOT_PLACES = [
    "My wifi password is hunter2, I live in a flat with two cats",
    "I live in a flat with two cats.",
    "I live in a small apartment near the station.",
    "I live in the city centre.",
    "I live in a house with a garden.",
    "I live in the suburbs, so I drive a lot.",
    "I live in student housing this year.",
    "I'm based in the office most days.",
    "我住在一个小公寓里",
    "我住在这里很多年了",
]


@pytest.mark.parametrize(("text", "place"), PLACES)
def test_where_the_user_lives_sets_the_location_key(text, place):
    [c] = [c for c in extract(text) if c.key == "fact.location"]
    assert c.structured_data["value"] == place


@pytest.mark.parametrize("text", NOT_PLACES)
def test_a_dwelling_or_part_of_town_is_not_a_location(text):
    # "a flat" superseding "I moved to Lisbon" hid the user's city from recall
    found = extract(text)
    assert found and all(c.key != "fact.location" for c in found)
