"""`hivemem bench` and `hivemem eval` run end to end and print their figures."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hivemem.frontends.cli import main


def test_bench_command_prints_json_figures(monkeypatch):
    monkeypatch.setenv("HIVEMEM_VECTOR_POOL", "80")
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "--sizes",
            "200",
            "--queries",
            "5",
            "--writes",
            "5",
            "--batch",
            "5",
            "--no-model",
            "--long-scopes",
            "2",
            "--long-turns",
            "12",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    [size] = report["results"]
    assert size["size"] == 200 and size["vectors"] == 200
    for mode in ("search_keyword_only", "search_hybrid", "vector_lane"):
        assert size[mode]["latency"]["count"] == 5
    assert report["model"] is None
    assert report["settings_changed"] == {"vector_pool": 80}  # HIVEMEM_* settings apply
    long = report["long_memories"]
    assert long["scopes"] == 2 and long["turns_per_scope"] == 12
    assert long["mean_turn_chars"] > 900
    assert [r["limit"] for r in long["results"]] == [10, 50]
    for r in long["results"]:
        assert r["first_query"]["count"] == 2 and r["warm"]["count"] == 20


def test_bench_command_prints_a_table():
    result = CliRunner().invoke(
        main,
        [
            "bench",
            "--sizes",
            "100",
            "--queries",
            "3",
            "--writes",
            "3",
            "--batch",
            "3",
            "--no-model",
            "--long-scopes",
            "0",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Long memories" not in result.output
    assert "N=100" in result.output and "search hybrid (hash) p50 (ms)" in result.output
    assert "vector indexing (hash) vectors/s" in result.output


def test_default_bench_is_quick_and_shows_progress_on_stderr_without_a_terminal():
    result = CliRunner().invoke(main, ["bench", "--no-model", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    [size] = report["results"]
    assert size["size"] == 1000 and size["search_hybrid"]["latency"]["count"] == 50
    stages = result.stderr.splitlines()
    assert "load 1,000: 0/1000" in stages and "load 1,000: 1000/1000" in stages
    assert "search hybrid: 50/50" in stages
    assert "\r" not in result.stderr  # no terminal: whole lines, not redraws


def test_progress_without_a_terminal_prints_each_tenth_once(capsys):
    from hivemem.frontends.cli.measure import _stage_printer

    report = _stage_printer()
    for done in (0, 5, 10, 15, 55, 100):
        report("load", done, 100)
    assert capsys.readouterr().err.splitlines() == [
        "load: 0/100",
        "load: 10/100",
        "load: 55/100",
        "load: 100/100",
    ]
    assert _stage_printer(quiet=True) is None


def test_bench_quiet_and_the_full_warning():
    args = ["bench", "--sizes", "100", "--queries", "3", "--writes", "3", "--no-model"]
    quiet = CliRunner().invoke(main, [*args, "--quiet"])
    assert quiet.exit_code == 0 and quiet.stderr == ""
    full = CliRunner().invoke(main, [*args, "--full"])
    assert full.exit_code == 0, full.output
    assert full.stderr.startswith("note: the full bench loads 100 memories: minutes")
    assert "0.6 MB written to a temporary folder" in full.stderr
    help_text = CliRunner().invoke(main, ["bench", "--help"]).output
    assert "--full" in help_text and "10000,100000" in help_text


def test_bench_rejects_bad_counts():
    result = CliRunner().invoke(main, ["bench", "--sizes", "10", "--queries", "0", "--no-model"])
    assert result.exit_code != 0 and "queries must be a whole number" in result.output


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
    # The question behind a 2 kB system prompt still finds its turn (query focus).
    prompted = CliRunner().invoke(main, ["eval", "locomo", str(path), "--system-prompt", "--json"])
    assert prompted.exit_code == 0, prompted.output
    assert json.loads(prompted.output)["overall_cat1_4"]["hit@1"] == 1.0
