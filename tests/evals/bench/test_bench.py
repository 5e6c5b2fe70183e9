"""The benchmark scripts run and measure what they claim (tiny sizes; no timing is asserted)."""

from __future__ import annotations

import asyncio

from engram.evals.bench import graph as graph_bench
from engram.evals.bench.stores import run as stores_bench
from engram.evals.bench.stores.processes import bench_processes
from engram.evals.bench.stores.reloads import bench_reloads
from engram.evals.bench.stores.store import CONTENDERS, bench_store


def test_store_section_compares_the_same_searches_side_by_side() -> None:
    rows = bench_store((600,), min_put_batches=1)
    assert [r["measure"].split(",")[0] for r in rows] == [
        "batched put",
        "search top-10 in 1 user's namespace",
        "search top-10 across all users",
    ]
    for row in rows:
        assert all(row[c] > 0 for c in CONTENDERS)
        ratios = ("x_vs_raw", "x_vs_raw_cpu", "x_vs_raw_no_document", "x_vs_in_memory")
        assert all(row[k] > 0 for k in (*ratios, "no_bm25_x_vs_raw"))
    put, *searches = rows
    assert put["calls"] == 2  # 600 items in batches of 500
    for row in searches:
        # the Chroma contenders find InMemoryStore's exact top 10: they do the same search
        found = [float(x) for x in row["exact_top10_found"].split("/")]
        assert all(f >= 9.5 for f in found), row


def test_processes_section_measures_the_lock_and_a_reload_side_by_side() -> None:
    rows = bench_processes((500,))
    assert [(r["items"], r["measure"].split(",")[0], r["calls"]) for r in rows] == [
        (560, "single put", 60),
        (500, "batched put (500 items)", 10),
        (560, "search top-10", 60),
        (560, "search after another process's write (reload)", 15),
    ]
    for row in rows:
        assert row["with"] > 0 and row["without"] > 0 and row["ratio"] > 0
    verdicts = stores_bench.targets({"processes": rows})
    assert [v["n"] for v in verdicts] == [560, 500, 560]  # the reload has no target


def test_reloads_section_shows_what_reloads_kept_now_and_before() -> None:
    [row] = bench_reloads((300,), reloads=4)
    assert (row["items"], row["reloads"]) == (300, 4)
    # a restart in place keeps no file of the old state (Chroma's SQLite pool may open one
    # connection more); a new system per reload kept the old one's, about ten files each
    assert row["open_files_added"] <= 2
    assert row["open_files_added_before"] >= 20
    assert row["search_after_write_p50_ms"] > 0 and row["search_after_write_p50_ms_before"] > 0


def test_targets_are_judged_from_the_measured_ratios() -> None:
    results = {
        "store": [
            {"items": 50_000, "measure": "batched put, items/s", "x_vs_raw": 1.2},
            {
                "items": 50_000,
                "measure": "search top-10 in 1 user's namespace, p50 ms",
                "x_vs_raw": 1.4,
                "x_vs_in_memory": 0.5,
            },
        ],
        "embeddings": [
            {"embedder": "LocalEmbeddings", "texts": "short", "n": 128, "x_vs_default": 3.9}
        ],
    }
    verdicts = stores_bench.targets(results)
    assert [(v["measured"], v["holds"]) for v in verdicts] == [
        (1.2, True),
        (1.4, False),
        (0.5, True),
        (3.9, False),
    ]


def test_graph_bench_reports_every_store_and_size_with_a_verdict() -> None:
    result = asyncio.run(graph_bench.run(iterations=4, graph_iterations=2, rounds=1))
    assert {(r["store"], r["messages"]) for r in result["rows"]} == {
        (store, size) for store in graph_bench.STORES for size in graph_bench.SIZES
    }
    assert all(r["total_p50_ms"] > 0 and r["total_cpu_p50_ms"] >= 0 for r in result["rows"])
    assert all("graph_turn_p50_ms" in r for r in result["rows"] if r["store"] == "in_memory")
    assert [t["store"] for t in result["targets"]] == list(graph_bench.STORES)
    assert all(isinstance(t["target_met"], bool) for t in result["targets"])
    assert set(result["code"]) == {"commit", "uncommitted"}


def test_graph_bench_times_recall_quiet_and_under_load_side_by_side() -> None:
    figures = asyncio.run(graph_bench.recall_under_load(iterations=8, load=1, rounds=2))
    assert list(figures) == ["quiet", "1 busy process"]
    assert all(0 < f["p50_ms"] <= f["p95_ms"] for f in figures.values())


def test_concurrent_bench_reports_every_client_and_caller_kind_with_a_verdict() -> None:
    from engram.evals.bench.stores.concurrent import bench_concurrent

    rows = bench_concurrent(60)
    assert [(r["client"], r["callers"]) for r in rows] == [
        ("ephemeral", "async"),
        ("ephemeral", "threads"),
        ("persistent", "async"),
        ("persistent", "threads"),
    ]
    assert all(r["calls"] == 60 and r["chroma_store_calls_per_s"] > 0 for r in rows)
    verdicts = stores_bench.targets({"concurrent": rows})
    assert len(verdicts) == 4 and all(v["target"].startswith("concurrent calls") for v in verdicts)


def test_the_threaded_in_memory_reference_serves_one_call_at_a_time() -> None:
    """langgraph's `InMemoryStore` is not thread-safe (a search can iterate a namespace while
    another thread's put grows it), so the threaded reference lets one call in at a time."""
    import threading

    from engram.evals.bench.stores.concurrent import LockedInMemoryStore

    store = LockedInMemoryStore()
    store.put(("n",), "first", {"v": 1})
    with store._turn:  # another caller is inside the store
        waiting = threading.Thread(target=store.put, args=(("n",), "second", {"v": 2}))
        waiting.start()
        waiting.join(0.3)
        assert waiting.is_alive() and store._data[("n",)].keys() == {"first"}
    waiting.join(5)
    assert not waiting.is_alive()
    assert [i.key for i in store.search(("n",))] == ["first", "second"]


def test_working_memory_bench_measures_both_arms_on_the_same_task(tmp_path) -> None:
    """One task in both arms with a scripted agent (the local model is the script's job): the
    call after the tool's result is sent a pointer with offload and the whole result without."""
    import uuid

    from fakes import ToolCallingChatModel
    from langchain_core.messages import AIMessage

    from engram.evals.bench import working_memory as bench

    task = next(t for t in bench.TASKS if t.name == "logs")

    def agent() -> ToolCallingChatModel:
        def call(name: str, args: dict) -> AIMessage:
            return AIMessage("", tool_calls=[{"name": name, "args": args,
                                              "id": f"call-{uuid.uuid4().hex[:8]}"}])
        return ToolCallingChatModel(messages=iter([
            call(task.tool, {"service": "checkout"}),
            call("final_answer", {"answer": task.answer}),
            AIMessage(task.answer),
        ]))

    runs = {
        arm: bench.run_task(arm, task, 50_000, agent(), tmp_path / arm.replace(" ", "-"))
        for arm in bench.ARMS
    }
    for run in runs.values():
        assert run["outcome"] == "answered" and run["correct"], run
        assert [c["after_result"] for c in run["model_calls"]][:2] == [False, True]
    offloaded, whole = (runs[arm]["model_calls"][1]["tokens"] for arm in ("offload", "no offload"))
    assert offloaded * 5 < whole, (offloaded, whole)
    assert runs["offload"]["offload_ms"] and not runs["no offload"]["reader_calls"]
