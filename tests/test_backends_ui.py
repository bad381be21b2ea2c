"""The behavioural tests of test_ui.py (the web inspector), run on SQLite and on
PostgreSQL alike: the module's tests and fixtures are imported and ``db_path`` (which its
fixtures open) is a SQLite file or a fresh PostgreSQL database (tests/pg.py)."""

from __future__ import annotations

import pytest

from test_ui import *  # noqa: F403


@pytest.fixture
def db_path(any_location):
    return any_location


_PLAN = "the test reads SQLite's statement trace and query plan (PostgreSQL: EXPLAIN tests)"
test_successors_are_found_by_the_supersedes_index_not_a_walk_of_the_scope = pytest.mark.pg_gap(
    _PLAN
)(test_successors_are_found_by_the_supersedes_index_not_a_walk_of_the_scope)  # noqa: F405
test_a_deep_page_streams_from_the_index = pytest.mark.pg_gap(_PLAN)(
    test_a_deep_page_streams_from_the_index  # noqa: F405
)
