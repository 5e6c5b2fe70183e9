"""Offline, a statement that names what it changes retires the memory it names."""

from __future__ import annotations

import uuid

import pytest
from fakes import RecordingChatModel, StructuredFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from engram.graph import Context, compile_graph
from engram.nodes.extract.llm import WritingExtractor
from engram.nodes.extract.retired import retired
from engram.nodes.extract.review import ReviewExtractor
from engram.nodes.extract.rules import RuleExtractor
from engram.stores.memory.long_term import LongTermMemory
from engram.stores.memory.types import MemoryCandidate

USER = "dev"
DOCKER_HUB = "images are all on Docker Hub under our lumenpay org btw."
INGRESS = "we're on ingress-nginx now"
DITCHING = "ALSO we're ditching Docker Hub, the pull rate limits bit us, everything moves to ECR now"
SCRATCH = "change of plans. scratch the ingress-nginx idea, we go with the AWS Load Balancer Controller"
SCRATCHED = SCRATCH.removeprefix("change of plans. ")
"""What the rules keep of `SCRATCH`."""


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (DITCHING, "ALSO we're Docker Hub"),
        (SCRATCH, "the ingress-nginx idea"),
        ("Dr. Asante changed his levodopa to 4 times a day now", "Asante his levodopa to 4 times a day now"),
        ("还有猫砂也换了 膨润土灰太大 现在用豆腐砂了", "还有猫砂也"),
        ("医生给换成缓释片了", "医生给 缓释片了"),
        ("we don't use jira anymore, tickets live in linear", "we don't use jira"),
        ("we dropped Jira, tickets live in Linear now", "we Jira"),  # one name is enough
        ("不用Slack了 改用飞书", "Slack"),
        ('I don\'t use "Jira" anymore', 'I don\'t use "Jira"'),  # a name set apart in quotes
        # a space around an English name is no clause break, one between Chinese words is
        ("汇报 剪辑不用 Audition 了 改用 Descript 按文字稿剪", "剪辑 Audition"),
        ("收款的事搞定了 PayPal 不用了，改用 Wise 收", "收款的事搞定了 PayPal"),
        ("情况有变！女朋友公司把她调回杭州总部了 所以不去上海了 就在杭州找", "所以 上海"),
    ],
)
def test_the_clause_that_says_something_changed_is_what_it_names(text, named):
    assert retired(text) == named


@pytest.mark.parametrize(
    "text",
    [
        "I use Docker Hub for our images",  # no change word
        "我们用的 MySQL 8",
        "英国不去了",  # names too little to tell what changed
        "quit it",
        "moved",
        "I moved",  # a change with nothing it names
        "thanks, that fixed it!",
        "we run the tests on every push to main",
        # a question or a supposition changes nothing yet
        "if we switched Jenkins to GitHub Actions, would builds get faster?",
        "should we stop using Docker Hub?",
        "后端数据库要不要换成PostgreSQL？",
        "要是把丰田卡罗拉换成比亚迪汉，会不会省油？",
        # someone else's change, or one of this moment only
        "my colleague Tom switched from VS Code to Zed",
        "my friend's company doesn't use Jenkins anymore",
        "I had soup instead of a sandwich for lunch today",
        # words in quotes are someone's words reported
        "a blog post said 'we don't use Jenkins anymore' lol",
        'the vendor\'s page says "we no longer support Windows 7"',
        "他朋友圈写着「不再接 Shopify 的单了」",
        # a limit or a measurement is not a change of what the user does
        "p99 dropped from 240 to 170ms on staging already",
        "my doctor says no more than 3 cups of coffee a day is fine",
        "we dropped jira",  # one lower-case word: too little to tell what changed
    ],
)
def test_a_statement_that_names_no_change_retires_nothing(text):
    assert retired(text) is None


def test_the_rules_mark_what_a_statement_retires_also_where_they_kept_nothing_else():
    window = [
        HumanMessage("I prefer Svelte over React now.", id="m1"),
        AIMessage("Noted."),
        HumanMessage(SCRATCH, id="m2"),
        HumanMessage("潜店就换成仙本那的一家 叫海猫潜水 也是中文教练", id="m3"),
        HumanMessage("haha ok thanks!", id="m4"),
        HumanMessage("maybe we'll switch to Linear, no more Jira", id="m5"),
    ]
    found = {c.message_ids[0]: c for c in RuleExtractor().extract(window)}
    assert found["m1"].replaces is None and not found["m1"].update_only
    assert found["m2"].replaces == "the ingress-nginx idea"
    # the rules keep nothing of m3: it is offered as an update of the memory it names only
    assert found["m3"].update_only and found["m3"].replaces == "潜店就 仙本那的一家"
    assert "m4" not in found and "m5" not in found  # small talk; a hypothesis changes nothing


def test_a_model_that_writes_memories_judges_changes_itself_one_that_reviews_keeps_the_rules():
    model = StructuredFakeChatModel(structured_responses=[])
    assert ReviewExtractor(model).rules.follow_changes is True
    assert WritingExtractor(model).rules.follow_changes is False
    found = RuleExtractor(follow_changes=False).extract([HumanMessage(SCRATCH, id="m2")])
    assert [c.replaces for c in found] == [None] * len(found)


@pytest.fixture
def store(real_store):
    return real_store  # the similarities these texts really have


def said(ltm: LongTermMemory, *texts: str) -> None:
    """What the rules extract from `texts`, each its own window, written as consolidate does."""
    for text in texts:
        message = HumanMessage(text, id=uuid.uuid4().hex)
        ltm.upsert(USER, RuleExtractor().extract([message]), message_ids=[message.id])


def current(ltm: LongTermMemory) -> list[str]:
    return sorted(m.content for m in ltm.list(USER))


def test_a_named_change_supersedes_that_memory_and_no_other(store):
    ltm = LongTermMemory(store)
    said(ltm, DOCKER_HUB, INGRESS, "I write the services in Go 1.22")
    said(ltm, SCRATCH)
    assert current(ltm) == sorted([DOCKER_HUB, "I write the services in Go 1.22", SCRATCHED])
    [new] = [m for m in ltm.list(USER) if m.content == SCRATCHED]
    [old] = [m for m in ltm.list(USER, include_superseded=True) if m.content == INGRESS]
    assert new.supersedes == [old.id] and old.superseded_by == new.id


def test_an_update_the_rules_kept_nothing_of_takes_the_place_and_kind_of_what_it_names(store):
    ltm = LongTermMemory(store)
    [shop] = ltm.upsert(USER, [MemoryCandidate(content="潜店我看中一家叫 Blue Turtle Divers 的 有中文教练",
                                               category="project")])
    change = "潜店就换成仙本那的一家 叫海猫潜水 也是中文教练"
    said(ltm, change)
    [new] = ltm.list(USER)
    assert new.content == change and new.category == "project"
    assert new.supersedes == [shop.memory.id]


def test_an_update_that_names_no_memory_is_not_written(store):
    ltm = LongTermMemory(store)
    said(ltm, "I write the services in Go 1.22")
    said(ltm, "潜店就换成仙本那的一家 叫海猫潜水 也是中文教练")
    assert current(ltm) == ["I write the services in Go 1.22"]


def test_a_statement_never_retires_another_of_its_own_message(store):
    ltm = LongTermMemory(store)
    first = MemoryCandidate(content="we host the images on Docker Hub", category="project")
    second = MemoryCandidate(content="no more Docker Hub rate limits for CI", category="lesson",
                             replaces="Docker Hub rate limits for CI")
    written = ltm.upsert(USER, [first, second], message_ids=["m1"])
    assert [w.action for w in written] == ["created", "created"]
    assert len(current(ltm)) == 2


def test_the_offline_graph_retires_a_fact_the_user_says_changed_in_a_later_thread(real_index):
    store = InMemoryStore(index=real_index)
    model = RecordingChatModel(messages=iter(["Noted.", "Ok.", "Done.", "Sure."]))
    graph = compile_graph(model, store=store, checkpointer=InMemorySaver())
    ctx = Context(user_id=USER)
    for text in (INGRESS, SCRATCH):
        config = {"configurable": {"thread_id": uuid.uuid4().hex}}
        graph.invoke({"messages": [HumanMessage(text)]}, config, context=ctx)
        graph.invoke({"end_session": True}, config, context=ctx)
    ltm = LongTermMemory(store)
    assert current(ltm) == [SCRATCHED]
    assert [m.content for m in ltm.list(USER, include_superseded=True) if not m.current] == [INGRESS]
