"""The LongMemEval harness on a small file in the published format: each question's own
haystack, where keywords make the rank of the answer turn unambiguous."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from hivemem import InvalidInput, Settings
from hivemem.evaluation.longmemeval import eval_longmemeval, format_lme_report, parse_lme_date
from hivemem.frontends.cli import main

# Keyword-designed outcomes: no dialogue-context spreading, so each rank is by the turn itself.
SETTINGS = Settings(embedder="hash", neighbour_weight=0, window_weight=0, session_weight=0)
FILLER = [
    "We cooked pasta with tomato sauce and basil",
    "The hiking trail near the lake was muddy",
    "Filing taxes took the whole weekend",
    "The printer jammed again at work",
    "My cousin visited from Lisbon in spring",
    "We painted the garage door dark green",
    "The bakery on Main Street sells rye bread",
    "Traffic on the bridge was terrible today",
    "I finished a novel about lighthouse keepers",
    "The dentist appointment moved to Thursday",
    "Our neighbour plays loud drums at night",
    "I planted tulip bulbs along the fence",
]


def _session(user: str, *, answer: bool | None = None) -> list[dict]:
    turn: dict = {"role": "user", "content": user}
    if answer is not None:
        turn["has_answer"] = answer
    return [turn, {"role": "assistant", "content": "Thanks for telling me."}]


def _question(qid, qtype, text, sessions, answer_sessions, dates=None):
    """``sessions`` is a list of (session id, turns)."""
    return {
        "question_id": qid,
        "question_type": qtype,
        "question": text,
        "question_date": "2023/06/01 (Thu) 10:00",
        "answer": "(not used)",
        "answer_session_ids": answer_sessions,
        "haystack_session_ids": [sid for sid, _ in sessions],
        "haystack_dates": dates or ["2023/05/20 (Sat) 02:21"] * len(sessions),
        "haystack_sessions": [turns for _, turns in sessions],
    }


def _dataset() -> list[dict]:
    found = _question(
        "q-parrot",
        "single-session-user",
        "What is the name of my parrot?",
        [
            ("p1", _session(FILLER[0])),
            ("p2", _session("My parrot is named Kiwi and she eats sunflower seeds", answer=True)),
            ("p3", _session(FILLER[1])),
            ("p4", _session(FILLER[2])),
        ],
        ["p2"],
    )
    # Twelve sessions talk about violin lessons; the answer says nothing of them.
    missed = _question(
        "q-violin",
        "multi-session",
        "How many violin lessons did I take?",
        [(f"v{i}", _session(f"Violin lessons with teacher number {i}")) for i in range(12)]
        + [("v-answer", _session("I went to the music school four times", answer=True))],
        ["v-answer"],
    )
    # Five sessions hold all three words, the answer two, the rest none: rank six.
    sixth = _question(
        "q-garden",
        "multi-session",
        "garden tomato harvest",
        [(f"g{i}", _session("garden tomato harvest")) for i in range(5)]
        + [("g-answer", _session("tomato harvest", answer=True))]
        + [(f"g-filler{i}", _session(FILLER[3 + i])) for i in range(6)],
        ["g-answer"],
        dates=["2023/05/20 (Sat) 02:21"] * 5 + ["2023/05/10 (Wed) 09:00"] * 7,
    )
    # No turn marked has_answer: scored at session level only.
    unmarked = _question(
        "q-car",
        "single-session-user",
        "What colour is my car?",
        [("c1", _session(FILLER[9])), ("c2", _session("My car is a red hatchback"))],
        ["c2"],
        dates=["2023/05/01 (Mon) 08:00", "sometime in May"],
    )
    abstention = _question("q-parrot_abs", "single-session-user", "What is my dog called?", [], [])
    return [found, abstention, missed, sixth, unmarked]


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "longmemeval_s.json"
    path.write_text(json.dumps(_dataset()))
    return path


def test_dates_are_parsed_tolerantly():
    assert parse_lme_date("2023/05/20 (Sat) 02:21").isoformat() == "2023-05-20T02:21:00+00:00"
    assert parse_lme_date("2023/05/20").isoformat() == "2023-05-20T00:00:00+00:00"
    assert parse_lme_date(" 2023-05-20T02:21:00 ").isoformat() == "2023-05-20T02:21:00+00:00"
    assert parse_lme_date("sometime in May") is None
    assert parse_lme_date(None) is None


def test_report_scores_turns_and_sessions_by_type(data_file):
    report = eval_longmemeval(data_file, settings=SETTINGS)
    assert report.by_type == {
        "multi-session": {
            "questions": 2,
            "turn_questions": 2,
            "turn_recall_any@5": 0.0,
            "turn_recall_any@10": 0.5,
            "session_recall_any@5": 0.0,
            "session_recall_any@10": 0.5,
        },
        "single-session-user": {
            "questions": 2,
            "turn_questions": 1,
            "turn_recall_any@5": 1.0,
            "turn_recall_any@10": 1.0,
            "session_recall_any@5": 1.0,
            "session_recall_any@10": 1.0,
        },
    }
    assert report.overall == {
        "questions": 4,
        "turn_questions": 3,
        "turn_recall_any@5": 0.3333,
        "turn_recall_any@10": 0.6667,
        "session_recall_any@5": 0.5,
        "session_recall_any@10": 0.75,
    }
    assert report.turns == 2 * (4 + 13 + 12 + 2)
    assert report.abstention_skipped == 1
    assert report.turn_level_skipped == 1
    assert report.turns_per_second > 0
    assert 0 < report.search_ms_p50 <= report.search_ms_p95
    table = format_lme_report(report)
    assert table.splitlines()[0].split()[:3] == ["question", "type", "turn"]
    assert "overall" in table and "1 abstention questions skipped" in table


def test_limit_counts_only_questions_that_are_scored(data_file):
    report = eval_longmemeval(data_file, limit_questions=2, settings=SETTINGS)
    assert report.overall["questions"] == 2
    assert report.abstention_skipped == 1
    assert set(report.by_type) == {"single-session-user", "multi-session"}


def test_cli_prints_json(data_file, monkeypatch):
    monkeypatch.setenv("HIVEMEM_EMBEDDER", "hash")
    args = ["eval", "longmemeval", str(data_file), "--limit-questions", "1", "--json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)  # progress goes to stderr
    assert report["overall"]["turn_recall_any@5"] == 1.0
    assert report["by_type"]["single-session-user"]["session_recall_any@10"] == 1.0
    assert report["turns"] == 8 and report["abstention_skipped"] == 0
    assert set(report) >= {"ingest_turns_per_s", "search_ms_p50", "search_ms_p95"}
    text = CliRunner().invoke(main, ["eval", "longmemeval", str(data_file)])
    assert text.exit_code == 0 and "overall" in text.output


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("{not json", "cannot read"),
        ('{"question_id": "q1"}', "expected a JSON list of questions, got dict"),
        ("[1]", "question 0: expected an object"),
    ],
)
def test_bad_file_is_a_clear_error(tmp_path, content, fragment):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    with pytest.raises(InvalidInput, match=fragment) as info:
        eval_longmemeval(bad, settings=SETTINGS)
    assert str(bad) in str(info.value)


def test_missing_key_names_the_question_and_key(tmp_path):
    data = _dataset()
    del data[2]["haystack_sessions"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(InvalidInput, match=r"question 2: missing key 'haystack_sessions'"):
        eval_longmemeval(bad, settings=SETTINGS)
    result = CliRunner().invoke(main, ["eval", "longmemeval", str(bad)])
    assert result.exit_code == 2
    assert "question 2: missing key 'haystack_sessions'" in result.stderr
    assert "Traceback" not in result.output
