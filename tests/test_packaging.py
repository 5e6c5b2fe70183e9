"""The built wheel: only `engram.*` packages, every module and the bundled eval suites inside,
and it imports from outside the repository.

The wheel is built from a copy of the sources (so no `build/` folder lands in the working tree)
with the installed setuptools (`--no-build-isolation`: no network needed).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {
    "graph": "engram/graph",
    "nodes": "engram/nodes",
    "stores": "engram/stores",
    "evals": "engram/evals",
}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in ["pyproject.toml", "README.md"]:
        shutil.copy(ROOT / name, src / name)
    for folder in FOLDERS:
        shutil.copytree(
            ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    out = tmp_path_factory.mktemp("wheel")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(src),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(out),
            "-q",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [built] = out.glob("engram-*.whl")
    return built


def test_the_wheel_holds_only_engram_packages_with_every_module(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    top = {n.split("/", 1)[0] for n in names}
    assert {t for t in top if not t.endswith(".dist-info")} == {"engram"}, top
    assert len(top) == 2, top  # engram/ and one .dist-info/
    assert "engram/__init__.py" not in names, "engram must stay a namespace package"
    for folder, package in FOLDERS.items():
        tracked = _sources(folder, "**/*.py")
        missing = {f"{package}/{p}" for p in tracked} - names
        assert not missing, f"modules left out of the wheel: {sorted(missing)}"


def test_the_bundled_eval_suites_are_inside_the_wheel(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    suites = _sources("evals", "suites/**/*.yaml")
    assert len(suites) >= 2
    assert {f"engram/evals/{p}" for p in suites} <= names
    assert "engram/evals/README.md" in names


def test_the_wheel_imports_from_outside_the_repository(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import engram.graph, engram.nodes, engram.stores, engram.evals\n"
        "from engram.evals.dialogs.suite import bundled_suite_path\n"
        "mods = [engram.graph, engram.nodes, engram.stores, engram.evals]\n"
        "assert all(m.__file__.startswith(sys.argv[1]) for m in mods), [m.__file__ for m in mods]\n"
        "assert str(bundled_suite_path()).startswith(sys.argv[1]), bundled_suite_path()\n"
        "print(len(list(bundled_suite_path().rglob('*.yaml'))))\n"
    )
    env = {**os.environ, "PYTHONPATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", code, str(site)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout.split()[-1]) == len(_sources("evals", "suites/**/*.yaml"))


def _sources(folder: str, pattern: str) -> list[str]:
    """Source files under `folder` matching `pattern`, relative to it (what the wheel must hold)."""
    base = ROOT / folder
    return sorted(
        str(p.relative_to(base)) for p in base.glob(pattern) if "__pycache__" not in p.parts
    )
