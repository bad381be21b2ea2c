"""`hivemem bench --write-path`: the write path beside plain SQLite, end to end.

Benchmarks are commands, not timed tests: nothing here asserts a speed, only that the
figures are measured on the rows asked for and printed.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from hivemem.evaluation.bench_write import format_write, run_write_bench
from hivemem.frontends.cli import main
from hivemem.store.baseline import BareStore, wal_pages


def test_write_bench_times_both_paths_beside_plain_sqlite():
    stages: list[str] = []
    report = run_write_bench(
        60, 25, model=False, progress=lambda stage, done, total: stages.append(stage)
    )
    hot, batch = report.hot, report.batch
    assert (hot.rows, hot.per_call, hot.hivemem.count, hot.baseline.count) == (60, 1, 60, 60)
    # 60 rows in batches of 25: calls of 25, 25 and 10, on both sides.
    assert (batch.rows, batch.per_call, batch.hivemem.count, batch.baseline.count) == (
        60,
        25,
        3,
        3,
    )
    for path in (hot, batch):
        assert path.hivemem_per_s > 0 and path.baseline_per_s > 0 and path.ratio > 0
        # Pages of WAL are counted, not timed: a row and its FTS5 row log at least one
        # page per transaction, and HiveMem's turn (row, chunk, links, session) more.
        assert path.hivemem_wal_pages > path.baseline_wal_pages > 0
    assert hot.baseline_wal_pages >= 1 and hot.hivemem_wal_pages > 2 * hot.baseline_wal_pages
    assert report.ingest is None
    assert {"hot path", "batch path"} <= set(stages)
    table = format_write(report)
    assert "hot (1 per tx)" in table and "batch (25 per tx)" in table
    assert "WAL pages per row" in table


@pytest.mark.parametrize("kwargs", [{"rows": 0}, {"batch": 0}, {"rows": True}])
def test_write_bench_rejects_bad_counts(kwargs):
    with pytest.raises(ValueError):
        run_write_bench(**{"rows": 10, "batch": 5, "model": False, **kwargs})


def test_bench_write_path_command_prints_json():
    args = ["bench", "--write-path", "--writes", "30", "--batch", "10", "--no-model"]
    result = CliRunner().invoke(main, [*args, "--quiet", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["hot"]["rows"] == 30 and report["batch"]["per_call"] == 10
    assert report["ingest"] is None
    printed = CliRunner().invoke(main, [*args, "--quiet"])
    assert printed.exit_code == 0, printed.output
    assert "ratio" in printed.stdout


def test_wal_pages_counts_the_frames_a_write_appends(tmp_path):
    bare = BareStore(tmp_path / "bare.db")
    bare.add("s", "warm the file up")
    assert wal_pages(tmp_path / "bare.db", lambda: None) == 0
    one = wal_pages(tmp_path / "bare.db", lambda: bare.add("s", "one row"))
    two = wal_pages(tmp_path / "bare.db", lambda: [bare.add("s", f"row {i}") for i in range(2)])
    assert one >= 1 and two > one  # each commit logs the pages it changed again
    bare.close()


def test_bare_store_close_closes_only_its_connection(tmp_path):
    bare = BareStore(tmp_path / "bare.db")
    bare.add("s", "one row")
    bare.close()
    bare.add("s", "a second row, on a new connection")
    assert len(bare.search("s", "row", 10)) == 2
    bare.close()


def test_bench_write_path_on_postgres_beside_a_plain_insert(pg_url):
    args = ["--db", pg_url, "bench", "--write-path", "--writes", "20", "--batch", "10"]
    result = CliRunner().invoke(main, [*args, "--no-model", "--quiet", "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["backend"] == "postgresql"
    assert (report["hot"]["rows"], report["hot"]["hivemem"]["count"]) == (20, 20)
    assert (report["batch"]["rows"], report["batch"]["baseline"]["count"]) == (20, 2)
    assert report["hot"]["baseline_per_s"] > 0 and report["batch"]["ratio"] > 0
    assert report["hot"]["hivemem_wal_pages"] is None  # a SQLite file's count
