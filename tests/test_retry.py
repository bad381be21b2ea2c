"""The one retry policy (``hivemem.write.retry``): what it runs again, how often, and
what it lets through. The races it exists for are in test_backends_races.py."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from hivemem import Conflict, StoreError, TryAgain
from hivemem.write import retry


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    pauses: list[float] = []
    monkeypatch.setattr(retry, "_sleep", pauses.append)
    return pauses


def failing(times: int, exc: Exception):
    calls: list[int] = []

    @retry.retried
    def unit() -> str:
        calls.append(1)
        if len(calls) <= times:
            raise exc
        return "done"

    return unit, calls


def test_a_passing_failure_runs_the_unit_again_with_growing_jittered_pauses(no_sleep):
    unit, calls = failing(3, TryAgain("deadlock", reason="deadlock"))
    assert unit() == "done" and len(calls) == 4
    assert len(no_sleep) == 3
    for n, pause in enumerate(no_sleep):
        assert 0 <= pause <= min(retry.CAP_S, retry.BASE_S * 3**n)


def test_after_the_last_run_the_caller_gets_try_again():
    unit, calls = failing(10, TryAgain("lost", reason="connection"))
    with pytest.raises(TryAgain) as caught:
        unit()
    assert len(calls) == retry.ATTEMPTS and caught.value.reason == "connection"
    assert isinstance(caught.value, StoreError) and caught.value.exit_code == 8


@pytest.mark.parametrize(
    "exc",
    [
        TryAgain("locked past busy_timeout", reason="busy"),  # SQLite already waited
        StoreError("damaged"),
        Conflict("key taken"),
        ValueError("a bug"),
    ],
)
def test_anything_else_is_not_run_again(exc):
    unit, calls = failing(1, exc)
    with pytest.raises(type(exc)):
        unit()
    assert len(calls) == 1


def test_only_the_outermost_unit_of_a_thread_runs_again():
    inner_calls: list[int] = []

    @retry.retried
    def inner() -> None:
        inner_calls.append(1)
        if len(inner_calls) == 1:
            raise TryAgain("deadlock", reason="deadlock")

    outer_calls: list[int] = []

    @retry.retried
    def outer() -> None:
        outer_calls.append(1)
        inner()

    outer()
    assert len(outer_calls) == 2 and len(inner_calls) == 2  # not 1 × 4 nested runs


def test_the_block_form_runs_a_batch_again_and_stops_after_success():
    runs: list[int] = []
    for attempt in retry.attempts():
        with attempt:
            runs.append(1)
            if len(runs) < 2:
                raise TryAgain("serialization", reason="serialization")
    assert len(runs) == 2


# ----------------------------------------------------------------- the units it wraps


def _once(monkeypatch, owner, name: str, reason: str = "deadlock") -> list[int]:
    """``owner.name`` raises ``TryAgain`` on its first call, then works as before."""
    real, calls = getattr(owner, name), []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise TryAgain("aborted as a deadlock victim; try again", reason=reason)
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, flaky)
    return calls


@pytest.fixture
def store(tmp_path):
    import hivemem

    s = hivemem.open(tmp_path / "memory.db", embedder="hash")
    yield s
    s.close()


def test_a_save_and_a_correction_are_run_again_whole(store, monkeypatch):
    mem = store.scope("a")
    calls = _once(monkeypatch, store._backend, "insert")
    saved = mem.save("The pump is blue", key="pump")
    assert len(calls) == 2 and [m.id for m in mem.history("pump")] == [saved.id]
    calls = _once(monkeypatch, store._backend, "set_status")
    fixed = mem.correct(saved.id, "The pump is red")
    assert [m.content for m in mem.history("pump")] == ["The pump is blue", "The pump is red"]
    assert mem.get("pump").id == fixed.id  # one chain, no second version from the retry


def test_a_purge_is_run_again_and_compacts_once(store, monkeypatch):
    mem = store.scope("a")
    gone = mem.save("Vexquarium notes")
    from hivemem.store.sqlite.purge import SQLitePurge  # made per use: patch the class

    calls = _once(monkeypatch, SQLitePurge, "erase")
    compactions: list[int] = []
    monkeypatch.setattr(SQLitePurge, "compact", lambda self, vacuum: compactions.append(1) or {})
    report = mem.purge(gone.id)
    assert len(calls) == 2 and report.memory_ids == (gone.id,)
    assert len(compactions) == 1  # after the commit, outside the retried unit
    assert store.purges.audit("a")[0]["memory_ids"] == [gone.id]  # audited once


def test_a_maintenance_job_is_run_again_from_where_it_stopped(store, monkeypatch):
    from hivemem import run_job
    from hivemem.lifecycle import maintenance

    store.scope("a").save("A fact", kind="fact")
    job = maintenance.get_job("decay")
    holder = SimpleNamespace(run=job.run)
    calls = _once(monkeypatch, holder, "run")
    monkeypatch.setitem(maintenance.JOBS, "decay", replace(job, run=holder.run))
    [result] = run_job(store, "decay", "a")
    assert result.status == "ok" and len(calls) == 2
