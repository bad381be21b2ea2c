"""The behavioural tests of test_doctor.py, run on SQLite and on PostgreSQL alike: the
module's tests and fixtures are imported and ``db_path`` (which its fixtures open) is
a SQLite file or a fresh PostgreSQL database (tests/pg.py)."""

from __future__ import annotations

import pytest

from test_doctor import *  # noqa: F403


@pytest.fixture
def db_path(any_location):
    return any_location


# these tests damage SQLite files on purpose and expect SQLite's checks (integrity,
# file size); PostgreSQL's own checks (server, pgvector, indexes) are held by
# tests/test_postgres_ops.py
pytestmark = pytest.mark.pg_gap("doctor: SQLite's checks and damaged files")
