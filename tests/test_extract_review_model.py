"""The review extractor on the real local model (Qwen2.5-Coder-0.5B, llama.cpp in this process).

One window, English and Chinese candidates and a secret: the call must parse under the grammar
(never fall back), and every answer must be one of the candidates, in the user's words or in a
wording that keeps their details, with no secret.
"""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from engram.evals.metrics import contains
from engram.graph.local_model import local_chat_model
from engram.nodes.extract.review import ReviewExtractor
from engram.nodes.extract.rules import RuleExtractor
from engram.nodes.extract.text import details

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
    for memory in found:
        sources = [p for p in proposed if p.message_ids == memory.message_ids]
        assert any(all(contains(memory.content, d) for d in details(p.content)) for p in sources)
        assert "hunter2" not in memory.content
