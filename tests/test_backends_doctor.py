"""The behavioural tests of test_doctor.py, run on SQLite and on PostgreSQL alike: the
module's tests and fixtures are imported and ``db_path`` (which its fixtures open) is
a SQLite file or a PostgreSQL database made for the test (tests/pg.py)."""

from __future__ import annotations

import pytest

from test_doctor import *  # noqa: F403


@pytest.fixture(params=["sqlite", "postgres"])
def db_path(request, tmp_path):
    """A SQLite file, or a PostgreSQL database of the test's own: these tests damage the
    schema (``DROP INDEX memories_active_key``), which emptying the session's shared test
    database does not undo; a later test there then wrote two active rows of one key."""
    if request.param == "sqlite":
        return tmp_path / "memory.db"
    return request.getfixturevalue("pg_fresh_url")


_FTS5 = "the test damages FTS5's own index (chunks_fts): SQLite's, PostgreSQL has none"
test_a_damaged_keyword_index_is_reported_and_export_import_rebuilds_it = pytest.mark.pg_gap(_FTS5)(
    test_a_damaged_keyword_index_is_reported_and_export_import_rebuilds_it  # noqa: F405
)
test_repair_rebuilds_a_damaged_keyword_index = pytest.mark.pg_gap(_FTS5)(
    test_repair_rebuilds_a_damaged_keyword_index  # noqa: F405
)
