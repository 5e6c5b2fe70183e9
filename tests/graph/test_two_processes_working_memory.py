"""Working memory across two real processes on one embedded data folder (`$ENGRAM_DATA_DIR`:
the `ChromaStore` `PersistentClient` and the SQLite checkpointer side by side): offloaded tool
results written by one process are read back by the other, only for their own user and thread;
both offloading at once loses and mixes nothing; the same procedure learned in both is one
memory with both uses counted, written one after the other or at the same moment (the write
policy's reads and writes are one compare-and-set on the folder);
a thread deleted in one process is gone for the other.

The two processes are this file run as a script (`python this_file.py`, the `worker` below): a
long-lived graph app (scripted answering model, the local ONNX embedder) that takes one JSON
request per line on stdin and answers one `@@`-prefixed JSON line on stdout.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve()
TESTS_DIR = HERE.parents[1]
MARK = "@@"
START_DELAY = 1.5
"""Seconds ahead a synchronized start is set, so both processes have their request by then."""


def log_text(needle: str, last: str = "") -> str:
    """A tool result of about 22,000 characters (over the default 2,000-token threshold) with
    one `needle` line in its middle (and `last` as its last line)."""
    head = "".join(f"2026-11-26T10:{i % 60:02d}:00Z INFO GET /api/items/{i} 200 12ms\n"
                   for i in range(220))
    tail = "".join(f"2026-11-26T11:{i % 60:02d}:00Z INFO GET /api/cart/{i} 200 9ms\n"
                   for i in range(220))
    return head + needle + "\n" + tail + (last + "\n" if last else "")


# -- the worker process ---------------------------------------------------------------------------


def worker() -> None:  # pragma: no cover - runs in the subprocesses
    import itertools

    from fakes import ToolCallingChatModel
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool

    from engram.graph import Context, Recall, compile_graph
    from engram.graph.builder import default_checkpointer
    from engram.nodes.offload import pointer_of
    from engram.stores.chroma.store import make_store
    from engram.stores.memory.long_term import LongTermMemory
    from engram.stores.memory.procedures import is_procedure
    from engram.stores.memory.users import delete_thread
    from engram.stores.namespaces import episode_namespace, tool_result_namespace

    result_text = {"text": ""}

    @tool
    def fetch_logs(service: str) -> str:
        """Fetch the recent logs of a service."""
        return result_text["text"] or f"{service}: ERROR the connection pool was exhausted"

    @tool
    def restart_service(name: str) -> str:
        """Restart a service."""
        return f"{name} restarted"

    # the procedure writes of a request, with their times (each process writes its own once)
    writes: list[list[float]] = []

    def timed(upsert: Any) -> Any:
        def wrapper(self: Any, user_id: str, candidates: Any, **kwargs: Any) -> Any:
            began = time.time()
            try:
                return upsert(self, user_id, candidates, **kwargs)
            finally:
                if any(c.category == "skill" for c in candidates):
                    writes.append([began, time.time()])

        async def awrapper(self: Any, user_id: str, candidates: Any, **kwargs: Any) -> Any:
            began = time.time()
            try:
                return await upsert(self, user_id, candidates, **kwargs)
            finally:
                if any(c.category == "skill" for c in candidates):
                    writes.append([began, time.time()])

        import inspect as inspecting

        return awrapper if inspecting.iscoroutinefunction(upsert) else wrapper

    LongTermMemory.upsert = timed(LongTermMemory.upsert)  # type: ignore[method-assign]
    LongTermMemory.aupsert = timed(LongTermMemory.aupsert)  # type: ignore[method-assign]

    store = make_store()
    saver = default_checkpointer()

    # A forced race (`procedure` with `race`): the first write of a skill memory waits until the
    # other process has come to its own, so both have read the user's memories before either
    # writes (the interleaving that two processes moving on at the same moment often produce)
    from langgraph.store.base import PutOp

    from engram.stores.namespaces import memory_namespace

    gate: dict[str, Any] = {}
    original_batch, original_abatch = store.batch, store.abatch

    def gated(ops: Any) -> list:
        ops = list(ops)
        if gate and any(
            isinstance(op, PutOp) and op.namespace == memory_namespace(gate["user"])
            and (op.value or {}).get("category") == "skill"
            for op in ops
        ):
            folder, name = gate["folder"], gate["name"]
            gate.clear()
            try:
                meet(folder, name, timeout=15)
            except TimeoutError:  # the other wrote nothing: go on alone
                pass
        return ops

    async def abatch(ops: Any) -> list:
        return await original_abatch(gated(ops))

    store.batch = lambda ops: original_batch(gated(ops))  # type: ignore[method-assign]
    store.abatch = abatch  # type: ignore[method-assign]
    ids = itertools.count()

    def call(tool_name: str, /, **args: Any) -> AIMessage:
        return AIMessage("", tool_calls=[{"name": tool_name, "args": args, "id": f"c{next(ids)}"}])

    def run(replies: list[AIMessage], payload: dict, user: str, thread: str) -> tuple[Any, dict]:
        model = ToolCallingChatModel(messages=iter(replies))
        graph = compile_graph(model, store=store, checkpointer=saver,
                              tools=[fetch_logs, restart_service])
        ctx = Context(user_id=user, recall=Recall(timeout_ms=30_000), memory_work="inline")
        out = graph.invoke(payload, {"configurable": {"thread_id": thread}}, context=ctx)
        return model, out

    def say(text: str) -> dict:
        return {"messages": [HumanMessage(text)]}

    def wait_until(at: float | None) -> None:
        if at:
            time.sleep(max(0.0, at - time.time()))

    def meet(folder: str, name: str, count: int = 2, timeout: float = 120) -> None:
        """Waits until `count` processes have come to `folder` (a `NAME.ready` file each)."""
        here = Path(folder)
        here.mkdir(exist_ok=True)
        (here / f"{name}.ready").touch()
        deadline = time.monotonic() + timeout
        while len(list(here.glob("*.ready"))) < count:
            if time.monotonic() > deadline:
                raise TimeoutError("the other process never came")
            time.sleep(0.001)

    def offload(r: dict) -> dict:
        """One turn per thread, each fetching a long log with that thread's needle."""
        wait_until(r.get("at"))
        done = []
        for thread, needle, *last in r["threads"]:
            result_text["text"] = log_text(needle, *last)
            try:
                model, out = run([call("fetch_logs", service="checkout"), AIMessage("Got them.")],
                                 say(r.get("text", "Fetch the checkout logs.")), r["user"], thread)
            finally:
                result_text["text"] = ""
            pointer = pointer_of(model.calls[1][-1].content)
            done.append({"thread": thread, "pointer": pointer, "failures": out.get("failures", []),
                         "offloaded": {k: v.get("kept_in") for k, v in out["offloaded"].items()}})
        return {"done": done}

    def read(r: dict) -> dict:
        """A turn whose model reads then searches a kept result back."""
        memory_id = r["memory_id"]
        model, out = run([
            call("read_tool_result", memory_id=memory_id, offset=r["offset"], length=200),
            call("search_tool_result", memory_id=memory_id, query=r["query"], limit=1),
            AIMessage("Read it."),
        ], say("Read that result again."), r["user"], r["thread"])
        return {"read": model.calls[1][-1].content, "search": model.calls[2][-1].content,
                "failures": out.get("failures", [])}

    def procedure(r: dict) -> dict:
        """A run with two tool calls that worked; then (once the other process came to `meet`,
        when given) the user moves on (`then`: "next") or the session ends ("end"). `race`:
        the procedure's write waits until the other process is about to write too."""
        user, thread = r["user"], r["thread"]
        replies = [call("fetch_logs", service=r["service"]),
                   call("restart_service", name=r["service"]),
                   AIMessage("The pool was exhausted; I restarted it."),
                   AIMessage("Glad it works.")]
        model = ToolCallingChatModel(messages=iter(replies))
        graph = compile_graph(model, store=store, checkpointer=saver,
                              tools=[fetch_logs, restart_service])
        ctx = Context(user_id=user, recall=Recall(timeout_ms=30_000), memory_work="inline")
        config = {"configurable": {"thread_id": thread}}
        first = graph.invoke(say(r["task"]), config, context=ctx)
        if r.get("meet"):
            meet(r["meet"], r["name"])
        if r.get("race"):
            gate.update(user=user, folder=str(Path(r["meet"]) / "put"), name=r["name"])
        writes.clear()
        if r["then"] == "next":
            out = graph.invoke(say("Great, thanks, that fixed it."), config, context=ctx)
        else:
            out = graph.invoke({"end_session": True}, config, context=ctx)
        return {"pending": len(first.get("pending_procedures") or []),
                "failures": first.get("failures", []) + out.get("failures", []),
                "writes": list(writes)}

    def prompt(r: dict) -> dict:
        model, out = run([AIMessage("Looking at it.")], say(r["text"]), r["user"], r["thread"])
        built = out["built_context"]
        return {"prompt": str(model.calls[-1][0].content), "episode_ids": built["episode_ids"],
                "memory_block": built["memory_block"], "failures": out.get("failures", [])}

    def end(r: dict) -> dict:
        model = ToolCallingChatModel(messages=iter([]))
        graph = compile_graph(model, store=store, checkpointer=saver, tools=[fetch_logs])
        out = graph.invoke({"end_session": True}, {"configurable": {"thread_id": r["thread"]}},
                           context=Context(user_id=r["user"], memory_work="inline"))
        return {"failures": out.get("failures", [])}

    def procedures(r: dict) -> dict:
        found = [m for m in LongTermMemory(store).list(r["user"], limit=1000)
                 if is_procedure(m.structured_data)]
        return {"procedures": [
            {"id": m.id, "content": m.content, "key": m.key, "uses": m.structured_data.get("uses"),
             "current": m.current, "forgotten": m.forgotten, "thread": m.source_thread_id}
            for m in found
        ]}

    def inspect(r: dict) -> dict:
        user, thread = r["user"], r["thread"]
        results = store.search(tool_result_namespace(user, thread), limit=1000)
        episodes = store.search(episode_namespace(user), filter={"thread_id": thread}, limit=1000)
        namespaces = [list(ns) for ns in store.list_namespaces(prefix=("tool_results",))]
        return {"heads": sorted(i.key for i in results if i.value.get("kind") == "head"),
                "items": len(results), "episodes": [e.value["content"] for e in episodes],
                "namespaces": namespaces,
                "checkpoint": saver.get_tuple({"configurable": {"thread_id": thread}}) is not None}

    def delete(r: dict) -> dict:
        return {"deleted": delete_thread(store, r["user"], r["thread"], checkpointer=saver)}

    def checkpoint_wal(r: dict) -> dict:
        saver.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return {}

    ops = {"offload": offload, "read": read, "procedure": procedure, "prompt": prompt,
           "end": end, "procedures": procedures, "inspect": inspect, "delete": delete,
           "wal": checkpoint_wal, "ping": lambda r: {"pid": os.getpid()}}
    print(MARK + json.dumps({"ready": os.getpid()}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            answer = {"ok": ops[request["op"]](request)}
        except Exception as error:  # noqa: BLE001 - reported to the test, which fails with it
            import traceback

            answer = {"error": f"{error!r}\n{traceback.format_exc()}"}
        print(MARK + json.dumps(answer, default=str), flush=True)
    store.close()
    saver.conn.close()


# -- the test side --------------------------------------------------------------------------------


class Worker:
    """One app process on the shared folder."""

    def __init__(self, name: str, env: dict[str, str], logs: Path) -> None:
        self.name = name
        self.stderr = open(logs / f"{name}.stderr", "w+")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE), "worker"], env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=self.stderr, text=True,
        )
        assert "ready" in self._answer()

    def send(self, op: str, **request: Any) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(json.dumps({"op": op, **request}) + "\n")
        self.proc.stdin.flush()

    def receive(self) -> dict:
        answer = self._answer()
        assert "error" not in answer, f"{self.name}: {answer['error']}"
        return answer["ok"]

    @staticmethod
    def receive_all(*workers: Worker) -> list[dict]:
        """Every worker's answer, all read before any error is raised (so the next request of
        a module-scoped worker is not answered with this one's answer)."""
        answers = []
        for w in workers:
            answers.append(w._answer())
        for w, answer in zip(workers, answers):
            assert "error" not in answer, f"{w.name}: {answer['error']}"
        return [answer["ok"] for answer in answers]

    def ask(self, op: str, **request: Any) -> dict:
        self.send(op, **request)
        return self.receive()

    def refusal(self, op: str, **request: Any) -> str:
        """The error the worker answers `op` with (the test fails if it answers without one)."""
        self.send(op, **request)
        answer = self._answer()
        assert "error" in answer, f"{self.name} answered {op} without an error: {answer}"
        return answer["error"]

    def _answer(self) -> dict:
        assert self.proc.stdout
        while True:
            line = self.proc.stdout.readline()
            if not line:
                self.stderr.seek(0)
                raise AssertionError(f"{self.name} exited ({self.proc.wait()}): "
                                     f"{self.stderr.read()[-3000:]}")
            if line.startswith(MARK):
                return json.loads(line[len(MARK):])

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.stderr.close()


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shared-data")


@pytest.fixture(scope="module")
def processes(folder: Path) -> Iterator[tuple[Worker, Worker]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    if "ENGRAM_EMBEDDING_MODEL_DIR" in os.environ:
        env["ENGRAM_EMBEDDING_MODEL_DIR"] = os.environ["ENGRAM_EMBEDDING_MODEL_DIR"]
    env.update({
        "ENGRAM_DATA_DIR": str(folder),
        "PYTHONPATH": os.pathsep.join([str(TESTS_DIR), env.get("PYTHONPATH", "")]),
        "ANONYMIZED_TELEMETRY": "False",
    })
    logs = folder.parent / f"{folder.name}-logs"
    logs.mkdir(exist_ok=True)
    a = Worker("A", env, logs)
    try:
        b = Worker("B", env, logs)
    except BaseException:
        a.close()
        raise
    try:
        yield a, b
    finally:
        a.close()
        b.close()


def _user() -> str:
    return f"alice-{uuid.uuid4().hex[:6]}"


def _thread() -> str:
    return str(uuid.uuid4())


def _not_found(memory_id: str) -> str:
    from engram.graph.offload import NOT_FOUND_ANSWER

    return NOT_FOUND_ANSWER.format(memory_id=memory_id)


def test_a_result_offloaded_by_one_process_is_read_back_by_the_other_in_its_thread_only(processes):
    a, b = processes
    user, thread = _user(), _thread()
    needle = "ERROR checkout: pool exhausted on orders-db-kestrel after 30 s"
    [done] = a.ask("offload", user=user, threads=[[thread, needle]])["done"]
    pointer = done["pointer"]
    assert done["failures"] == [] and pointer["totalLength"] == len(log_text(needle))
    assert done["offloaded"] == {pointer["memoryId"]: "store"}
    memory_id = pointer["memoryId"]

    offset = log_text(needle).index(needle)
    got = b.ask("read", user=user, thread=thread, memory_id=memory_id, offset=offset,
                query="pool exhausted kestrel")
    assert got["failures"] == []
    assert needle in got["read"] and "[continue with offset=" in got["read"]
    [hit] = json.loads(got["search"])
    assert "kestrel" in hit["text"]

    # another thread of the same user, and another user in a thread of their own: not found
    for other_user, other_thread in ((user, _thread()), (_user(), _thread())):
        got = b.ask("read", user=other_user, thread=other_thread, memory_id=memory_id,
                    offset=offset, query="pool exhausted kestrel")
        assert got["read"] == got["search"] == _not_found(memory_id)
    # another user on the same thread is refused before anything runs
    refused = b.refusal("read", user=_user(), thread=thread, memory_id=memory_id, offset=offset,
                        query="pool exhausted kestrel")
    assert "ThreadOwnerError" in refused


def test_both_processes_offloading_at_once_into_threads_of_one_user_keep_every_result(processes):
    a, b = processes
    user = _user()
    per_process = 3
    plan = {
        name: [[_thread(), f"ERROR {name}-{n}: disk full on volume vol-{name.lower()}{n}-magpie"]
               for n in range(per_process)]
        for name in ("A", "B")
    }
    at = time.time() + START_DELAY
    a.send("offload", user=user, threads=plan["A"], at=at)
    b.send("offload", user=user, threads=plan["B"], at=at)
    done_a, done_b = Worker.receive_all(a, b)
    done = {"A": done_a["done"], "B": done_b["done"]}

    pointers = {}
    for name, threads in plan.items():
        for (thread, needle), result in zip(threads, done[name], strict=True):
            assert result["thread"] == thread and result["failures"] == []
            assert result["pointer"]["totalLength"] == len(log_text(needle))
            pointers[thread] = (needle, result["pointer"]["memoryId"])
    assert len({m for _, m in pointers.values()}) == 2 * per_process

    # each process reads the other's results (and its own): each thread holds exactly its own
    for thread, (needle, memory_id) in pointers.items():
        reader = b if any(thread == t for t, _ in plan["A"]) else a
        offset = log_text(needle).index(needle)
        tag = needle.split()[1].rstrip(":")
        got = reader.ask("read", user=user, thread=thread, memory_id=memory_id, offset=offset,
                         query=f"disk full {tag}")
        assert needle in got["read"], (thread, got["read"][:300])
        [hit] = json.loads(got["search"])
        assert needle in hit["text"]
        seen = reader.ask("inspect", user=user, thread=thread)
        assert seen["heads"] == [memory_id]
    namespaces = {tuple(ns) for ns in a.ask("inspect", user=user, thread=_thread())["namespaces"]}
    mine = {ns for ns in namespaces if ns[1] == user}
    assert len(mine) == 2 * per_process


TASK = "The checkout service keeps crashing since Monday, can you fix it?"
WORDINGS = {
    "same words": TASK,
    "other words": "The checkout service keeps crashing again since Monday, can you fix it?",
}
"""B's request: the same task as A's `TASK` in both (`same_task`: 6 of 7 terms shared)."""


def _learn_in_both(a: Worker, b: Worker, user: str, wording: str, meeting: Path, *,
                   race: bool) -> list[dict]:
    """A's run in one thread, B's in another, then A's user moves on (next message) and B's
    session ends. `race`: at the same moment, both reading before either writes; else A is
    done before B starts."""
    requests = [
        (a, {"task": TASK, "then": "next", "name": "A"}),
        (b, {"task": WORDINGS[wording], "then": "end", "name": "B"}),
    ]
    common = {"user": user, "service": "checkout"}
    if race:
        for worker_, request in requests:
            worker_.send("procedure", thread=_thread(), meet=str(meeting), race=True,
                         **common, **request)
        ran = Worker.receive_all(a, b)
    else:
        ran = [w.ask("procedure", thread=_thread(), **common, **r) for w, r in requests]
    assert all(r["pending"] == 1 and r["failures"] == [] for r in ran), ran
    assert all(len(r["writes"]) == 1 for r in ran), ran
    seen = [w.ask("procedures", user=user)["procedures"] for w in (a, b)]
    assert seen[0] == seen[1]  # both processes see the same memories
    return [p for p in seen[0] if p["current"] and not p["forgotten"]]


def _check_one_procedure_used_twice(a: Worker, user: str, found: list[dict]) -> None:
    assert len(found) == 1, found  # one task, one sequence of tools: one memory
    [procedure] = found
    assert procedure["key"] == "skill.procedure.fetch_logs.restart_service"
    assert procedure["uses"] == 2, procedure  # both runs counted
    assert procedure["content"].splitlines()[1:] == [
        '1. fetch_logs(service="checkout")', '2. restart_service(name="checkout")'
    ]
    # a third thread's prompt recalls the steps
    got = a.ask("prompt", user=user, thread=_thread(),
                text="The payments service keeps crashing too, can you fix it?")
    assert got["failures"] == []
    assert "Steps that worked for: The checkout service keeps crashing" in got["prompt"]
    assert '1. fetch_logs(service="checkout")' in got["prompt"]
    assert '2. restart_service(name="checkout")' in got["prompt"]
    assert "(worked 2 times)" in got["prompt"]


@pytest.mark.parametrize("wording", list(WORDINGS))
def test_procedures_learned_one_after_the_other_in_two_processes_are_one_memory_used_twice(
    processes, wording, tmp_path
):
    a, b = processes
    user = _user()
    _check_one_procedure_used_twice(a, user, _learn_in_both(a, b, user, wording, tmp_path,
                                                            race=False))


@pytest.mark.parametrize("wording", list(WORDINGS))
def test_procedures_learned_at_the_same_moment_in_two_processes_are_one_memory_used_twice(
    processes, wording, tmp_path
):
    """Both processes move on at the same moment, each about to write when the other is (forced
    here): before writes were held on the folder, both read the user's memories before either
    wrote, and a use was lost (same words) or the task stored twice (other words)."""
    a, b = processes
    user = _user()
    found = _learn_in_both(a, b, user, wording, tmp_path, race=True)
    _check_one_procedure_used_twice(a, user, found)


def test_a_thread_deleted_by_one_process_is_gone_for_the_other(processes, folder):
    from conftest import files_holding

    a, b = processes
    user, thread = _user(), _thread()
    secret_word = "quetzalcoatlus"
    needle = f"ERROR checkout: the {secret_word} pool ran dry (pool=orders-db)"
    kept_only = "INFO audit trail id=ocelot-5521-kept-only"  # in the result's text, nowhere else
    [done] = a.ask("offload", user=user, threads=[[thread, needle, kept_only]],
                   text=f"Why does the {secret_word} checkout keep failing?")["done"]
    memory_id = done["pointer"]["memoryId"]
    assert a.ask("end", user=user, thread=thread)["failures"] == []  # archives the episodes

    offset = log_text(needle).index(needle)
    query = f"{secret_word} pool"
    assert files_holding(folder, "ocelot-5521") != []
    before = b.ask("read", user=user, thread=thread, memory_id=memory_id, offset=offset,
                   query=query)
    assert needle in before["read"] and needle in json.loads(before["search"])[0]["text"]
    seen = b.ask("inspect", user=user, thread=thread)
    assert seen["heads"] == [memory_id] and seen["episodes"] and seen["checkpoint"]
    recalled = b.ask("prompt", user=user, thread=_thread(),
                     text=f"What was wrong with the {secret_word} checkout?")
    assert recalled["episode_ids"], "the control recall found no episode of the thread"

    # B is idle while A deletes the thread
    deleted = a.ask("delete", user=user, thread=thread)["deleted"]
    assert deleted.get("tool_results", 0) >= 2 and deleted.get("episodes", 0) >= 1, deleted

    gone = b.ask("inspect", user=user, thread=thread)
    assert gone["heads"] == [] and gone["items"] == 0
    assert gone["episodes"] == [] and not gone["checkpoint"]
    after = b.ask("read", user=user, thread=thread, memory_id=memory_id, offset=offset,
                  query=query)  # the search index B cached for this id is not used
    assert after["read"] == after["search"] == _not_found(memory_id)
    recalled = b.ask("prompt", user=user, thread=_thread(),
                     text=f"What was wrong with the {secret_word} checkout?")
    assert recalled["episode_ids"] == [] and secret_word not in recalled["memory_block"]

    # and nothing of the thread's result is left in the folder's files, B's writes since included
    # (the needle itself, an error line, is in the pointer's summary, so in the episode B's
    # control recall put into another thread's state: that copy is not the thread's)
    b.ask("wal")
    assert files_holding(folder, "ocelot-5521") == []


if __name__ == "__main__":
    if sys.argv[1:] == ["worker"]:
        worker()
    else:
        raise SystemExit("usage: test_two_processes_working_memory.py worker")
