"""`hivemem eval context` (evidence in the context block beside BM25 in the same tokens)
and `hivemem eval access` (every question searched twice, searches counted as accesses
or not), on a small LoCoMo-shaped file."""

from __future__ import annotations

import json

from click.testing import CliRunner

from hivemem import Settings
from hivemem.evaluation.access_eval import format_access, run_access_suite
from hivemem.evaluation.context_eval import format_context, run_context_suite
from hivemem.evaluation.suites import locomo_suite
from hivemem.frontends.cli import main
from test_suites import _locomo

SETTINGS = Settings(embedder="hash")


def test_the_block_holds_the_evidence_and_bm25_gets_the_same_tokens(tmp_path):
    suite = locomo_suite(_locomo(tmp_path))
    report = run_context_suite(suite, SETTINGS, floors=(0.0, 1.0))
    assert report.questions == 2  # categories 1-4; the adversarial one only by category
    assert report.overall["block"]["0.0"] == 1.0  # four turns: all in the block
    assert report.overall["block"]["1.0"] == 0.0  # no hit reaches a floor of 1
    assert report.overall["tokens"]["1.0"] == 0.0
    assert 0 < report.overall["tokens"]["0.0"] < 200
    # BM25 had the same tokens as the floor-0 block, and the turns share words with
    # the questions
    assert report.overall["bm25"] == 1.0
    text = format_context(report)
    assert "in block (floor 0.0, tokens)" in text and "BM25 in the tokens of floor 0.0" in text
    assert "overall" in text


def test_eval_context_and_access_commands(tmp_path):
    path = str(_locomo(tmp_path))
    env = {"HIVEMEM_EMBEDDER": "hash"}
    args = ["eval", "context", "--locomo", path, "--suite", "locomo", "--min-score", "0"]
    result = CliRunner().invoke(main, [*args, "--json"], env=env)
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)
    assert report["suite"] == "LoCoMo episodes" and report["floors"] == [0.0]
    assert report["overall"]["block"]["0.0"] == 1.0
    access = CliRunner().invoke(
        main, ["eval", "access", "--locomo", path, "--suite", "locomo", "--json"], env=env
    )
    assert access.exit_code == 0, access.output
    [rates] = json.loads(access.stdout)
    assert set(rates["rates"]) == {"get", "search"}
    assert set(rates["rates"]["get"]) == {"pass 1", "pass 2"}
    nothing = CliRunner().invoke(main, ["eval", "context"])
    assert nothing.exit_code == 2 and "--locomo" in nothing.output


def test_eval_context_runs_the_bundled_paraphrase_suite(tmp_path):
    """The fourth suite of `eval all` is measured too: its answers share no word with
    their questions, so BM25 in the same tokens never holds one."""
    args = ["eval", "context", "--suite", "paraphrase", "--limit-questions", "3", "--json"]
    result = CliRunner().invoke(main, args, env={"HIVEMEM_EMBEDDER": "hash"})
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)
    assert report["suite"] == "Paraphrase" and report["questions"] == 3
    assert report["overall"]["bm25"] == 0.0
    assert report["overall"]["tokens"]["0.05"] > 0  # a block was built for each


def test_uncounted_searches_rank_both_passes_alike_and_the_kept_store_is_untouched(tmp_path):
    """Under ``get`` nothing a search returns is counted, so both passes rank alike; the
    passes run on a copy, so the kept store's counts stay 0."""
    suite = locomo_suite(_locomo(tmp_path))
    report = run_access_suite(suite, SETTINGS, keep=tmp_path / "keep")
    assert report.rates["get"]["pass 1"] == report.rates["get"]["pass 2"]
    assert "pass 2" in format_access(report)
    kept = list((tmp_path / "keep").glob("*.db"))
    assert len(kept) == 1  # the kept store was copied, its counts never written to it
    from hivemem import open as open_store

    with open_store(kept[0], settings=SETTINGS) as store:
        assert all(m.access_count == 0 for m in store.iter_memories())
