"""The review extractor on the real local model (Qwen2.5-Coder-0.5B, llama.cpp in this process).

One window, English and Chinese candidates and a secret: the call must parse under the grammar
(never fall back), and every memory kept must be one of the candidates, in the user's words, with
a category from the enum and no secret.
"""

from __future__ import annotations

from typing import get_args

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from engram.graph.local_model import local_chat_model
from engram.nodes.extract.review import ReviewExtractor
from engram.nodes.extract.rules import RuleExtractor
from engram.stores.memory.types import Category

pytestmark = pytest.mark.model

WINDOW = [
    HumanMessage("I always use pnpm, never npm. our API runs on Fastify 4 with Node 20", id="u1"),
    AIMessage("Noted: pnpm, and Fastify 4 on Node 20.", id="a1"),
    HumanMessage("我们的数据库是 PostgreSQL 16, 密码是 Zq8-hunter2-Lp0x", id="u2"),
    AIMessage("好的,记住了。", id="a2"),
]


async def test_the_local_model_reviews_the_rules_candidates():
    proposed = RuleExtractor().extract(WINDOW)
    assert len(proposed) >= 2
    extractor = ReviewExtractor(local_chat_model("local:0.5b", threads=1, timeout=900))
    found = await extractor.aextract(WINDOW)  # raises if the answer did not parse twice
    assert len(found) <= len(proposed)
    words = [(p.content, p.key, p.message_ids) for p in proposed]
    for memory in found:
        assert (memory.content, memory.key, memory.message_ids) in words
        assert memory.category in get_args(Category)
        assert "hunter2" not in memory.content
