"""The dialog schema and loader, and the bundled suites: they load, cross-reference and cover the classes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from engram.evals.dialogs.metrics import (
    Ratio,
    StoredMemory,
    chitchat_memories,
    detail_retention,
    extraction_precision,
    extraction_recall,
    incognito_leaks,
    probe_recall,
    secrets_stored,
    stale_fact_rate,
)
from engram.evals.dialogs.suite import (
    Dialog,
    DialogFileError,
    bundled_suite_path,
    load_dialog,
    load_suite,
)

README = Path(__file__).resolve().parents[2] / "evals" / "README.md"
SUITE = load_suite(bundled_suite_path())
REQUIRED_TAGS = {
    "preference",
    "project-fact",
    "lesson",
    "skill",
    "goal",
    "supersede",
    "chitchat",
    "secret",
    "incognito",
    "long",
    "multi-session",
}


def _readme_example() -> str:
    match = re.search(
        r"### A complete example\n\n```yaml\n(.*?)```",
        README.read_text(encoding="utf-8"),
        re.DOTALL,
    )
    assert match, "evals/README.md lost its complete example"
    return match.group(1)


def _write(tmp_path: Path, data: dict, name: str = "x.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


@pytest.fixture
def example() -> dict:
    return yaml.safe_load(_readme_example())


# --- the bundled suites -------------------------------------------------------------------------


def test_bundled_suite_size_and_languages():
    assert len(SUITE) >= 24
    by_language = {lang: sum(d.language == lang for d in SUITE) for lang in ("en", "zh")}
    assert min(by_language.values()) >= 0.4 * len(SUITE), by_language


def test_bundled_suite_covers_every_required_class():
    tags = {tag for dialog in SUITE for tag in dialog.tags}
    assert REQUIRED_TAGS <= tags, REQUIRED_TAGS - tags


def test_at_least_two_dialogs_force_several_compactions():
    long_dialogs = [d for d in SUITE if any(s.user_turns >= 150 for s in d.sessions)]
    assert len(long_dialogs) >= 2
    assert {d.language for d in long_dialogs} == {"en", "zh"}


@pytest.mark.parametrize("dialog", SUITE, ids=lambda d: d.id)
def test_tags_are_backed_by_the_data(dialog: Dialog):
    categories = {m.category for m in dialog.memories}
    kinds = {f.kind for f in dialog.must_not_store}
    for tag in dialog.tags:
        if tag in {"preference", "lesson", "skill", "goal"}:
            assert tag in categories, f"{tag}: no expected {tag} memory"
        elif tag == "project-fact":
            assert categories & {"project", "fact"}
        elif tag == "supersede":
            assert dialog.conflicts
        elif tag == "chitchat":
            assert any(s.chitchat for s in dialog.sessions)
        elif tag == "secret":
            assert "secret" in kinds
        elif tag == "incognito":
            assert any(s.incognito for s in dialog.sessions) and "incognito" in kinds
        elif tag == "long":
            assert dialog.user_turns >= 150
        elif tag == "multi-session":
            order = [s.id for s in dialog.sessions]
            assert any(
                order.index(dialog.memory(m).after_session) < order.index(p.after_session)
                for p in dialog.probes
                for m in p.expect
            ), "no probe needs an earlier session's memory"
    assert ("incognito" in dialog.tags) == any(s.incognito for s in dialog.sessions)
    assert ("chitchat" in dialog.tags) == any(s.chitchat for s in dialog.sessions)


@pytest.mark.parametrize("dialog", SUITE, ids=lambda d: d.id)
def test_cross_references_resolve(dialog: Dialog):
    session_ids = {s.id for s in dialog.sessions}
    memory_ids = {m.id for m in dialog.memories}
    assert all(m.after_session in session_ids for m in dialog.memories)
    assert all(
        p.after_session in session_ids and set(p.expect) <= memory_ids for p in dialog.probes
    )
    assert all({c.old, c.new} <= memory_ids for c in dialog.conflicts)
    if dialog.memories:
        assert dialog.probes, "a dialog with memories should probe recall"
    if all(s.chitchat for s in dialog.sessions):
        assert not dialog.memories and not dialog.probes


@pytest.mark.parametrize("dialog", SUITE, ids=lambda d: d.id)
def test_a_store_holding_the_annotations_scores_perfectly(dialog: Dialog):
    """The annotators' own wording satisfies their details, so the metrics can reach 1.0."""
    superseded = {c.old for c in dialog.conflicts}
    store = [
        StoredMemory(
            m.content, m.category, current=m.id not in superseded, session_id=m.after_session
        )
        for m in dialog.memories
    ]
    assert extraction_recall(dialog.memories, store) == Ratio(len(store), len(store))
    assert extraction_precision(dialog.memories, store).numerator == len(store)
    assert detail_retention(dialog.memories, store).value in (1.0, None)
    pairs = [(dialog.memory(c.old), dialog.memory(c.new)) for c in dialog.conflicts]
    assert stale_fact_rate(pairs, store).numerator == 0
    assert secrets_stored(dialog.must_not_store, store) == 0
    chitchat = {s.id for s in dialog.sessions if s.chitchat}
    assert chitchat_memories(store, chitchat, dialog.must_not_store) == 0
    incognito = {s.id for s in dialog.sessions if s.incognito}
    assert incognito_leaks(store, incognito, dialog.must_not_store) == 0
    for probe in dialog.probes:
        recalled = [dialog.memory(m).content for m in probe.expect]
        assert probe_recall([dialog.memory(m) for m in probe.expect], recalled).value == 1.0


def test_the_bundled_folder_is_shipped_as_package_data():
    assert bundled_suite_path().is_dir()
    assert {p.parent.name for p in bundled_suite_path().rglob("*.yaml")} == {"en", "zh"}


# --- the schema and loader ------------------------------------------------------------------------


def test_readme_example_validates_and_fills_in_after_session(tmp_path: Path):
    path = tmp_path / "example.yaml"
    path.write_text(_readme_example(), encoding="utf-8")
    dialog = load_dialog(path)
    assert [(m.id, m.after_session) for m in dialog.memories] == [
        ("vue", "s1"),
        ("prometheus", "s1"),
        ("react", "s2"),
    ]
    assert dialog.session("s3").incognito
    assert dialog.user_turns == 4


def test_replay_helpers(example: dict, tmp_path: Path):
    dialog = load_dialog(_write(tmp_path, example))
    assert dialog.session("s1").exchanges()[0] == (
        "building a dashboard for my home lab. Vue 3 for sure, I really like it",
        "Vue 3 with script setup keeps it compact.",
    )
    assert [m.id for m in dialog.expected_after("s1")] == ["vue", "prometheus"]
    assert [m.id for m in dialog.expected_after("s2")] == ["vue", "prometheus", "react"]
    assert dialog.conflicts_after("s1") == []
    assert [(c.old, c.new) for c in dialog.conflicts_after("s2")] == [("vue", "react")]
    assert [p.id for p in dialog.probes_after("s2")] == ["scaffold"]
    assert dialog.probes_after("s1") == []


def test_bad_role_names_file_and_field(example: dict, tmp_path: Path):
    example["sessions"][0]["turns"][3]["role"] = "bot"
    path = _write(tmp_path, example)
    with pytest.raises(DialogFileError) as info:
        load_dialog(path)
    assert str(info.value).splitlines()[0] == (
        f"{path}: sessions.0.turns.3.role: Input should be 'user' or 'assistant'"
    )


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda d: d["probes"][0]["expect"].append("vue3"),
            "probes.0.expect.2: unknown expected memory id 'vue3'",
        ),
        (
            lambda d: d["probes"][0]["expect"].append("vue"),
            "probes.0.expect.2: 'vue' is superseded by then",
        ),
        (
            lambda d: d["probes"][0].update(after_session="s1"),
            "probes.0.expect.0: 'react' is not due until after 's1'",
        ),
        (
            lambda d: d["probes"][0].update(after_session="s3"),
            "probes.0.after_session: probes run after non-incognito",
        ),
        (
            lambda d: d["conflicts"][0].update(new="nope"),
            "conflicts.0.new: unknown expected memory id 'nope'",
        ),
        (
            lambda d: d["conflicts"].append({"old": "react", "new": "vue"}),
            "conflicts.1.new: 'vue' is due before",
        ),
        (lambda d: d["memories"][2].update(key="preference.ui"), "conflicts.0: keys differ"),
        (
            lambda d: d["memories"][0]["details"].append("Svelte"),
            "memories.0.details: ['Svelte'] never said",
        ),
        (
            lambda d: d["memories"][2].update(after_session="s1"),
            "memories.2.after_session: 's1' ends before every detail",
        ),
        (
            lambda d: d["memories"][1].update(after_session="s9"),
            "memories.1.after_session: unknown session id 's9'",
        ),
        (
            lambda d: d["must_not_store"].append({"text": "sk-nothere", "kind": "secret"}),
            "must_not_store.2.text: a secret must be said",
        ),
        (
            lambda d: d["must_not_store"].append({"text": "React", "kind": "incognito"}),
            "must_not_store.2.text: never said in an incognito",
        ),
        (
            lambda d: d["must_not_store"].append({"text": "prometheus", "kind": "chitchat"}),
            "must_not_store.2.text: contained in a required detail of memories.1",
        ),
        (
            lambda d: d["sessions"][1].update(date="2025-01-01"),
            "sessions.1.date: sessions must be in chronological order",
        ),
        (lambda d: d["sessions"][1].update(id="s1"), "sessions.1.id: duplicate id 's1'"),
        (
            lambda d: d["sessions"][0]["turns"].pop(),
            "sessions.0.turns: the last turn must be the assistant's",
        ),
        (lambda d: d["sessions"][0]["turns"].reverse(), "sessions.0.turns.0.role: expected 'user'"),
        (
            lambda d: d["memories"][0].update(category="opinion"),
            "memories.0.category: Input should be 'preference'",
        ),
        (
            lambda d: d["memories"][0].update(detials=["x"]),
            "memories.0.detials: Extra inputs are not permitted",
        ),
        (lambda d: d.update(tags=["Preference"]), "tags.0: String should match pattern"),
        (lambda d: d.pop("language"), "language: Field required"),
    ],
)
def test_invalid_dialogs_name_file_and_field(example: dict, tmp_path: Path, edit, expected: str):
    edit(example)
    path = _write(tmp_path, example)
    with pytest.raises(DialogFileError) as info:
        load_dialog(path)
    assert any(line.startswith(f"{path}: {expected}") for line in str(info.value).splitlines()), (
        str(info.value)
    )


def test_a_chitchat_session_cannot_be_where_a_memory_is_first_said(example: dict, tmp_path: Path):
    example["sessions"][0]["chitchat"] = True
    with pytest.raises(DialogFileError, match=r"memories.0: first said in chit-chat session 's1'"):
        load_dialog(_write(tmp_path, example))


def test_yes_and_no_stay_text(example: dict, tmp_path: Path):
    path = _write(tmp_path, example)
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            "content: Makes sense to use one framework everywhere.", "content: yes"
        ),
        encoding="utf-8",
    )
    assert load_dialog(path).session("s2").turns[1].content == "yes"


def test_unreadable_and_malformed_files_name_the_file(tmp_path: Path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("id: [unclosed\n", encoding="utf-8")
    with pytest.raises(DialogFileError, match=rf"^{re.escape(str(broken))}: not valid YAML"):
        load_dialog(broken)
    listed = tmp_path / "list.yaml"
    listed.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(
        DialogFileError, match=rf"^{re.escape(str(listed))}: a dialog file must hold one mapping"
    ):
        load_dialog(listed)
    with pytest.raises(DialogFileError, match="cannot read the dialog file"):
        load_dialog(tmp_path / "missing.yaml")


def test_load_suite_reads_folders_recursively_and_rejects_duplicate_ids(
    example: dict, tmp_path: Path
):
    (tmp_path / "en").mkdir()
    _write(tmp_path / "en", example, "a.yaml")
    second = dict(example, id="other")
    _write(tmp_path, second, "b.yml")
    assert [d.id for d in load_suite(tmp_path)] == [
        "other",
        "example-vue-to-react",
    ]  # b.yml < en/a.yaml
    _write(tmp_path, example, "c.yaml")
    with pytest.raises(
        DialogFileError,
        match=r"en/a.yaml: id: dialog id 'example-vue-to-react' is already used by .*c.yaml",
    ):
        load_suite(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DialogFileError, match="no dialog files"):
        load_suite(tmp_path / "empty")
    with pytest.raises(DialogFileError, match="no such file or folder"):
        load_suite(tmp_path / "nowhere")
