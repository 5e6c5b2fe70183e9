"""The memory model's summary of an offloaded result reads its beginning and its end within
`SUMMARY_INPUT_TOKENS`, whatever the text's density."""

from __future__ import annotations

from engram.nodes.offload.summary import SUMMARY_INPUT_TOKENS, _excerpt
from engram.nodes.text.tokens import TokenCounter, counter_for_model


def test_the_excerpt_keeps_the_end_of_dense_text_within_its_tokens() -> None:
    text = "开始：" + "".join(f"第{n}行：订单服务的数据库连接池已满，请求超时。\n" for n in range(2000))
    text += "最后一行：支付服务已重启 END"
    for counter in (counter_for_model(None), TokenCounter(None)):
        shown, part = _excerpt(text, counter)
        assert shown == "its beginning and its end are shown"
        assert part.startswith("开始") and part.endswith("END")
        assert counter.count_text(part) <= SUMMARY_INPUT_TOKENS + 5  # + the "[…]" between


def test_a_short_result_is_shown_whole_and_a_long_sparse_one_is_not() -> None:
    counter = counter_for_model(None)
    assert _excerpt("short log", counter) == ("all of it is shown", "short log")
    _, part = _excerpt("a" * 1_000_000 + "END", counter)  # few tokens per character
    assert part.endswith("END") and len(part) < 100_000
