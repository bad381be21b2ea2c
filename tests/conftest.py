"""Shared fixtures: real SQLite files in tmp dirs and a clock tests can move."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta

import pytest

import hivemem

# tests/pg.py: a real PostgreSQL, and fixtures over both backends; tests/repeats.py: the
# SQLite runs that the test_backends_* modules only repeat, run once
pytest_plugins = ["pg", "repeats"]


class FakeClock:
    """A settable UTC clock; ``advance(days=…)`` moves it forward."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.now += timedelta(microseconds=1)  # every call is a distinct instant
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "memory.db"


@pytest.fixture(autouse=True)
def hash_embedder_by_default(monkeypatch):
    """The CLI reads settings from the environment: tests run it with the deterministic
    hash embedder unless a test asks for another (the real model has tests of its own)."""
    monkeypatch.setenv("HIVEMEM_EMBEDDER", "hash")


@pytest.fixture
def store(db_path, clock):
    s = hivemem.open(db_path, clock=clock, embedder="hash")
    yield s
    s.close()


@pytest.fixture
def mem(store):
    return store.scope("team-a")


# The storage half of the reliability suite lives beside the other tests; the input half
# is tests/reliability/ (its conftest marks it).
RELIABILITY_FILES = {
    "test_kill9.py",
    "test_disk_full.py",
    "test_damaged_files.py",
    "test_secrets_hunt.py",
    "test_store_paths.py",  # a foreign file and a missing path, every command (issue #25)
    "test_postgres_store_paths.py",  # the same on PostgreSQL: no schema made by a read
}


def pytest_collection_modifyitems(config, items):
    """Every test of the reliability suite carries ``reliability`` (``make reliability``
    selects them with ``-m reliability``). Tests marked ``long`` are the suite's long forms:
    they run only with ``HIVEMEM_RELIABILITY_LONG=1`` (``make reliability``); ``make test``
    runs the fast forms beside them."""
    long_form = os.environ.get("HIVEMEM_RELIABILITY_LONG") == "1"
    skip = pytest.mark.skip(reason="long form of the reliability suite: run `make reliability`")
    for item in items:
        if item.path.name in RELIABILITY_FILES or item.get_closest_marker("long"):
            item.add_marker(pytest.mark.reliability)
        if item.get_closest_marker("long") and not long_form:
            item.add_marker(skip)
