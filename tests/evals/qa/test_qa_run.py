"""`engram eval locomo --mode qa` and `engram eval longmemeval` with fake models: the report's
structure, the baselines, resuming from the journal, exclusions, and bad input.

The data is written by the tests (LoCoMo's and LongMemEval's formats, made-up conversations).
The fake answerer answers a question only when its answer is in what it was given, so each
system's J says what its context held; the fake judge calls an answer correct when it contains
the gold answer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fakes import FunctionChatModel, NGramEmbeddings
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from typer.testing import CliRunner

from engram.evals.qa.answer import FullTranscript, aanswer_with_full_context
from engram.evals.qa.dataset import QAHistory, QAQuestion, QASession, first_questions
from engram.evals.qa.exclusions import read_exclusions
from engram.evals.qa.journal import JOURNAL_FILE
from engram.evals.qa.locomo import locomo_histories
from engram.evals.qa.longmemeval import load_longmemeval
from engram.evals.qa.protocol import LOCOMO
from engram.evals.qa.run import Progress, QASettings, arun_qa, steps_total
from engram.graph.cli import app

runner = CliRunner()

SAMPLE = {
    "sample_id": "conv-t1",
    "conversation": {
        "speaker_a": "Ann",
        "speaker_b": "Bo",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Miso yesterday."},
            {"speaker": "Bo", "dia_id": "D1:2", "text": "Congrats! What breed is she?"},
            {"speaker": "Ann", "dia_id": "D1:3", "text": "A tabby. I also started the cello."},
            {"speaker": "Bo", "dia_id": "D1:4", "text": "Two big news in one week."},
        ],
        "session_2_date_time": "10:00 am on 20 June, 2023",
        "session_2": [
            {"speaker": "Bo", "dia_id": "D2:1", "text": "Hey Ann, how is the music going?"},
            {"speaker": "Ann", "dia_id": "D2:2", "text": "I played my first concert in Lisbon."},
            {"speaker": "Bo", "dia_id": "D2:3", "text": "Wow, that is brave!"},
        ],
    },
    "qa": [
        {"question": "What is the name of Ann's cat?", "answer": "Miso", "evidence": ["D1:1"],
         "category": 4},
        {"question": "When did Ann adopt her cat?", "answer": "7 May 2023", "evidence": ["D1:1"],
         "category": 2},
        {"question": "Where did Ann play her first concert?", "answer": "Lisbon",
         "evidence": ["D2:2"], "category": 1},
        {"question": "What did Bo's dog eat?", "adversarial_answer": "a cake",
         "evidence": ["D2:1"], "category": 5},
        {"question": "Which instrument does Ann play?", "answer": "cello", "evidence": [],
         "category": 3},
    ],
}

LONGMEMEVAL_ITEMS = [
    {
        "question_id": "q-commute",
        "question_type": "single-session-user",
        "question": "How long is my daily commute?",
        "answer": "45 minutes",
        "question_date": "2023/06/01 (Thu) 10:00",
        "haystack_session_ids": ["s-later", "s-first"],
        "haystack_dates": ["2023/05/25 (Thu) 09:00", "2023/05/20 (Sat) 02:21"],
        "haystack_sessions": [
            [{"role": "user", "content": "Can you recommend a podcast?"},
             {"role": "assistant", "content": "Try a history podcast."}],
            [{"role": "user", "content": "My daily commute takes 45 minutes by train."},
             {"role": "assistant", "content": "That is a long ride; audiobooks help."}],
        ],
        "answer_session_ids": ["s-first"],
    },
    {
        "question_id": "q-dog_abs",
        "question_type": "knowledge-update",
        "question": "What is my dog's name?",
        "answer": "You did not mention having a dog.",
        "question_date": "2023/06/02 (Fri) 10:00",
        "haystack_session_ids": ["s-cat"],
        "haystack_dates": ["2023/05/21 (Sun) 08:00"],
        "haystack_sessions": [
            [{"role": "user", "content": "My cat Miso knocked over a plant."},
             {"role": "assistant", "content": "Cats love doing that."}],
        ],
        "answer_session_ids": [],
    },
]

ANSWERS = {
    "adopt": "7 May 2023", "cat": "Miso", "concert": "Lisbon", "instrument": "cello",
    "dog": "a cake", "commute": "45 minutes",
}
"""Question keyword -> the answer the fake answerer gives when its context holds it (the first
keyword the question holds counts)."""


def answerer_reply(messages: list[BaseMessage]) -> str:
    """Answers from the system message only: the answer if it is there, else "I don't know"."""
    system, question = str(messages[0].content), str(messages[-1].content).lower()
    word = next((w for w in ANSWERS if w in question), None)
    return ANSWERS[word] if word and ANSWERS[word] in system else "I don't know"


def judge_reply(messages: list[BaseMessage]) -> str:
    """A strict judge in each protocol's form: correct when the gold answer is in the answer."""
    prompt = str(messages[-1].content)
    if "Gold answer:" in prompt:  # the LoCoMo judge
        gold = re.findall(r"Gold answer: (.*)", prompt)[-1]
        answer = re.findall(r"Answer to grade: (.*)", prompt)[-1]
        label = "CORRECT" if gold.lower() in answer.lower() else "WRONG"
        return f'I compared them. {{"label": "{label}"}}'
    answer = re.search(r"Response: (.*)", prompt).group(1)
    if "cannot be answered" in prompt:  # LongMemEval's abstention judge
        return "yes" if "know" in answer else "no"
    gold = re.search(r"Correct answer: (.*)", prompt).group(1)
    return "yes" if gold.lower() in answer.lower() else "no"


MODELS_FILE = """
from fakes import FunctionChatModel
from test_qa_run import answerer_reply, judge_reply


def answerer():
    return FunctionChatModel(reply=answerer_reply)


def judge():
    return FunctionChatModel(reply=judge_reply)
"""


def write_locomo(folder: Path) -> Path:
    path = folder / "locomo-test.json"
    path.write_text(json.dumps([SAMPLE]), encoding="utf-8")
    return path


def write_models(folder: Path) -> tuple[str, str]:
    path = folder / "qa_models.py"
    path.write_text(MODELS_FILE, encoding="utf-8")
    return f"{path}:answerer", f"{path}:judge"


def qa(*args: str):
    return runner.invoke(app, ["eval", *args], catch_exceptions=False)


def test_locomo_qa_reports_every_system_on_the_same_questions(tmp_path):
    data, (answerer, judge) = write_locomo(tmp_path), write_models(tmp_path)
    out = tmp_path / "out"
    result = qa("locomo", "--mode", "qa", "--data", str(data), "--model", answerer,
                "--judge", judge, "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "systems (same questions, same models)" in result.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))

    assert (report["kind"], report["benchmark"], report["mode"]) == ("qa", "locomo", "offline")
    assert report["models"] == {"answer": answerer, "judge": judge, "memory": "offline built-ins"}
    assert "mem0" in report["protocol"]["name"] and report["protocol"]["published_j"]["mem0"]
    # categories 1-4 by default: the adversarial question is not asked
    assert report["questions"]["total"] == 4 and report["questions"]["excluded"] == 0
    assert report["questions"]["by_category"] == {
        "single-hop": 1, "multi-hop": 1, "temporal": 1, "open-domain": 1
    }
    assert list(report["systems"]) == ["engram", "retrieval", "full-context", "no-memory"]
    for figures in report["systems"].values():
        assert figures["answers"] == figures["judged"] == 4
        assert set(figures) >= {"j", "j_ci95", "f1", "bleu1", "prompt_tokens",
                                "answer_latency_p50_ms", "answer_latency_p95_ms", "by_category"}
    # the whole conversation holds three answers (the date is not written as such); nothing does
    assert report["systems"]["full-context"]["j"] == 0.75
    assert report["systems"]["no-memory"]["j"] == 0.0
    assert report["systems"]["no-memory"]["f1"] == 0.0
    full, bare = report["systems"]["full-context"], report["systems"]["no-memory"]
    assert full["prompt_tokens"] > bare["prompt_tokens"] > 0

    metrics = report["metrics"]  # engram's, with what writing memory cost
    assert metrics["j"] == report["systems"]["engram"]["j"]
    assert metrics["j_ci95_low"] <= metrics["j"] <= metrics["j_ci95_high"]
    assert metrics["memory_model_calls"] == 0 and metrics["memory_write_latency_p95_ms"] > 0
    assert set(metrics["latency_p50_ms"]) >= {"start", "respond", "consolidate"}
    assert report["memory_write"]["conv-t1"]["messages"] == 7
    assert len(list((out / "stores").iterdir())) == 1  # kept for a rerun with more questions

    by_id = {row["id"]: row for row in report["answers"]}
    assert list(by_id) == ["conv-t1:0", "conv-t1:1", "conv-t1:2", "conv-t1:4"]
    cat = by_id["conv-t1:0"]
    assert (cat["question"], cat["gold"], cat["category"]) == (
        "What is the name of Ann's cat?", "Miso", "single-hop"
    )
    assert cat["systems"]["full-context"]["answer"] == "Miso"
    assert cat["systems"]["full-context"]["correct"] is True
    assert cat["systems"]["full-context"]["f1"] == 1.0
    assert '"label": "CORRECT"' in cat["systems"]["full-context"]["judge_reply"]
    assert cat["systems"]["no-memory"]["correct"] is False
    assert "<user_memory>" in cat["systems"]["engram"]["context"]
    assert "Miso" in cat["systems"]["retrieval"]["context"]  # the archived message
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "What is the name of Ann&#x27;s cat?" in html and "J by category" in html


def _settings(tmp_path: Path, answerer, judge, **kwargs) -> QASettings:
    return QASettings(
        protocol=LOCOMO, model=answerer, model_spec=kwargs.pop("model_spec", "answerer"),
        judge=judge, judge_spec=kwargs.pop("judge_spec", "judge"), embeddings=NGramEmbeddings(),
        out=tmp_path / "out", data_digest="test-data", **kwargs,
    )


class Flaky(FunctionChatModel):
    """Fails every call after the first `working` ones (a server that went away)."""

    working: int = 0

    def _generate(self, messages, *args, **kwargs):  # type: ignore[override]
        if len(self.calls) >= self.working:
            self.calls.append(list(messages))
            raise RuntimeError("connection refused")
        return super()._generate(messages, *args, **kwargs)


async def test_a_rerun_skips_what_the_journal_holds(tmp_path):
    histories = locomo_histories(write_locomo(tmp_path))
    answerer, judge = FunctionChatModel(reply=answerer_reply), FunctionChatModel(reply=judge_reply)
    first = await arun_qa(first_questions(histories, 2), _settings(tmp_path, answerer, judge))
    assert (len(answerer.calls), len(judge.calls), len(first.results)) == (8, 8, 8)

    # the same command again: no model call, no ingestion, the same results
    answerer.calls.clear(), judge.calls.clear()
    turns, steps = [], []
    progress = Progress(turn=lambda: turns.append(1), step=steps.append)
    again = await arun_qa(first_questions(histories, 2), _settings(tmp_path, answerer, judge),
                          progress)
    assert (len(answerer.calls), len(judge.calls)) == (0, 0)
    assert again.results == first.results
    assert len(turns) == 7 and len(steps) == 16  # counted (an answer and a verdict each), not done
    assert steps_total(first_questions(histories, 2), _settings(tmp_path, None, None)) == 23
    assert again.ingests == first.ingests

    # one more question: only it is asked; another judge: every answer re-judged, none re-asked
    more = await arun_qa(first_questions(histories, 3), _settings(tmp_path, answerer, judge))
    assert (len(answerer.calls), len(judge.calls), len(more.results)) == (4, 4, 12)
    answerer.calls.clear(), judge.calls.clear()
    await arun_qa(first_questions(histories, 3),
                  _settings(tmp_path, answerer, judge, judge_spec="another judge"))
    assert (len(answerer.calls), len(judge.calls)) == (0, 12)
    records = [json.loads(line) for line in (tmp_path / "out" / JOURNAL_FILE).open()]
    assert sum(r["kind"] == "ingest" for r in records) == 1


async def test_an_interrupted_run_is_finished_by_the_next(tmp_path):
    histories = locomo_histories(write_locomo(tmp_path))
    flaky = Flaky(reply=judge_reply, working=5)
    answerer = FunctionChatModel(reply=answerer_reply)
    broken = await arun_qa(histories, _settings(tmp_path, answerer, flaky))
    assert len(broken.failures) == 11 and {f["stage"] for f in broken.failures} == {"judge"}
    assert "connection refused" in broken.failures[0]["error"]
    # a write cut short by the interruption is ignored
    with (tmp_path / "out" / JOURNAL_FILE).open("a") as journal:
        journal.write('{"kind": "verdict", "hist')

    judge = FunctionChatModel(reply=judge_reply)
    answerer.calls.clear()
    done = await arun_qa(histories, _settings(tmp_path, answerer, judge))
    assert not done.failures and len(done.results) == 16
    assert (len(answerer.calls), len(judge.calls)) == (0, 11)  # only the missing verdicts


def test_exclusions_by_id_and_digest(tmp_path):
    data, (answerer, judge) = write_locomo(tmp_path), write_models(tmp_path)
    [history] = locomo_histories(data)
    cat, adopted = history.questions[0], history.questions[1]
    listed = tmp_path / "wrong-gold.txt"
    listed.write_text(
        "# questions with a wrong gold answer\n\n"
        f"{cat.id} sha1:{cat.digest}  # the cat\n"
        f"{adopted.id} sha1:00000000  # made for another version of the data\n"
        "conv-other:3\n",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    result = qa("locomo", "--mode", "qa", "--data", str(data), "--model", answerer, "--judge",
                judge, "--baselines", "none", "--exclude", str(listed), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "1 excluded" in result.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert list(report["systems"]) == ["engram"]
    assert report["questions"]["total"] == 3 and report["questions"]["excluded"] == 1
    assert report["excluded"] == {
        "count": 1, "files": [str(listed)], "ids": [cat.id], "listed_but_not_in_data": 1,
        "listed_with_another_text": [adopted.id],
    }
    assert cat.id not in {row["id"] for row in report["answers"]}


def test_limit_takes_questions_in_turn_from_each_category():
    def history(name: str, categories: str) -> QAHistory:
        questions = tuple(
            QAQuestion(f"{name}:{i}", c, "q?", "g") for i, c in enumerate(categories)
        )
        return QAHistory(name, name, ("A", "B"), (), questions)

    histories = [history("a", "tttmm"), history("b", "sstm"), history("c", "t")]
    chosen = {n: [q.id for h in first_questions(histories, n) for q in h.questions]
              for n in (1, 3, 5, 20)}
    assert chosen[1] == ["a:0"]
    assert chosen[3] == ["a:0", "a:3", "b:0"]  # temporal, multi-hop, then single-hop
    assert chosen[5] == ["a:0", "a:1", "a:3", "a:4", "b:0"]
    assert len(chosen[20]) == 10
    assert [h.id for h in first_questions(histories, 3)] == ["a", "b"]  # c is not written
    assert all(set(chosen[n]) <= set(chosen[n + 2]) for n in (1, 3))


def test_an_exclusion_file_with_a_bad_line_names_it(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("conv-1:2\nconv-1:3 sha1:xyz\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad.txt:2: 'conv-1:3 sha1:xyz'"):
        read_exclusions(bad)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--data", "{tmp}/nope.json"], "LoCoMo data not found"),
        (["--model", "no-such-provider:model-x"], "--model"),
        (["--judge", "no-such-provider:model-x"], "--judge"),
        (["--categories", "1,9"], "unknown LoCoMo category '9'"),
        (["--categories", "trivia"], "unknown LoCoMo category 'trivia'"),
        (["--baselines", "oracle"], "unknown baseline(s) oracle"),
        (["--limit", "0"], "--limit must be at least 1"),
        (["--jobs", "0"], "--jobs must be at least 1"),
        (["--exclude", "{tmp}/missing.txt"], "exclusion file not found"),
        (["--conversations", "conv-999"], "conv-999"),
    ],
)
def test_locomo_qa_bad_input_exits_2_with_a_clear_message(tmp_path, args, message):
    data, (answerer, _) = write_locomo(tmp_path), write_models(tmp_path)
    base = {"--data": str(data), "--model": answerer, "--out": str(tmp_path / "out")}
    for option, value in zip(args[::2], args[1::2], strict=True):
        base[option] = value.format(tmp=tmp_path)
    result = runner.invoke(app, ["eval", "locomo", "--mode", "qa",
                                 *[x for pair in base.items() for x in pair]])
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert not (tmp_path / "out").exists()


def test_locomo_qa_needs_a_model(tmp_path):
    result = runner.invoke(app, ["eval", "locomo", "--mode", "qa", "--data",
                                 str(write_locomo(tmp_path))])
    assert result.exit_code == 2 and "--model is required" in result.output


async def test_the_full_context_leaves_the_oldest_messages_out_when_the_window_is_small():
    sessions = tuple(
        QASession(f"day {n}", tuple(
            (HumanMessage if i % 2 == 0 else AIMessage)(
                f"message {n}.{i} " + "word " * 40, id=f"{n}:{i}", name="Ann" if i % 2 else "Bo"
            )
            for i in range(5)
        ))
        for n in range(1, 5)
    )
    history = QAHistory("h", "h", ("Ann", "Bo"), sessions, ())
    question = QAQuestion("h:0", "single-hop", "What was said last?", "message 4.4")
    model = FunctionChatModel(reply=lambda messages: "ok", profile={"max_input_tokens": 1200})
    transcript = FullTranscript(history, model)
    answer = await aanswer_with_full_context(model, transcript, question, LOCOMO)
    assert 0 < answer.left_out_messages < 20 and answer.left_out_tokens > 0
    assert "oldest left out" in answer.context
    assert answer.prompt_tokens <= transcript.available
    sent = str(model.calls[0][0].content)
    assert "message 4.4" in sent and "message 1.0" not in sent  # the newest kept
    assert f"the {answer.left_out_messages} oldest messages are left out" in sent
    assert "## Session 4 (day 4)" in sent


def test_longmemeval_runs_each_question_on_its_own_history(tmp_path):
    data = tmp_path / "longmemeval-test.json"
    data.write_text(json.dumps(LONGMEMEVAL_ITEMS), encoding="utf-8")
    answerer, judge = write_models(tmp_path)
    out = tmp_path / "out"
    result = qa("longmemeval", "--data", str(data), "--model", answerer, "--judge", judge,
                "--baselines", "full-context,no-memory", "--out", str(out))
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert report["benchmark"] == "longmemeval" and "LongMemEval" in report["protocol"]["name"]
    assert list(report["systems"]) == ["engram", "full-context", "no-memory"]
    assert report["questions"]["by_category"] == {"single-session-user": 1, "knowledge-update": 1}
    assert set(report["memory_write"]) == {"q-commute", "q-dog_abs"}
    assert not list((out / "stores").iterdir())  # one question per history: stores deleted
    full = report["systems"]["full-context"]["by_category"]
    assert full["single-session-user"]["j"] == 1.0  # the commute is in the history
    rows = {row["id"]: row for row in report["answers"]}
    assert rows["q-commute"]["date"] == "2023/06/01 (Thu) 10:00"
    # the abstention question is judged by LongMemEval's abstention prompt
    assert rows["q-dog_abs"]["systems"]["no-memory"]["judge_reply"] == "yes"

    [commute, _] = load_longmemeval(data)
    assert [s.date for s in commute.sessions] == ["2023/05/20 (Sat) 02:21",
                                                  "2023/05/25 (Thu) 09:00"]  # date order
    first = commute.sessions[0].messages[0]
    assert (first.type, first.id) == ("human", "s-first:0")
    assert first.additional_kwargs["timestamp"] == "2023-05-20T02:21:00"


@pytest.mark.parametrize(
    ("content", "args", "message"),
    [
        ('{"not": "a list"}', [], "not LongMemEval data"),
        ('[{"question_id": "q1"}]', [], "item 0 is not a LongMemEval question: missing"),
        (json.dumps(LONGMEMEVAL_ITEMS), ["--question-types", "trivia"],
         "unknown LongMemEval question type(s) trivia"),
    ],
)
def test_longmemeval_bad_input_exits_2(tmp_path, content, args, message):
    data = tmp_path / "bad.json"
    data.write_text(content, encoding="utf-8")
    answerer, _ = write_models(tmp_path)
    result = runner.invoke(app, ["eval", "longmemeval", "--data", str(data), "--model",
                                 answerer, *args])
    assert result.exit_code == 2, result.output
    assert message in result.output
