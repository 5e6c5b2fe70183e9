"""Token counting: offline fallbacks, the CJK-aware estimate, per-message caching, truncation."""

from __future__ import annotations

import tiktoken
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from engram.nodes.text.tokens import (
    ESTIMATE_NAME,
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    TokenCounter,
    counter_for_model,
    estimate_tokens,
    is_encoding_cached,
)

SAMPLES = {
    "english": "I work at a startup in Hangzhou as a backend developer, mostly using Go and "
    "PostgreSQL. Our project is called Xinghe and version two ships next month.",
    "chinese": "我在杭州的一家创业公司做后端开发，主要用Go和PostgreSQL。"
    "我们的项目叫星河，下个月要上线第二版。",
    "japanese": "私は東京でソフトウェアエンジニアとして働いています。毎朝コーヒーを飲みます。",
    "korean": "저는 서울에서 소프트웨어 엔지니어로 일하고 있습니다.",
    "numbers": "Order 4821-7730 shipped on 2024-05-01 for $1,299.99 (invoice #55102).",
    "json": '{"user_id": "u-123", "items": [1, 2, 3], "ok": true}',
    "hex": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
    "cyrillic": "Привет, как дела? Я работаю программистом в Москве.",
    "emoji": "great 🎉🎉 thanks 👍",
}


def test_model_without_cached_encoding_falls_back_to_cached_cl100k() -> None:
    # gpt-4o-mini uses o200k_base, which is not in the offline tiktoken cache.
    assert not is_encoding_cached("o200k_base")
    assert counter_for_model("gpt-4o-mini").name == "cl100k_base"
    assert counter_for_model("claude-sonnet-4-5").name == "cl100k_base"
    assert counter_for_model(None).name == "cl100k_base"


def test_no_cached_encoding_at_all_uses_the_character_estimate(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    counter = counter_for_model("gpt-4o")
    assert counter.name == ESTIMATE_NAME
    assert counter.count_text(SAMPLES["english"]) == estimate_tokens(SAMPLES["english"])


def test_estimate_is_generous_against_the_real_encoding() -> None:
    encoding = tiktoken.get_encoding("cl100k_base")
    for name, text in SAMPLES.items():
        real = len(encoding.encode(text))
        assert real <= estimate_tokens(text) <= 2.5 * real + 5, name


def test_estimate_weights_cjk_characters_more_than_latin_ones() -> None:
    assert estimate_tokens("星" * 100) >= 100
    assert estimate_tokens("a" * 100) <= 40


def test_message_cost_includes_overhead_and_tool_calls() -> None:
    counter = counter_for_model(None)
    assert counter.count_message(HumanMessage("", id="empty")) == MESSAGE_OVERHEAD
    plain = AIMessage("let me check", id="a1")
    calling = AIMessage(
        "let me check",
        id="a2",
        tool_calls=[{"name": "weather", "args": {"city": "Lisbon"}, "id": "call-1"}],
    )
    assert counter.count_message(calling) > counter.count_message(plain)
    result = ToolMessage("22 degrees", tool_call_id="call-1", id="t1")
    assert counter.count_messages([plain, result]) == (
        counter.count_message(plain) + counter.count_message(result) + REPLY_PRIMING
    )


class _CountingCounter(TokenCounter):
    def __init__(self) -> None:
        super().__init__(tiktoken.get_encoding("cl100k_base"))
        self.texts_counted = 0

    def count_text(self, text: str) -> int:
        self.texts_counted += 1
        return super().count_text(text)


def test_message_counts_are_cached_by_id_and_content() -> None:
    counter = _CountingCounter()
    history = [HumanMessage(f"message number {i}", id=f"m{i}") for i in range(1000)]
    first = counter.count_messages(history)
    assert counter.texts_counted == 1000
    assert counter.count_messages(history) == first
    assert counter.texts_counted == 1000  # the second pass is all cache hits
    original = counter.count_message(history[0])
    edited = HumanMessage("message number 0, edited to be longer", id="m0")
    assert counter.count_message(edited) > original  # same id, new content: recounted
    assert counter.count_message(edited) > original
    assert counter.texts_counted == 1001


def test_truncate_fits_the_limit_with_and_without_an_encoding() -> None:
    for counter in (counter_for_model(None), TokenCounter(None)):
        for text in SAMPLES.values():
            cut = counter.truncate(text, 10)
            assert text.startswith(cut)
            assert 0 < counter.count_text(cut) <= 10
        assert counter.truncate(SAMPLES["english"], 0) == ""
        assert counter.truncate("short", 100) == "short"


def test_truncate_start_keeps_the_end_within_the_limit() -> None:
    for counter in (counter_for_model(None), TokenCounter(None)):
        for text in SAMPLES.values():
            cut = counter.truncate_start(text, 10)
            assert text.endswith(cut)
            assert 0 < counter.count_text(cut) <= 10
        chinese = SAMPLES["chinese"] * 50 + "最后一句"
        assert counter.truncate_start(chinese, 100).endswith("最后一句")
        assert counter.count_text(counter.truncate_start(chinese, 100)) <= 100
        assert counter.truncate_start(SAMPLES["english"], 0) == ""
        assert counter.truncate_start("short", 100) == "short"


def test_every_cut_is_a_prefix_or_suffix_within_every_limit() -> None:
    mixed = "naïve café ☕ 我们今天去了北京 🎉 then `x = 1` 然后回家。" * 3
    for counter in (counter_for_model(None), TokenCounter(None)):
        for limit in range(1, 60):
            start, end = counter.truncate(mixed, limit), counter.truncate_start(mixed, limit)
            assert mixed.startswith(start) and mixed.endswith(end)
            assert counter.count_text(start) <= limit and counter.count_text(end) <= limit
            assert counter.count_text(end) >= limit - 3  # the end is not cut far short
