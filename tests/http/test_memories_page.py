"""The memories page in a real headless Chromium (Debian's `/usr/bin/chromium`, driven by
Playwright), against the app under uvicorn in another process on a data folder seeded as after a
few conversations: a person picks a user, saves one of two memories waiting for their approval
and dismisses the other, searches, filters by kind, forgets and restores a
memory, sees one that `engram memory add` writes from a third process appear, and deletes one
whose text looks like HTML, which the page shows as text. The test saves the screenshot the docs
show (docs/assets/memories-page.png)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from conftest import TESTS, files_holding, free_port, stop_process_group, wait_for_port
from playwright.sync_api import Page, expect, sync_playwright
from test_memory_api import compress_three_old_facts

from engram.graph.http import USER_HEADER
from engram.nodes.extract.statement import statement_candidate
from engram.stores.chroma.store import make_store
from engram.stores.memory.long_term import LongTermMemory, MemoryCandidate
from engram.stores.memory.pending import PendingMemories
from engram.stores.memory.types import utc_now

pytestmark = pytest.mark.server

CHROMIUM = Path("/usr/bin/chromium")
SCREENSHOT = TESTS.parent / "docs" / "assets" / "memories-page.png"
SERVE = (
    "import sys, uvicorn\n"
    "from engram.graph.http import create_app\n"
    "uvicorn.run(create_app(user_header=True), host='127.0.0.1', port=int(sys.argv[1]),"
    " log_level='warning')\n"
)
"""The app on engram's default store ($ENGRAM_DATA_DIR), the user from X-Engram-User."""
ENGRAM = "from engram.graph.cli import main; main()"  # the `engram` console script
SEEDED = [  # (days ago, thread, recalls, text, category, importance)
    (
        6,
        "c0ffee42-9d1b-4c55-a3e0-5b7d2f1e8a90",
        3,
        "Alice prefers dark mode in every editor",
        "preference",
        None,
    ),
    (
        6,
        "c0ffee42-9d1b-4c55-a3e0-5b7d2f1e8a90",
        1,
        "Alice works at Acme as a data engineer",
        "fact",
        None,
    ),
    (3, "7b1d0c55-25ba-4a0d-bcdd-1d3ec67aedc0", 2, "Deploys go through Argo CD", "project", 0.7),
    (
        2,
        "7b1d0c55-25ba-4a0d-bcdd-1d3ec67aedc0",
        0,
        "Alice wants to run a half marathon in the spring",
        "goal",
        None,
    ),
    (
        1,
        "e4a6b8c0-1d2f-4e5a-8b9c-0d1e2f3a4b5c",
        0,
        "Long answers go in <details> blocks on the team wiki",
        "lesson",
        None,
    ),
    (0.1, "alice-morning-standup", 0, "Alice's cat is called Miso", "fact", 0.6),
]
PENDING = ["Alice's sister lives in Porto", "Alice keeps her bike in the office basement"]
"""What extraction found in confirmation mode, waiting for alice's answer."""
UNAUTHORIZED = "Failed to load resource: the server responded with a status of 401"
HTML_TEXT = '<img src=x onerror="window.pwned = 1">Alice pasted this'


@pytest.fixture
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The app in a uvicorn process on a data folder holding `SEEDED`; yields its URL."""
    if not CHROMIUM.exists():
        pytest.skip(f"no Chromium at {CHROMIUM} (Debian's chromium package) to drive the page")
    monkeypatch.setenv("ENGRAM_DATA_DIR", str(tmp_path))
    monkeypatch.delenv("ENGRAM_CHROMA_URL", raising=False)
    _seed(tmp_path)
    port = free_port()
    log = (tmp_path / "server.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE, str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process_group(process)
        log.close()


def test_a_person_governs_their_memories_on_the_page(server: str, tmp_path: Path) -> None:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        try:
            page = browser.new_page(viewport={"width": 960, "height": 620})
            problems: list[str] = []  # script errors and blocked content (CSP) alike
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.on("console", lambda m: _problem(m.type, m.text) and problems.append(m.text))
            asked: list[str] = []
            page.on("dialog", lambda dialog: (asked.append(dialog.message), dialog.accept()))
            _govern(page, server, tmp_path, asked)
            assert problems == []
            page.reload()  # the user id stays in the browser
            expect(page.locator("#user")).to_have_value("alice")
            expect(page.locator("#memories li.memory")).to_have_count(len(SEEDED) + 2)
            expect(page.locator("#pending-list li")).to_have_count(1)
            page.screenshot(path=str(SCREENSHOT), full_page=True)
            bike = page.locator("#pending-list li", has_text="bike")
            bike.locator(".reject").click()
            expect(page.locator("#pending")).to_be_hidden()
            expect(page.locator("#memories li.memory", has_text="bike")).to_have_count(0)
            assert files_holding(tmp_path, "basement") == []
        finally:
            browser.close()


def _govern(page: Page, url: str, folder: Path, asked: list[str]) -> None:
    rows = page.locator("#memories li.memory")
    page.goto(f"{url}/memories")
    expect(page.locator("#status")).to_contain_text("Enter the id")
    page.fill("#user", "alice")
    page.press("#user", "Enter")
    expect(rows).to_have_count(len(SEEDED))
    expect(page.locator("#summary")).to_contain_text(f"alice: {len(SEEDED)} active (")
    waiting = page.locator("#pending-list li")
    expect(waiting).to_have_count(len(PENDING))
    expect(page.locator("#pending")).to_be_visible()
    waiting.filter(has_text="Porto").locator(".approve").click()
    expect(waiting).to_have_count(1)
    expect(rows).to_have_count(len(SEEDED) + 1)
    expect(rows.filter(has_text="Porto").locator(".meta")).to_contain_text("active")
    expect(rows.filter(has_text="dark mode").locator(".meta")).to_contain_text(
        "updated 6 days ago · recalled 3× · importance 0.90 · "
        "thread c0ffee42-9d1b-4c55-a3e0-5b7d2f1e8a90 · active"  # thread ids whole
    )
    expect(rows.filter(has_text="Miso").locator(".meta")).to_contain_text(
        "thread alice-morning-standup · active"
    )

    page.fill("#query", "which colour scheme for code?")  # by meaning: no word in common
    expect(rows.first).to_contain_text("Alice prefers dark mode in every editor")
    page.fill("#query", "")
    page.select_option("#kind", "goal")
    expect(rows).to_have_count(1)
    expect(rows.locator(".kind")).to_have_text("goal")
    page.select_option("#kind", "")

    cat = rows.filter(has_text="Miso")
    cat.locator(".forget").click()
    expect(cat).to_have_count(0)
    assert "you can restore it" in asked[-1]
    page.select_option("#state", "forgotten")
    expect(rows).to_have_count(1)
    expect(cat.locator(".meta")).to_contain_text("forgotten")
    cat.locator(".restore").click()
    expect(rows).to_have_count(0)
    page.select_option("#state", "current")
    expect(cat).to_have_count(1)

    added = subprocess.run(
        [
            sys.executable,
            "-c",
            ENGRAM,
            "memory",
            "add",
            "--data",
            str(folder),
            "--user",
            "alice",
            "Alice is learning Portuguese",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert added.returncode == 0, added.stderr
    expect(rows.filter(has_text="Portuguese")).to_have_count(1, timeout=15_000)  # by polling

    pasted = httpx.post(
        f"{url}/api/memories", json={"text": HTML_TEXT}, headers={USER_HEADER: "alice"}
    ).json()["memory"]
    row = rows.filter(has_text="Alice pasted this")
    expect(row.locator(".content")).to_have_text(HTML_TEXT)  # shown as the text it is
    assert page.locator("#memories img").count() == 0
    assert page.evaluate("window.pwned") is None
    row.locator(".delete").click()
    assert "cannot be undone" in asked[-1]
    expect(row).to_have_count(0)
    gone = httpx.get(f"{url}/api/memories/{pasted['id']}", headers={USER_HEADER: "alice"})
    assert gone.status_code == 404


def test_a_superseded_memory_is_offered_restore_where_restore_brings_it_back(
    server: str, tmp_path: Path
) -> None:
    store = make_store()  # another process writes while the server runs, as the CLI would
    try:
        originals = compress_three_old_facts(store, "alice")
        for text in ("I prefer Vue for frontends", "I prefer React for frontends"):
            LongTermMemory(store).upsert("alice", [statement_candidate(text)])
    finally:
        store.close()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM))
        try:
            page = browser.new_page(viewport={"width": 960, "height": 620})
            page.on("dialog", lambda dialog: dialog.accept())
            page.goto(f"{server}/memories")
            page.fill("#user", "alice")
            page.press("#user", "Enter")
            page.select_option("#state", "superseded")
            rows = page.locator("#memories li.memory")
            expect(rows).to_have_count(len(originals) + 1)
            restorable = rows.filter(has=page.locator(".restore:visible"))
            expect(restorable).to_have_count(len(originals))  # compressed: restore undoes it
            replaced = rows.filter(has_text="Vue")  # by a newer value: say it again
            expect(replaced.locator(".restore")).to_be_hidden()
            restorable.filter(has_text="Helm").locator(".restore").click()
            expect(page.locator("#status")).to_have_text("✓ Restored.")
            expect(rows).to_have_count(len(originals))
            page.select_option("#state", "current")
            expect(page.locator("#memories li.memory", has_text="Helm")).to_have_count(1)
        finally:
            browser.close()


def _problem(kind: str, text: str) -> bool:
    """Whether a console message is a problem: an error, other than the 401 the page is
    answered until a user id is entered (how it learns that it needs one)."""
    return kind == "error" and not text.startswith(UNAUTHORIZED)


def _seed(folder: Path) -> None:
    """`SEEDED` for alice, written as the graph would have on those days, in those threads."""
    now = utc_now()
    store = make_store()
    try:
        for days, thread, recalls, text, category, importance in SEEDED:
            then = now - timedelta(days=days)
            memory = LongTermMemory(store, clock=lambda then=then: then)
            candidate = MemoryCandidate(content=text, category=category, importance=importance)
            [written] = memory.upsert("alice", [candidate], thread_id=thread)
            for _ in range(recalls):
                memory.touch("alice", [written.memory.id])
        PendingMemories(store).propose(
            "alice", [MemoryCandidate(content=text, category="fact") for text in PENDING]
        )
    finally:
        store.close()
