"""The deployment past one machine: two app processes, each with its own local folder, on one
Chroma server (`chroma run`) and one PostgreSQL checkpointer, both started here on 127.0.0.1,
serving the same user and the same thread in turns."""

from __future__ import annotations

import glob
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TESTS, free_port


def _postgres_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server in a temporary folder on 127.0.0.1 and a free port (run as the
    `postgres` user when the tests run as root: PostgreSQL refuses root); yields its URL."""
    initdb, pg_ctl = _postgres_bin("initdb"), _postgres_bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found: apt-get install postgresql")
    folder = Path(tempfile.mkdtemp(prefix="engram-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        account = pwd.getpwnam("postgres" if _has_user("postgres") else "nobody")
        os.chown(folder, account.pw_uid, account.pw_gid)
        prefix = ["runuser", "-u", account.pw_name, "--"]
    port = free_port()
    data = folder / "data"
    run = lambda *args: subprocess.run([*prefix, *args], check=True, capture_output=True)
    run(initdb, "-D", str(data), "-U", "engram", "--auth=trust", "-E", "UTF8")
    run(
        pg_ctl,
        "-D",
        str(data),
        "-l",
        str(folder / "server.log"),
        "-w",
        "-t",
        "60",
        "-o",
        f"-h 127.0.0.1 -p {port} -k {folder}",
        "start",
    )
    try:
        yield f"postgresql://engram@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*prefix, pg_ctl, "-D", str(data), "-m", "fast", "-w", "stop"], check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _has_user(name: str) -> bool:
    try:
        pwd.getpwnam(name)
    except KeyError:
        return False
    return True


class App:
    """One app machine: a process running `scale_out_app.py` with its own data folder."""

    def __init__(self, name: str, folder: Path, chroma_url: str, postgres_url: str) -> None:
        env = {
            **os.environ,
            "ENGRAM_DATA_DIR": str(folder),
            "ENGRAM_CHROMA_URL": chroma_url,
            "ENGRAM_POSTGRES_URL": postgres_url,
            "PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]),
        }
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("scale_out_app.py")), name],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def turn(self, **request: object) -> dict:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the app process exited (code {self.proc.poll()})"
        return json.loads(line)

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def test_two_machines_share_one_thread_and_one_users_memories(
    chroma_server, postgres_url, tmp_path
):
    one = App("one", tmp_path / "machine-one", chroma_server, postgres_url)
    two = App("two", tmp_path / "machine-two", chroma_server, postgres_url)
    try:
        user, thread = f"alice {uuid.uuid4().hex[:6]}", str(uuid.uuid4())
        said = [
            "Hello, this is the first message of the day.",
            "I prefer dark mode in my code editor.",
            "Do I prefer dark mode in my code editor?",
            "Tell me something about the weather.",
            "One more question about lunch.",
            "And a last one about dinner.",
        ]
        machines = [two, one, two, one, two, one]  # two builds its BM25 index before one writes
        answers = []
        for n, (app, text) in enumerate(zip(machines, said)):
            answers.append(app.turn(user=user, thread=thread, text=text))
            if n == 1:
                one.turn(user=user, thread=thread, end=True)  # consolidates: the memory is written

        last = answers[-1]
        replies = [
            f"{'one' if app is one else 'two'} reply {n // 2}" for n, app in enumerate(machines)
        ]
        conversation = [m for pair in zip(said, replies) for m in pair]
        kept = last["messages"]
        assert kept == conversation[len(conversation) - len(kept) :], "a message was lost"
        assert (
            last["evicted"] == len(conversation) - len(kept) > 0
        )  # compaction ran across machines
        for text in conversation[: len(conversation) - len(kept)]:
            assert any(word in last["summary"] for word in text.rstrip(".?").split()[-2:]), text

        # machine two recalls, on its very next turn, the memory machine one wrote: in its prompt,
        # and found by both channels (its own BM25 index of the server had been built before)
        recall = answers[2]
        assert "dark mode" in recall["prompt"].split("Do I prefer")[0]
        hit = next(h for h in recall["hits"] if "dark mode" in (h["content"] or ""))
        assert hit["similarity"] > 0.5 and hit["lexical"] is not None
        # and both machines read the same thread state
        assert one.turn(user=user, thread=thread, end=True)["messages"] == kept
    finally:
        one.close()
        two.close()


def test_a_write_from_another_machine_is_found_by_both_channels_on_the_next_search(
    chroma_server, tmp_path, monkeypatch
):
    """Each machine keeps its own BM25 index of the server: the searched namespace is compared
    with the server before every hybrid search, so nothing written elsewhere is missed."""
    from fakes import NGramEmbeddings

    from engram.stores.chroma.store import ChromaStore
    from engram.stores.lexical.hybrid import HybridSearchOp

    index = {"dims": 256, "embed": NGramEmbeddings(), "fields": ["content"]}
    collection = f"c{uuid.uuid4().hex}"
    stores = []
    for machine in ("one", "two"):
        monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path / machine))
        stores.append(ChromaStore.from_url(chroma_server, collection=collection, index=index))
    one, two = stores
    namespace = ("memories", "alice")
    two.put(namespace, "hello", {"content": "hello there"})
    assert two.batch([HybridSearchOp(namespace, "hello", limit=5)])[0]  # two's index is built
    one.put(namespace, "editor", {"content": "I prefer dark mode in my code editor"})
    hits = two.batch([HybridSearchOp(namespace, "dark mode editor", limit=5)])[0]
    hit = next(h for h in hits if h.item.key == "editor")
    assert hit.lexical is not None and hit.similarity > 0.5
    one.delete(namespace, "editor")
    hits = two.batch([HybridSearchOp(namespace, "dark mode editor", limit=5)])[0]
    assert [h.item.key for h in hits] == ["hello"]
    for store in stores:
        store.close()


def test_compile_graph_and_the_cli_take_the_postgres_url_from_an_argument_or_the_environment(
    postgres_url, tmp_path, monkeypatch
):
    from langchain_core.messages import HumanMessage
    from langgraph.store.memory import InMemoryStore

    from engram.graph import compile_graph
    from engram.graph.cli.memory.support import Backend
    from engram.graph.postgres import ThreadedPostgresSaver

    thread = {"configurable": {"thread_id": str(uuid.uuid4())}}
    from fakes import RecordingChatModel

    graph = compile_graph(
        RecordingChatModel(messages=iter(["hi"])), store=InMemoryStore(), postgres_url=postgres_url
    )
    assert isinstance(graph.checkpointer, ThreadedPostgresSaver)
    graph.invoke({"messages": [HumanMessage("remember this thread")]}, thread)
    monkeypatch.setenv("ENGRAM_POSTGRES_URL", postgres_url)
    from_env = compile_graph(RecordingChatModel(messages=iter([])), store=InMemoryStore())
    assert [m.content for m in from_env.get_state(thread).values["messages"]] == [
        "remember this thread",
        "hi",
    ]
    backend = Backend(store=None, where="test", checkpoints=tmp_path / "absent.sqlite")  # type: ignore[arg-type]
    assert isinstance(backend.checkpointer(), ThreadedPostgresSaver)
    backend._saver.close()
    monkeypatch.setenv("ENGRAM_POSTGRES_URL", "postgresql://engram:secret@127.0.0.1:1/none")
    with pytest.raises(ConnectionError, match=r"engram:\*\*\*@127\.0\.0\.1:1/none"):
        compile_graph(RecordingChatModel(messages=iter([])), store=InMemoryStore())


def test_machines_starting_together_set_up_the_checkpoint_tables_once(postgres_url):
    from concurrent.futures import ThreadPoolExecutor

    from engram.graph.postgres import ThreadedPostgresSaver

    database = f"fresh_{uuid.uuid4().hex[:8]}"
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    url = postgres_url.rsplit("/", 1)[0] + f"/{database}"
    with ThreadPoolExecutor(max_workers=4) as pool:
        savers = list(pool.map(lambda _: ThreadedPostgresSaver.from_url(url), range(4)))
    assert all(s.get_tuple({"configurable": {"thread_id": "none"}}) is None for s in savers)
    for saver in savers:
        saver.close()
