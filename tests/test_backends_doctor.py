"""The behavioural tests of test_doctor.py, run on SQLite and on PostgreSQL alike: the
module's tests and fixtures are imported and ``db_path`` (which its fixtures open) is
a SQLite file or a fresh PostgreSQL database (tests/pg.py)."""

from __future__ import annotations

import pytest

from test_doctor import *  # noqa: F403


@pytest.fixture
def db_path(any_location):
    return any_location


_FTS5 = "the test damages FTS5's own index (chunks_fts): SQLite's, PostgreSQL has none"
test_a_damaged_keyword_index_is_reported_and_export_import_rebuilds_it = pytest.mark.pg_gap(_FTS5)(
    test_a_damaged_keyword_index_is_reported_and_export_import_rebuilds_it  # noqa: F405
)
test_repair_rebuilds_a_damaged_keyword_index = pytest.mark.pg_gap(_FTS5)(
    test_repair_rebuilds_a_damaged_keyword_index  # noqa: F405
)
