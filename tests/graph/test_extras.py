"""An install without the postgres or mcp extra runs everything else, and a feature that needs
one says the command that installs it. The missing package is simulated in a child process
(`sys.modules[name] = None` makes importing it fail as if it were not installed)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest


def _without(package: str, code: str) -> subprocess.CompletedProcess[str]:
    script = f"import sys\nsys.modules[{package!r}] = None\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)


def test_without_postgres_the_graph_runs_and_postgres_says_what_to_install(tmp_path) -> None:
    done = _without("psycopg", f"""
        import os
        os.environ["ENGRAM_DATA_DIR"] = {str(tmp_path)!r}
        from engram.graph.builder import default_checkpointer
        print(type(default_checkpointer()).__name__)
        try:
            default_checkpointer("postgresql://engram@127.0.0.1:1/engram")
        except ImportError as exc:
            print(exc)
    """)
    assert done.returncode == 0, done.stderr
    saver, error = done.stdout.strip().splitlines()
    assert saver == "ThreadedSqliteSaver"
    assert error == ("PostgreSQL checkpoints is in engram's postgres extra, not installed here "
                     "(psycopg is missing): pip install 'engram[postgres]'")


@pytest.mark.parametrize("args", [["mcp", "--help"], ["mcp", "--user", "alice"]])
def test_without_mcp_the_command_says_what_to_install(args: list[str], tmp_path) -> None:
    done = _without("mcp", f"""
        import os
        os.environ["ENGRAM_DATA_DIR"] = {str(tmp_path)!r}
        sys.argv = ["engram", *{args!r}]
        from engram.graph.cli import main
        main()
    """)
    if args[-1] == "--help":  # help needs no MCP SDK
        assert done.returncode == 0 and "search_memories" in done.stdout
    else:
        assert done.returncode == 1
        said = " ".join(done.stderr.split())
        assert said == ("error: engram mcp is in engram's mcp extra, not installed here (mcp is "
                        "missing): pip install 'engram[mcp]'")
