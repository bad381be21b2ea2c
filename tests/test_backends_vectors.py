"""The behavioural tests of test_vectors.py, run on SQLite and on PostgreSQL alike: the
module's tests and fixtures are imported and ``db_path`` (which its fixtures open) is
a SQLite file or a fresh PostgreSQL database (tests/pg.py)."""

from __future__ import annotations

import pytest

from test_vectors import *  # noqa: F403


@pytest.fixture
def db_path(any_location):
    return any_location


@pytest.fixture(autouse=True)
def chunks_counted_on_either_backend(monkeypatch):
    """The module counts chunks through a SQLite connection of its own; on PostgreSQL
    the same count goes through a psycopg connection of its own."""
    import test_vectors

    sqlite_count = test_vectors.chunk_count

    def chunk_count(path):
        if isinstance(path, str) and path.startswith("postgresql://"):
            import psycopg

            with psycopg.connect(path) as conn:
                return conn.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
        return sqlite_count(path)

    monkeypatch.setattr(test_vectors, "chunk_count", chunk_count)


test_without_sqlite_vec_the_vector_lane_scans_exactly_instead_of_switching_off = pytest.mark.pg_gap(
    "sqlite-vec is SQLite's vector index: PostgreSQL has pgvector"
)(test_without_sqlite_vec_the_vector_lane_scans_exactly_instead_of_switching_off)  # noqa: F405
