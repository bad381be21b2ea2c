"""The LoCoMo harness on a tiny file in the published format."""

from __future__ import annotations

import json

import pytest

from hivemem import InvalidInput
from hivemem.evaluation.locomo import eval_locomo, format_report, parse_evidence, parse_locomo_time


def test_evidence_defects_are_repaired():
    assert parse_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert parse_evidence(["D:11:26", "D30:05", "D", "D1:2", "D1:2"]) == [
        "D11:26",
        "D30:5",
        "D1:2",
    ]


def test_session_time_is_parsed():
    assert parse_locomo_time("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"
    assert parse_locomo_time("sometime") is None


@pytest.fixture
def tiny(tmp_path):
    data = [
        {
            "sample_id": "conv-x",
            "conversation": {
                "speaker_a": "Ann",
                "speaker_b": "Bob",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a puppy named Rex"},
                    {"speaker": "Bob", "dia_id": "D1:2", "text": "Congrats! What breed?"},
                    {
                        "speaker": "Ann",
                        "dia_id": "D1:3",
                        "text": "A beagle",
                        "blip_caption": "a photo of a small dog on grass",
                    },
                ],
                "session_2_date_time": "9:00 am on 1 June, 2023",  # no session_2 turns
            },
            "qa": [
                {
                    "question": "What is the puppy's name?",
                    "answer": "Rex",
                    "evidence": ["D1:1"],
                    "category": 4,
                },
                {
                    "question": "Which breed is the dog?",
                    "answer": "beagle",
                    "evidence": ["D1:3"],
                    "category": 1,
                },
                {
                    "question": "What did Bob adopt?",
                    "adversarial_answer": "a cat",
                    "evidence": ["D1:9"],
                    "category": 5,
                },
            ],
        }
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    return path


def test_eval_scores_hits_against_evidence(tiny):
    report = eval_locomo(tiny)
    assert report.memories == 3
    assert report.skipped_questions == 1  # D1:9 does not exist
    assert report.by_category["4 single-hop"]["hit@1"] == 1.0
    assert report.by_category["1 multi-hop"]["hit@10"] == 1.0  # found via the image caption
    assert report.overall["questions"] == 2
    table = format_report(report)
    assert "overall 1-4" in table and "3 memories ingested" in table


def test_bad_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidInput, match="cannot read"):
        eval_locomo(bad)
