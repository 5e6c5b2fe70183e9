"""Wrong answers of `engram memory` commands run one after another and at once, as processes.

    python -m engram.evals.bench stress [--runs 300] [--load 2] [--jobs 1]
        [--backend embedded|server|both] [--variant sequence|race|both] [--json out.json]

Each run starts from nothing (a fresh temporary data folder; against a server, fresh user ids
and a fresh local folder) and runs the `engram` command as real processes, as a person or a
script would:

- ``sequence``: `add --user alice`, `add --user bob`, `search` and `export` of alice,
  `delete --all --user alice --yes`, then `list --user bob --json`, one after another. Every
  command must succeed and answer what the folder holds: bob's memory is listed, alice's is
  found before her deletion.
- ``race``: alice and bob each add a memory; then one user's `delete --all` and the other
  user's `list` (or `search`, every other run) start at the same moment in two processes,
  alice deleting while bob reads and the reverse in alternate runs. The reader must find its
  memory and the deleter must succeed.

A wrong answer is a command that failed or answered something else than the data holds: a read
that found nothing (or said the user is unknown) while the memory is there counts, as does any
error. `--backend server` runs the same against a `chroma run` server started on a free port in
a temporary folder (`--data http://127.0.0.1:PORT`). `--load N` keeps N busy processes running
alongside (a loaded machine); `--jobs N` runs N runs at once (more load, fewer minutes).

Prints the runs and wrong answers per variant and backend, and what was wrong in each; exits 1
when any answer was wrong.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

VARIANTS = ("sequence", "race")
BACKENDS = ("embedded", "server")
ENGRAM = [sys.executable, "-c", "from engram.graph.cli import main; main()"]
"""The `engram` console script, run by this Python (as `engram.evals.bench.cli` does)."""
TEXTS = {
    "alice": "Alice prefers dark mode in every editor",
    "bob": "Bob keeps bees on the roof of his house",
}
QUERIES = {"alice": "dark mode", "bob": "bees on the roof"}
COMMAND_TIMEOUT_SECONDS = 600.0
SHOWN_WRONG = 20
"""Wrong answers printed in full per variant and backend (all are counted)."""


class Wrong(Exception):
    """A command failed or answered something the data does not hold."""


@dataclass
class Tally:
    """The runs of one variant on one backend."""

    variant: str
    backend: str
    runs: int = 0
    wrong: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "variant": self.variant,
            "backend": self.backend,
            "runs": self.runs,
            "wrong_answers": len(self.wrong),
            "wrong": self.wrong,
            "seconds": round(self.seconds, 1),
        }


@dataclass
class Target:
    """Where one run's commands work: `--data` and the environment."""

    data: str
    env: dict[str, str]
    users: dict[str, str]
    """The run's user ids by role ("alice", "bob")."""


# -- one run ---------------------------------------------------------------------------------


def engram(target: Target, *args: str) -> subprocess.CompletedProcess[str]:
    """One `engram memory ...` command on the run's data; its exit code is not checked."""
    return subprocess.run(
        [*ENGRAM, "memory", *args, "--data", target.data],
        env=target.env,
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT_SECONDS,
        check=False,
    )


def start(target: Target, *args: str) -> subprocess.Popen[str]:
    """`engram` as a process left running (see `finish`)."""
    return subprocess.Popen(
        [*ENGRAM, "memory", *args, "--data", target.data],
        env=target.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], args: list[str]) -> subprocess.CompletedProcess[str]:
    stdout, stderr = proc.communicate(timeout=COMMAND_TIMEOUT_SECONDS)
    return subprocess.CompletedProcess(args, proc.returncode, stdout, stderr)


def add(target: Target, role: str) -> str:
    """Add the role's memory; returns its id."""
    done = engram(target, "add", "--user", target.users[role], TEXTS[role], "--json")
    answer = _json(done, f"add --user {role}")
    if answer.get("action") != "created" or not answer.get("memory"):
        raise Wrong(f"add --user {role}: answered {answer.get('action')!r}, not 'created'")
    return str(answer["memory"]["id"])


def expect_listed(done: subprocess.CompletedProcess[str], what: str, memory_id: str) -> None:
    ids = [m.get("id") for m in _json(done, what)]
    if memory_id not in ids:
        raise Wrong(f"{what}: {memory_id[:8]} missing, answered ids {[i[:8] for i in ids]}")


def run_sequence(target: Target) -> None:
    """add alice, add bob, search and export alice, delete --all alice, list bob."""
    alice = add(target, "alice")
    bob = add(target, "bob")
    user = target.users["alice"]
    found = engram(target, "search", QUERIES["alice"], "--user", user, "--json")
    expect_listed(found, "search --user alice", alice)
    exported = engram(target, "export", "--user", user)
    _succeeded(exported, "export --user alice")
    if TEXTS["alice"] not in exported.stdout:
        raise Wrong(f"export --user alice: her memory is missing from {exported.stdout[-300:]!r}")
    deleted = engram(target, "delete", "--all", "--user", user, "--yes", "--json")
    if _json(deleted, "delete --all --user alice").get("deleted", {}).get("memories") != 1:
        raise Wrong(f"delete --all --user alice: answered {deleted.stdout.strip()[-300:]!r}")
    listed = engram(target, "list", "--user", target.users["bob"], "--json")
    expect_listed(listed, "list --user bob (after alice's delete)", bob)


def run_race(target: Target, run: int) -> None:
    """Both users add; then one deletes everything while the other reads, in two processes."""
    ids = {"alice": add(target, "alice"), "bob": add(target, "bob")}
    deleter, reader = ("alice", "bob") if run % 2 == 0 else ("bob", "alice")
    read = ["list", "--user", target.users[reader], "--json"]
    if run % 4 >= 2:
        read = ["search", QUERIES[reader], "--user", target.users[reader], "--json"]
    delete = ["delete", "--all", "--user", target.users[deleter], "--yes", "--json"]
    procs = [start(target, *delete), start(target, *read)]
    deleted, found = (finish(p, a) for p, a in zip(procs, (delete, read), strict=True))
    expect_listed(found, f"{read[0]} --user {reader} (while {deleter} deletes)", ids[reader])
    if _json(deleted, f"delete --all --user {deleter}").get("deleted", {}).get("memories") != 1:
        raise Wrong(f"delete --all --user {deleter}: answered {deleted.stdout.strip()[-300:]!r}")


def _succeeded(done: subprocess.CompletedProcess[str], what: str) -> None:
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).replace("\n", " ")
        raise Wrong(f"{what}: exit {done.returncode}: {said[-400:]}")


def _json(done: subprocess.CompletedProcess[str], what: str) -> Any:
    _succeeded(done, what)
    try:
        return json.loads(done.stdout)
    except json.JSONDecodeError:
        raise Wrong(f"{what}: not JSON: {done.stdout[-300:]!r}") from None


# -- runs, backends, load --------------------------------------------------------------------


def run_all(
    variant: str, backend: str, runs: int, jobs: int, server: str | None, progress: bool
) -> Tally:
    """`runs` runs of `variant` on `backend`, `jobs` at a time."""
    tally = Tally(variant, backend)
    lock = threading.Lock()
    started = time.perf_counter()

    def one(run: int) -> None:
        with _target(backend, server, f"{variant}-{run}") as target:
            try:
                if variant == "sequence":
                    run_sequence(target)
                else:
                    run_race(target, run)
                wrong = None
            except (Wrong, subprocess.TimeoutExpired) as exc:
                wrong = f"run {run}: {exc}"
        with lock:
            tally.runs += 1
            if wrong:
                tally.wrong.append(wrong)
                print(f"[{variant}/{backend}] WRONG {wrong}", file=sys.stderr, flush=True)
            if progress and tally.runs % 25 == 0:
                print(
                    f"[{variant}/{backend}] {tally.runs}/{runs} runs, {len(tally.wrong)} wrong",
                    file=sys.stderr,
                    flush=True,
                )

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for future in [pool.submit(one, run) for run in range(runs)]:
            future.result()
    tally.seconds = time.perf_counter() - started
    return tally


@contextmanager
def _target(backend: str, server: str | None, run: str) -> Iterator[Target]:
    with tempfile.TemporaryDirectory(prefix="engram-stress-") as folder:
        env = _child_env()
        if backend == "embedded":
            yield Target(folder, env, {"alice": "alice", "bob": "bob"})
            return
        assert server is not None
        env["ENGRAM_DATA_DIR"] = folder  # the BM25 file of a server's data is local
        suffix = f"{os.getpid()}-{run}"
        yield Target(server, env, {"alice": f"alice-{suffix}", "bob": f"bob-{suffix}"})


def _child_env() -> dict[str, str]:
    env = {**os.environ, "ANONYMIZED_TELEMETRY": "False"}
    for name in ("ENGRAM_CHROMA_URL", "ENGRAM_DATA_DIR", "ENGRAM_USER", "ENGRAM_POSTGRES_URL"):
        env.pop(name, None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # as installed: with bytecode (see bench cli)
    return env


@contextmanager
def chroma_server() -> Iterator[str]:
    """A `chroma run` on 127.0.0.1 and a free port, its data in a temporary folder."""
    chroma = shutil.which("chroma") or str(Path(sys.executable).parent / "chroma")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with (
        tempfile.TemporaryDirectory(prefix="engram-stress-server-") as folder,
        open(Path(folder) / "server.log", "wb") as log,
    ):
        proc = subprocess.Popen(
            [chroma, "run", "--host", "127.0.0.1", "--port", str(port), "--path", folder],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            _wait_for_port(port, proc)
            yield f"http://127.0.0.1:{port}"
        finally:
            _stop(proc)


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chroma run exited early with code {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"chroma run did not listen on 127.0.0.1:{port} within {timeout:.0f} s")


@contextmanager
def cpu_load(processes: int) -> Iterator[None]:
    """`processes` busy loops running alongside, stopped afterwards."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", "while True: pass"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for _ in range(processes)
    ]
    try:
        yield
    finally:
        for proc in procs:
            _stop(proc)


def _stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# -- the section -----------------------------------------------------------------------------


def run(
    runs: int,
    *,
    load: int = 0,
    jobs: int = 1,
    backends: tuple[str, ...] = ("embedded",),
    variants: tuple[str, ...] = VARIANTS,
    progress: bool = True,
) -> dict[str, Any]:
    """Every variant on every backend, `runs` runs each; the result as JSON-ready data."""
    from engram.evals.bench.stores import code_state

    load_before = os.getloadavg()[0]
    tallies: list[Tally] = []
    with cpu_load(load):
        for backend in backends:
            with chroma_server() if backend == "server" else _no_server() as server:
                for variant in variants:
                    tallies.append(run_all(variant, backend, runs, jobs, server, progress))
    return {
        "benchmark": "wrong answers of engram memory commands as processes",
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_processes": load,
        "jobs": jobs,
        "load_average_1m_before_after": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        "code": code_state(),
        "rows": [t.to_dict() for t in tallies],
        "wrong_answers": sum(len(t.wrong) for t in tallies),
    }


@contextmanager
def _no_server() -> Iterator[None]:
    yield None


def _table(result: dict[str, Any]) -> Table:
    table = Table(
        title=(
            f"{result['benchmark']} ({result['load_processes']} busy processes, "
            f"{result['jobs']} runs at once, {result['cpus']} cores)"
        )
    )
    for column in ("variant", "backend", "runs", "wrong answers", "minutes"):
        table.add_column(column, justify="left" if column in ("variant", "backend") else "right")
    for row in result["rows"]:
        table.add_row(
            row["variant"],
            row["backend"],
            str(row["runs"]),
            str(row["wrong_answers"]),
            f"{row['seconds'] / 60:.1f}",
        )
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m engram.evals.bench stress", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--runs", type=int, default=300, help="runs of each variant")
    parser.add_argument("--load", type=int, default=0, metavar="N", help="busy processes")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="runs at once")
    parser.add_argument("--backend", choices=(*BACKENDS, "both"), default="embedded")
    parser.add_argument("--variant", choices=(*VARIANTS, "both"), default="both")
    parser.add_argument("--json", type=Path, help="also write the JSON result to this file")
    args = parser.parse_args(argv)
    result = run(
        args.runs,
        load=args.load,
        jobs=max(1, args.jobs),
        backends=BACKENDS if args.backend == "both" else (args.backend,),
        variants=VARIANTS if args.variant == "both" else (args.variant,),
    )
    Console(width=120).print(_table(result))
    for row in result["rows"]:
        for wrong in row["wrong"][:SHOWN_WRONG]:
            print(f"wrong ({row['variant']}, {row['backend']}): {wrong}")
        if len(row["wrong"]) > SHOWN_WRONG:
            print(f"... and {len(row['wrong']) - SHOWN_WRONG} more ({row['variant']})")
    blob = json.dumps(result, indent=2)
    if args.json:
        args.json.write_text(blob + "\n")
    return 1 if result["wrong_answers"] else 0
