"""The one retry policy (``hivemem.write.retry``): what it runs again, how often, and
what it lets through. The races it exists for are in test_backends_races.py."""

from __future__ import annotations

import pytest

from hivemem import Conflict, StoreError, TryAgain
from hivemem.write import retry


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    pauses: list[float] = []
    monkeypatch.setattr(retry.time, "sleep", pauses.append)
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
