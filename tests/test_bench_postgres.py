"""`hivemem bench --db postgresql://…` measures the server beside SQLite, in one run."""

from __future__ import annotations

import re

from click.testing import CliRunner

from hivemem.frontends.cli import main

ARGS = ["bench", "--sizes", "120", "--queries", "4", "--writes", "3", "--batch", "3", "--quiet"]


def test_bench_on_postgres_prints_sqlite_beside_it(pg_url):
    result = CliRunner().invoke(main, ["--db", pg_url, *ARGS])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "beside SQLite" in lines[0]
    [header] = [line for line in lines if "memories" in line]
    assert header.split()[:2] == ["120", "memories"]
    assert header.index("SQLite") < header.index("PostgreSQL")
    for label in ("add_episode", "search keyword only", "search hybrid", "vector lane"):
        [row] = [line for line in lines if line.strip().startswith(label)]
        figures = re.findall(r"(\d+\.\d\d) / (\d+\.\d\d)", row)
        assert len(figures) == 2, row  # p50 / p95 of SQLite, then of PostgreSQL
        for p50, p95 in figures:
            assert 0 < float(p50) <= float(p95)
