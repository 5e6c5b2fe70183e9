"""The offline (extractive) running summary: sentences only, never longer than what it replaces."""

from __future__ import annotations

import asyncio
import re

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from engram.nodes.model.summarize import ExtractiveSummarizer
from engram.nodes.text.tokens import counter_for_model

COUNTER = counter_for_model(None)
ANSWER = """Sure! Here's how to set up the project on a fresh machine:

1. Install uv with the official script.
2. Clone the repository and run `uv sync` in it.
3. Copy `.env.example` to `.env` and fill in DATABASE_URL.
4. Start the database:

```bash
docker compose up -d postgres
uv run alembic upgrade head
```

5. Run the tests with `uv run pytest -q`.

If the migration fails, check that Postgres 16 is listening on port 5432:

```python
import psycopg
psycopg.connect("postgresql://app@localhost:5432/app").close()
```

That's it. Let me know if anything breaks!"""


def summarize(previous: str, messages: list[BaseMessage], max_tokens: int = 2000) -> str:
    summarizer = ExtractiveSummarizer()
    return asyncio.run(
        summarizer.asummarize(previous, messages, max_tokens=max_tokens, counter=COUNTER)
    )


def replaced_tokens(previous: str, messages: list[BaseMessage]) -> int:
    """What the summary and the messages cost in the prompt."""
    return COUNTER.count_text(previous) + sum(COUNTER.count_message(m) for m in messages)


def test_the_summary_is_never_longer_than_what_it_replaces():
    messages = [
        HumanMessage("How do I set up the billing service locally? I'm on macOS."),
        AIMessage(ANSWER),
    ]
    summary = summarize("", messages)
    assert COUNTER.count_text(summary) <= replaced_tokens("", messages)
    later = [HumanMessage("Thanks, it works."), AIMessage("Great, glad it works!")]
    again = summarize(summary, later)
    assert COUNTER.count_text(again) <= replaced_tokens(summary, later)


def test_the_summary_holds_sentences_not_list_markers_or_code():
    summary = summarize("", [HumanMessage("How do I set it up?"), AIMessage(ANSWER)])
    lines = [line.split(": ", 1)[1] for line in summary.splitlines()]
    assert lines, summary
    for line in lines:
        assert not re.fullmatch(r"\d+[.)]", line), summary  # "- assistant: 1."
        assert re.search(r"[A-Za-z]{2}", line), summary
    assert "```" not in summary and "psycopg.connect" not in summary, summary
    assert "- assistant: 2. Clone the repository and run `uv sync` in it." in summary
