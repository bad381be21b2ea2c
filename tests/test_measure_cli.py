"""`hivemem bench` and `hivemem eval` run end to end and print their figures."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hivemem.cli import main


def test_bench_command_prints_json_figures():
    result = CliRunner().invoke(
        main,
        ["bench", "--sizes", "200", "--queries", "5", "--writes", "5", "--batch", "5", "--json"],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    [size] = report["results"]
    assert size["size"] == 200


def test_bench_rejects_bad_sizes():
    result = CliRunner().invoke(main, ["bench", "--sizes", "ten"])
    assert result.exit_code == 2 and "comma-separated" in result.output


def test_eval_locomo_command(tmp_path):
    data = [
        {
            "sample_id": "c1",
            "conversation": {
                "speaker_a": "A",
                "speaker_b": "B",
                "session_1_date_time": "1:56 pm on 8 May, 2023",
                "session_1": [{"speaker": "A", "dia_id": "D1:1", "text": "My cat is Tom"}],
            },
            "qa": [
                {
                    "question": "What is the cat called?",
                    "answer": "Tom",
                    "evidence": ["D1:1"],
                    "category": 4,
                }
            ],
        }
    ]
    path = tmp_path / "l.json"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["eval", "locomo", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["overall_cat1_4"]["hit@1"] == 1.0
    text = CliRunner().invoke(main, ["eval", "locomo", str(path)])
    assert "overall 1-4" in text.output
