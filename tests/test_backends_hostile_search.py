"""The behavioural tests of test_hostile_search.py, run on SQLite and on PostgreSQL alike: the
module's tests and fixtures are imported and ``db_path`` (which its fixtures open) is
a SQLite file or a fresh PostgreSQL database (tests/pg.py)."""

from __future__ import annotations

import pytest

from test_hostile_search import *  # noqa: F403


@pytest.fixture
def db_path(any_location):
    return any_location


_FTS = "FTS5 query syntax (fts_syntax=True)"
test_bad_fts_syntax_is_invalid_input = pytest.mark.pg_gap(_FTS, unless=("\\ud800", "\\udfff"))(
    test_bad_fts_syntax_is_invalid_input  # noqa: F405
)
test_good_fts_syntax_finds_memories = pytest.mark.pg_gap(_FTS, unless=('"deploy on Tuesday"',))(
    test_good_fts_syntax_finds_memories  # noqa: F405
)
test_hostile_queries_with_fts_syntax_raise_only_invalid_input = pytest.mark.pg_gap(_FTS)(
    test_hostile_queries_with_fts_syntax_raise_only_invalid_input  # noqa: F405
)
