"""The README and the quickstart run as written, the docs site builds strictly, and no file of the
repository cites a document it does not ship.

Each Python block of `README.md` and `docs/quickstart.md` runs as a script in a folder of its
own, in a fresh process, with the environment a reader has: no engram variables but the
embedding model's folder (these machines cannot download it), and, for the blocks that use
OpenAI, `OPENAI_BASE_URL` and `OPENAI_API_KEY` pointing at the local llama.cpp server (an
OpenAI-compatible server; the blocks themselves are not changed).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engram.graph.local_model import local_chat_model

ROOT = Path(__file__).resolve().parents[1]
RUN_AS_WRITTEN = ("README.md", "docs/quickstart.md")
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
INTERNAL = re.compile(r"\bseed 00\d|\bDESIGN\b|\bissue #?\d+|\bcommit `?[0-9a-f]{7}\b", re.I)
# Citations of the design notes the code grew from, and of issue numbers, none of which the
# repository ships, also across a line break. Each is split in two so that this file does not
# cite them itself.
UNSHIPPED = re.compile(
    "|".join((
        r"(?i:\bse" + r"eds?\s?00\d)",  # the numbered design notes
        r"\bDES" + r"IGN(?:\.md|'s\b|\s\")",  # the design page, by name, section or possessive
        r"\bSTY" + r"LE\.md",
        r"(?i:\biss" + r"ues?\s#?\d)",
    ))
)
SHIPPED_WITHOUT_GIT = ("graph", "nodes", "stores", "evals", "tests", "docs", "deploy", "README.md",
                      "pyproject.toml", "mkdocs.yml", "langgraph.json")


def python_blocks(name: str) -> list[str]:
    return BLOCK.findall((ROOT / name).read_text(encoding="utf-8"))


BLOCKS = [(name, n, code) for name in RUN_AS_WRITTEN for n, code in enumerate(python_blocks(name))]


@pytest.fixture(scope="module")
def openai_compatible() -> str:
    """The base URL of the local llama.cpp server, started in this process."""
    return local_chat_model("local:0.5b").openai_api_base


@pytest.mark.model
@pytest.mark.parametrize(("name", "n", "code"), BLOCKS, ids=[f"{b[0]}-{b[1]}" for b in BLOCKS])
def test_the_block_runs_as_written(name, n, code, openai_compatible, tmp_path) -> None:
    script = tmp_path / "block.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "OPENAI_"))}
    env["ENGRAM_EMBEDDING_MODEL_DIR"] = os.environ["ENGRAM_EMBEDDING_MODEL_DIR"]
    env["OPENAI_BASE_URL"], env["OPENAI_API_KEY"] = openai_compatible, "local"
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=1200, check=False,
    )
    assert done.returncode == 0, f"{name}, block {n}:\n{done.stderr[-3000:]}"
    assert done.stdout.strip() or "print(" not in code, f"{name}, block {n} printed nothing"
    assert (tmp_path / ".engram" / "chroma").is_dir()  # it used the embedded default folder


MCP_BLOCKS = python_blocks("docs/mcp.md")


@pytest.mark.parametrize(
    "code", MCP_BLOCKS, ids=[f"docs/mcp.md-{n}" for n in range(len(MCP_BLOCKS))]
)
def test_the_mcp_client_example_runs_as_written(code: str, tmp_path: Path) -> None:
    """The SDK's client starts `engram` from PATH with its own idea of the environment: the
    block runs with the `engram` of this Python first on PATH, and the environment a reader
    has (no engram variables but the embedding model's folder)."""
    script = tmp_path / "block.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    env["ENGRAM_EMBEDDING_MODEL_DIR"] = os.environ["ENGRAM_EMBEDDING_MODEL_DIR"]
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout == "created\nAlice prefers dark mode\n", done.stderr[-3000:]
    assert (tmp_path / ".engram" / "chroma").is_dir()  # the server's default folder, here


def test_every_page_to_run_has_python_blocks() -> None:
    assert {name for name, _, _ in BLOCKS} == set(RUN_AS_WRITTEN)
    assert MCP_BLOCKS


def test_the_docs_build_strictly(tmp_path) -> None:
    mkdocs = shutil.which("mkdocs")
    assert mkdocs, "mkdocs is part of the test extra: pip install -e '.[test]'"
    done = subprocess.run(
        [mkdocs, "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()


def test_what_users_read_has_no_internal_references() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    found = [
        f"{page.relative_to(ROOT)}: {match.group(0)!r}"
        for page in pages
        for match in INTERNAL.finditer(page.read_text(encoding="utf-8"))
    ]
    assert not found, found


def repository_files() -> list[Path]:
    """The repository's tracked files (`git ls-files`), or, outside a git checkout, every file of
    the folders and root files it ships."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False, timeout=60
    )
    if listed.returncode == 0 and listed.stdout:
        return [ROOT / name for name in listed.stdout.decode().split("\0") if name]
    found = []
    for name in SHIPPED_WITHOUT_GIT:
        path = ROOT / name
        found += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return [p for p in found if "__pycache__" not in p.parts]


def test_no_file_cites_a_document_the_repository_does_not_ship() -> None:
    found = []
    for path in repository_files():
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):  # gone from the work tree, or not text
            continue
        name = path.relative_to(ROOT).as_posix()
        lines = text.split("\n")
        for match in UNSHIPPED.finditer(text):
            n = text.count("\n", 0, match.start()) + 1
            found.append(f"{name}:{n}: {match.group(0)!r} in {lines[n - 1].strip()!r}")
    assert not found, "\n".join(found)


def test_the_readme_is_a_few_screens() -> None:
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 200


def test_the_home_page_links_every_page_of_the_site() -> None:
    mkdocs = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = mkdocs.split("\nnav:\n")[1].split("\n\n")[0]
    pages = set(re.findall(r":\s*(\S+\.md)$", nav, re.MULTILINE)) - {"index.md"}
    home = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([^)#]+\.md)", home))
    assert pages - linked == set(), "docs/index.md leaves out these pages"
