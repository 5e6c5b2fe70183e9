"""Extraction: the offline rule extractor (English and Chinese) and the LLM extractor's contract."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.store.memory import InMemoryStore
from pydantic import ValidationError

from engram.nodes.extract import ExtractionError, LLMExtractor, SaveMemories, make_extractor
from engram.nodes.extract_rules import RuleExtractor
from engram.stores.memories import LongTermMemory
from fakes import NGramEmbeddings, StructuredFakeChatModel


def extract(*texts: str) -> list:
    return RuleExtractor().extract([HumanMessage(t, id=f"m{i}") for i, t in enumerate(texts)])


@pytest.mark.parametrize(
    ("text", "category"),
    [
        # English
        ("I prefer React over Vue now.", "preference"),
        ("I always use pnpm.", "preference"),
        ("Please always answer in Chinese.", "preference"),
        ("Never use class components.", "preference"),
        ("I hate tabs in YAML files.", "preference"),
        ("My favorite editor is Neovim.", "preference"),
        ("I work at Acme Corp as a data engineer.", "fact"),
        ("I'm a senior backend developer.", "fact"),
        ("I live in Berlin.", "fact"),
        ("We use PostgreSQL 16 for everything.", "fact"),
        ("I'm building MJ Studio, a multimodal AI workbench.", "fact"),
        ("I'm allergic to peanuts.", "fact"),
        ("Our app uses Next.js 14 and Tailwind.", "project"),
        ("The API prefix is /api/v2.", "project"),
        ("Docker build failed because of the network timeout.", "lesson"),
        ("Turns out you need proxy-env to run docker compose.", "lesson"),
        ("The fix was to pin numpy to 1.26.", "lesson"),
        ("To deploy, we run make release and then helm upgrade.", "skill"),
        ("I plan to add video generation to MJ Studio.", "goal"),
        ("My goal is to run a marathon in 2027.", "goal"),
        # Chinese (seeds 002 and 003's examples)
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


def test_a_message_with_several_statements_gives_several_candidates():
    candidates = extract("Hey! I work at Acme as a data engineer and I plan to learn Rust this year. What's new?")
    assert [(c.category, c.content) for c in candidates] == [
        ("fact", "I work at Acme as a data engineer"),
        ("goal", "I plan to learn Rust this year."),
    ]


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
        ("We use PostgreSQL 16 for everything.", "fact.database", "PostgreSQL 16"),
        ("We switched to MySQL 8 last month.", "fact.database", "MySQL 8"),
        ("I work at Acme Corp as a data engineer.", "fact.employer", "Acme Corp"),
        ("I live in Berlin.", "fact.location", "Berlin"),
        ("我住在北京", "fact.location", "北京"),
        ("我在字节跳动工作", "fact.employer", "字节跳动"),
    ],
)
def test_single_valued_statements_get_a_key(text, key, value):
    [c] = extract(text)
    assert (c.key, c.structured_data["value"]) == (key, value)


@pytest.mark.parametrize(
    "text",
    ["I also like Go.", "I hate Angular.", "I like Python.", "Our app uses Next.js 14 and Tailwind.", "I like pizza."],
)
def test_additive_negative_or_multi_valued_statements_get_no_key(text):
    [c] = extract(text)
    assert c.key is None


def test_a_changed_preference_supersedes_through_the_write_policy():
    store = InMemoryStore(index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]})
    ltm = LongTermMemory(store)
    [old] = ltm.upsert("u", extract("I like Vue for frontend work."), message_ids=["m1"])
    [new] = ltm.upsert("u", RuleExtractor().extract([HumanMessage("I prefer React over Vue now.", id="m9")]))
    assert new.action == "superseded" and new.superseded[0].id == old.memory.id
    assert [m.content for m in ltm.list("u")] == ["I prefer React over Vue now."]


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


async def test_llm_extractor_rejects_malformed_output():
    model = StructuredFakeChatModel(structured_responses=[
        None,
        {"memories": [{"category": "mood", "content": "happy", "importance": 0.9}]},
        {"memories": [{"category": "fact", "content": "x", "importance": 8}]},
    ])
    extractor = LLMExtractor(model)
    messages = [HumanMessage("I prefer React", id="m1")]
    with pytest.raises(ExtractionError, match="instead of SaveMemories"):
        await extractor.aextract(messages)
    with pytest.raises(ValidationError):
        await extractor.aextract(messages)
    with pytest.raises(ValidationError):
        await extractor.aextract(messages)


def test_make_extractor_picks_by_model():
    assert make_extractor(None).mode == "offline"
    assert make_extractor(StructuredFakeChatModel()).mode == "llm"
