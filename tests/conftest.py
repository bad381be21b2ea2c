"""Shared fixtures: real SQLite files in tmp dirs and a clock tests can move."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

import hivemem

pytest_plugins = ["pg"]  # tests/pg.py: a real PostgreSQL, and fixtures over both backends


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
