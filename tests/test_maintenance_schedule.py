"""The scheduler (cron expressions, due jobs, the daemon loop) and ``hivemem maintain``."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime

import pytest
from click.testing import CliRunner

import hivemem
from conftest import FakeClock
from hivemem import InvalidInput, Settings
from hivemem.frontends.cli import main
from hivemem.lifecycle.maintenance import run_log, scheduler

WEDNESDAY = datetime(2026, 1, 7, 3, 30, tzinfo=UTC)


@pytest.fixture
def wednesday():
    return FakeClock(WEDNESDAY)


def test_schedule_merges_the_setting_over_the_defaults():
    plan = scheduler.schedule(Settings(maintenance_schedule={"decay": "15 6 * * *", "enrich": ""}))
    assert plan["decay"] == "15 6 * * *" and "enrich" not in plan
    assert plan["consolidate"] == "0 3 * * *" and plan["reflect"] == "0 3 * * 0"
    with pytest.raises(InvalidInput, match="not a cron expression"):
        scheduler.schedule(Settings(maintenance_schedule={"decay": "every day"}))
    with pytest.raises(InvalidInput, match="valid jobs"):
        scheduler.schedule(Settings(maintenance_schedule={"vacuum": "0 1 * * *"}))


def test_due_jobs_follow_their_cron_expressions(db_path, wednesday):
    with hivemem.open(db_path, clock=wednesday, embedder="none") as store:
        store.scope("team-a").save("Ana leads the platform team")
        assert scheduler.due(store) == scheduler.job_names()  # never run: catch up
        results = scheduler.run_due(store)
        assert {r.job for r in results} == set(scheduler.job_names())
        assert all(r.scope == "team-a" for r in results)
        assert scheduler.due(store) == []
        wednesday.advance(hours=24, minutes=31)  # Thursday 04:01
        assert scheduler.due(store) == [
            "expire",
            "consolidate",
            "enrich",
            "resolve",
            "categorize",
            "crossrefs",
            "decay",
        ]  # not reflect and summarize: they run on Sundays
        wednesday.advance(days=3)  # Sunday 04:01
        assert {"reflect", "summarize"} - set(scheduler.due(store)) == {"summarize"}
        assert run_log(store, "decay")[0].trigger == "schedule"


def test_the_daemon_runs_due_jobs_until_stopped(db_path, wednesday):
    with hivemem.open(db_path, clock=wednesday, embedder="none") as store:
        store.scope("team-a").save("Ana leads the platform team")
        stop = threading.Event()
        seen = []

        def on_results(results):
            seen.extend(results)
            stop.set()

        scheduler.daemon(store, stop, on_results)
        assert {r.job for r in seen} == set(scheduler.job_names())


# ----------------------------------------------------------------------------- CLI


@pytest.fixture
def run(db_path, monkeypatch):
    def invoke(*args, env=None):
        return CliRunner().invoke(main, ["--db", str(db_path), *args], env=env)

    return invoke


def test_maintain_runs_one_job_or_all_and_shows_the_log(run, db_path):
    with hivemem.open(db_path, embedder="none") as store:
        mem = store.scope("default")
        mem.add_episode("I moved to Lisbon in March with my family", session_id="s1", role="user")
        mem.consolidate(session_id="s1")
    result = run("maintain", "decay")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("decay ") and "checked=1" in result.output
    result = run("maintain", "--json")
    assert result.exit_code == 0, result.output
    runs = json.loads(result.output)
    assert [r["job"] for r in runs] == scheduler.job_names()
    assert {r["status"] for r in runs} <= {"ok", "skipped"}
    log = run("maintain", "--log", "--json", "--limit", "3")
    assert [r["job"] for r in json.loads(log.output)] == ["summarize", "reflect", "decay"]
    text = run("maintain", "--log", "reflect")
    assert "skipped" in text.output and "a reflection needs 3" in text.output


def test_maintain_errors_are_one_line(run):
    run("init")  # on a missing store every maintain is exit 6 (reads never create one)
    result = run("maintain", "defrag")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines()[-1].startswith("error: job: unknown job 'defrag'")
    assert "Traceback" not in result.output
    result = run("maintain", "--due", env={"HIVEMEM_MAINTENANCE_SCHEDULE": '{"decay": "soon"}'})
    assert result.exit_code == 2 and "not a cron expression" in result.stderr
    result = run("maintain", env={"HIVEMEM_LLM": "openai"})
    assert result.exit_code == 2 and "llm_model" in result.stderr


def test_maintain_due_uses_the_schedule(run, db_path):
    with hivemem.open(db_path, embedder="none") as store:
        store.scope("default").save("Ana leads the platform team")
    first = run("maintain", "--due", "--json")
    assert first.exit_code == 0, first.output
    assert {r["job"] for r in json.loads(first.output)} == set(scheduler.job_names())
    second = run("maintain", "--due", "--json")
    assert json.loads(second.output) == []


@pytest.mark.parametrize("limit", ["99999999999999999999999", "0", "-5"])
def test_the_run_log_limit_is_checked(run, limit):
    """Found by the long fuzz (issue #25): ``maintain --log --limit 10**23`` was an
    OverflowError traceback; 0 and -5 listed every run."""
    run("init")
    result = run("maintain", "--log", "--limit", limit)
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.strip().splitlines()[-1].startswith("error: limit:")


def test_the_run_log_of_a_scope_that_is_not_text_is_invalid_input(store):
    """Found by the long fuzz (issue #25): ``--scope $'\\x80' maintain --log`` (a byte that
    is not UTF-8) was a UnicodeEncodeError from the driver."""
    with pytest.raises(hivemem.InvalidInput) as err:
        run_log(store, "decay", "\udc80")
    assert err.value.field == "scope"
