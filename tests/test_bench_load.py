"""``hivemem bench --load``'s correctness claims (not its speed): a few clients against a
real ``serve-http`` process for a few seconds; zero errors, and every acknowledged write
found through the server and, after it stopped, through the library."""

from __future__ import annotations

import pytest

from hivemem.evaluation.bench_load import (
    LoadTarget,
    _found_after_stop,
    default_file,
    format_load,
    run_load,
)
from hivemem.store.baseline import BareStore

pytest.importorskip("fastapi")  # the server's; the clients need only the standard library


def _check(result):
    assert result.errors == 0, result.error_samples
    assert result.latency["search"].count > 0 and result.latency["write"].count > 0
    assert result.acknowledged == result.latency["write"].count > 0
    assert result.found_via_http == result.acknowledged
    assert result.found_after_stop == result.acknowledged
    assert result.requests_per_s > 0
    assert "NOT EVERY" not in format_load([result])
    # what each side cost per request is printed beside the figures
    figures = result.to_dict()
    assert figures["client_cpu_ms_per_request"] > 0 and figures["server_cpu_ms_per_request"] > 0
    assert "CPU per request: clients" in format_load([result])


def _check_stages(result):
    """The server timed its stages: every request the clients saw, counted once (with
    several workers, each worker's report is added), and the library's CPU in it."""
    stages = result.stages
    assert stages is not None and stages.requests == result.requests
    assert set(stages.ms) == {"parse", "auth", "library", "serialise", "framework"}
    assert stages.ms["library"] > 0 and stages.ms["serialise"] > 0
    # the stages and the framework's rest add up to the server's CPU per request
    total = result.cpu_ms_per_request(result.server_cpu_s)
    assert sum(stages.ms.values()) == pytest.approx(total, rel=0.01) or stages.ms["framework"] == 0
    assert "server CPU ms per request by stage: parse" in format_load([result])
    assert result.to_dict()["server_cpu_ms_by_stage"]["requests"] == result.requests


def test_load_on_sqlite_loses_no_acknowledged_write(tmp_path):
    db = default_file(str(tmp_path))
    result = run_load(LoadTarget("sqlite", db), clients=4, seconds=2, preload=50)
    _check(result)
    _check_stages(result)
    assert result.stages.ms["auth"] > 0 and result.stages.ms["parse"] > 0  # a token, a body
    # the check can fail: an id that was never written is not found
    gone = {"0190-not-a-memory": ("load-none", "x")}
    assert _found_after_stop(LoadTarget("sqlite", db), gone) == 0


def test_load_on_postgresql(pg_url):
    result = run_load(LoadTarget("postgresql", pg_url), clients=3, seconds=2, preload=30)
    _check(result)
    assert result.db == pg_url
    # The test server runs on this machine: its own processes' CPU is counted too
    assert result.database_cpu_s is not None and result.database_cpu_s > 0
    assert "database" in format_load([result])
    # Each target loads a database of its own, dropped after: the URL's database got
    # nothing (a later target does not run on the rows of the ones before it) …
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0
        # … and no load database is left behind
        left = conn.execute(
            "SELECT count(*) FROM pg_database WHERE datname LIKE 'hivemem_load_%'"
        ).fetchone()[0]
    assert left == 0


def test_load_on_sqlite_with_two_workers(tmp_path):
    result = run_load(
        LoadTarget("sqlite", default_file(str(tmp_path)), workers=2),
        clients=4,
        seconds=2,
        preload=50,
    )
    _check(result)
    _check_stages(result)
    # the workers are counted: the parent alone, which only waits, uses about a ms
    assert result.server_cpu_s is not None and result.server_cpu_s > 0.05
    assert "CPU cores used" in format_load([result])


def test_the_bare_stack_answers_the_same_load_and_is_the_ratios_base(tmp_path):
    bare = run_load(
        LoadTarget("bare FastAPI + FTS5", default_file(str(tmp_path)), kind="bare"),
        clients=3,
        seconds=2,
        preload=50,
    )
    _check(bare)
    assert bare.stages is None  # the bare stack times nothing: no stage line for it
    hive = run_load(
        LoadTarget("sqlite", default_file(str(tmp_path))), clients=3, seconds=2, preload=50
    )
    table = format_load([bare, hive])
    ratio = hive.requests_per_s / bare.requests_per_s
    assert f"req/s against the bare stack in this run: sqlite {ratio:.2f}x" in table
    # its check can fail too: a write it never saw is not found
    target = LoadTarget("bare", default_file(str(tmp_path)), kind="bare")
    BareStore(target.db)
    assert _found_after_stop(target, {"not-a-memory": ("load-none", "x")}) == 0


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_mcp_over_streamable_http_and_many_scopes(backend, tmp_path, request):
    pytest.importorskip("mcp")
    db = default_file(str(tmp_path)) if backend == "sqlite" else request.getfixturevalue("pg_url")
    mcp = run_load(LoadTarget("mcp", db, kind="mcp"), clients=2, seconds=2, preload=30)
    _check(mcp)
    _check_stages(mcp)
    assert mcp.stages.ms["auth"] == 0  # the MCP server is bound to its scope: no token
    db = default_file(str(tmp_path)) if backend == "sqlite" else db
    many = run_load(LoadTarget("scopes", db, scopes=40), clients=3, seconds=2, preload=200)
    _check(many)
    # the writes went to many scopes, each found again in its own scope (above)
    assert many.scopes == 40 and 1 < many.scopes_written <= 40


def test_a_baseline_build_runs_on_postgresql_too(monkeypatch):
    """``--baseline-src`` with a PostgreSQL URL: the baseline build is loaded on the
    server as well, beside this build's (with the workers asked), not on SQLite alone."""
    from hivemem.evaluation import bench_load

    ran: list[LoadTarget] = []
    monkeypatch.setattr(bench_load, "run_load", lambda target, **_: ran.append(target))
    bench_load.load_targets("postgresql://u@h/db", None, baseline_src="/old/src", workers=2)
    on_pg = [t for t in ran if t.db == "postgresql://u@h/db"]
    assert [(t.pythonpath, t.workers) for t in on_pg] == [("/old/src", 2), (None, 1), (None, 2)]
    assert [t.pythonpath for t in ran if t.db != "postgresql://u@h/db"] == ["/old/src", None, None]


def test_a_child_that_ended_meanwhile_leaves_the_cpu_figure_standing(monkeypatch):
    """A PostgreSQL backend whose connection closed between the listing of the
    postmaster's children and the reading of its ``/proc`` entry: skipped (its time
    reaches the parent's cutime once reaped), where before the whole figure was None."""
    import os

    from hivemem.evaluation import bench_load

    gone = 2**22 + 1  # above Linux's pid_max: no such process
    monkeypatch.setattr(bench_load, "_family", lambda pid: [pid, gone])
    assert bench_load._cpu_seconds(os.getpid(), reaped=True) is not None
    monkeypatch.setattr(bench_load, "_family", lambda pid: [gone])
    assert bench_load._cpu_seconds(gone) is None  # the process itself gone: no figure
