"""engram opens a store only on the Chroma release it is tested with, which pyproject.toml pins,
and says what to install on any other."""

from __future__ import annotations

import tomllib
from pathlib import Path

import chromadb
import pytest
from conftest import TESTS

from engram.stores.chroma.store import ChromaStore
from engram.stores.chroma.version import ChromaVersionError, check_chroma_version, requirement


def test_the_pinned_release_is_the_tested_one_and_is_installed() -> None:
    project = tomllib.loads((TESTS.parent / "pyproject.toml").read_text())["project"]
    chroma = [d for d in project["dependencies"] if d.startswith("chromadb")]
    assert chroma == [requirement()]
    check_chroma_version()  # what pip installed from that pin


@pytest.mark.parametrize("installed", ["1.6.0", "2.0.1", "1.4.3", "0.6.3"])
def test_another_release_is_refused_with_what_to_install(installed: str) -> None:
    with pytest.raises(ChromaVersionError) as refused:
        check_chroma_version(installed)
    assert f"chromadb {installed} is installed" in str(refused.value)
    assert f"pip install '{requirement()}'" in str(refused.value)


def test_a_store_does_not_open_a_folder_on_another_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chromadb, "__version__", "1.6.0")
    with pytest.raises(ChromaVersionError, match="1.6.0"):
        ChromaStore(path=tmp_path / "chroma")
    assert not (tmp_path / "chroma").exists()
