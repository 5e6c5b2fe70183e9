"""A thread's first turn recalls more memories and archived messages than later turns (nothing
of the conversation is in its prompt yet); `recall.k=0` and `recall.episodes=0` turn them off on
every turn; replies take few of the archived messages' places."""

from __future__ import annotations

from fakes import NGramEmbeddings
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore

from engram.nodes.context import Context, Recall
from engram.nodes.episodes import episode_ops
from engram.nodes.start import recall
from engram.stores.memory.long_term import LongTermMemory, MemoryCandidate


def _store() -> InMemoryStore:
    store = InMemoryStore(index={"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]})
    said = [HumanMessage(f"my garden bed number {n} grows tomatoes", id=f"m{n}") for n in range(40)]
    store.batch(episode_ops(said, user_id="ada", thread_id="old"))
    LongTermMemory(store).upsert("ada", [
        MemoryCandidate(content=f"The user's garden bed {n} grows {plant}", category="fact")
        for n, plant in enumerate(["basil", "kale", "leeks", "beans", "peas", "chard", "okra",
                                   "mint", "sage", "dill", "corn", "rye"])
    ])
    return store


async def test_the_first_turn_recalls_more_archived_messages() -> None:
    store = _store()
    ctx = Context(user_id="ada", recall=Recall(episode_min_similarity=0.0))
    query = "what grows in my garden beds"
    memories, first = await recall(store, ctx, query, first_turn=True)
    later_memories, later = await recall(store, ctx, query)
    assert len(first) == ctx.recall.episodes_first_turn == 30
    assert len(later) == ctx.recall.episodes == 5
    assert len(memories) == ctx.recall.k_first_turn == 10
    assert len(later_memories) == ctx.recall.k == 5
    off = Context(user_id="ada", recall=Recall(k=0, episodes=0, episode_min_similarity=0.0))
    assert await recall(store, off, query, first_turn=True) == ([], [])


async def test_start_counts_a_thread_s_first_turn_only() -> None:
    from engram.nodes.start import prepare_context

    store = _store()
    ctx = Context(user_id="ada", recall=Recall(episode_min_similarity=0.0))
    first, _ = await prepare_context(
        {"messages": [HumanMessage("what grows in my garden beds", id="q1")]}, ctx, store,
        model_name=None, window=8192,
    )
    later, _ = await prepare_context(
        {"messages": [HumanMessage("hi", id="q0"), AIMessage("hello", id="a0"),
                      HumanMessage("what grows in my garden beds", id="q1")]}, ctx, store,
        model_name=None, window=8192,
    )
    assert len(first["episode_ids"]) > len(later["episode_ids"]) == 5
    assert len(first["memory_ids"]) > len(later["memory_ids"]) == 5


async def test_replies_take_at_most_recall_replies_places(store: BaseStore) -> None:
    said: list[BaseMessage] = []
    for n in range(12):
        said += [HumanMessage(f"my garden bed number {n} grows tomatoes", id=f"u{n}"),
                 AIMessage(f"garden bed {n}: tomatoes there need water daily", id=f"a{n}")]
    store.batch(episode_ops(said, user_id="ada", thread_id="old"))
    bars = Recall(episode_min_similarity=0.0, episode_min_relevance=0.0, reply_min_relevance=0.0)
    query = "tomatoes in the garden bed need water daily"

    async def roles(ctx: Context, first_turn: bool) -> list[str]:
        _, episodes = await recall(store, ctx, query, first_turn=first_turn)
        return [e.value["role"] for e in episodes]

    ctx = Context(user_id="ada", recall=bars)
    assert sorted(await roles(ctx, True)) == ["assistant"] * 5 + ["user"] * 12
    later = await roles(ctx, False)
    assert later.count("assistant") == ctx.recall.replies == 1 and len(later) == 5
    uncapped = Context(user_id="ada", recall=bars.replace(replies_first_turn=30))
    assert (await roles(uncapped, True)).count("assistant") == 12


async def test_a_reply_needs_reply_min_relevance_where_relevance_is_fused(store: BaseStore) -> None:
    said = [HumanMessage("my tomatoes need water daily", id="u1"),
            AIMessage("then water the tomatoes each morning in summer", id="a1")]
    store.batch(episode_ops(said, user_id="ada", thread_id="old"))
    query = "my tomatoes need water daily"

    async def roles(reply_bar: float) -> list[str]:
        ctx = Context(
            user_id="ada",
            recall=Recall(
                episode_min_similarity=0.0, episode_min_relevance=0.0, reply_min_relevance=reply_bar
            ),
        )
        _, episodes = await recall(store, ctx, query)
        return sorted(e.value["role"] for e in episodes)

    assert await roles(0.0) == ["assistant", "user"]
    fused = type(store).__name__ == "ChromaStore"  # other stores rank by similarity alone
    assert await roles(1.0) == (["user"] if fused else ["assistant", "user"])
