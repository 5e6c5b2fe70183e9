"""The memory model's task-state prompt keeps the newest of the folded messages within
`TRANSCRIPT_TOKENS`, whatever the text's density."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage

from engram.nodes.task.update import TRANSCRIPT_TOKENS, _prompt
from engram.nodes.text.tokens import TokenCounter, counter_for_model


def test_the_prompt_keeps_the_newest_messages_of_dense_text() -> None:
    messages = []
    for n in range(60):
        messages.append(HumanMessage(f"第{n}步：请帮我检查订单服务的数据库连接池配置和日志里的超时错误。" * 3))
        messages.append(AIMessage(f"好的，第{n}步已完成，连接池配置正常，但日志里有超时。" * 3))
    messages.append(HumanMessage("NEWEST: 最后请重启支付服务"))
    for counter in (counter_for_model(None), TokenCounter(None)):
        [_, user] = _prompt(None, messages, counter)
        assert "NEWEST" in user.content and "第0步" not in user.content
        assert counter.count_text(user.content) <= TRANSCRIPT_TOKENS + 100  # + the prompt's text
