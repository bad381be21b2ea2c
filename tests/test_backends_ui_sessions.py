"""The tests of test_ui_sessions.py (the inspector's sessions in the store), run on
SQLite and on PostgreSQL alike: two handles over one file, or over one PostgreSQL
database (tests/pg.py)."""

from __future__ import annotations

import pytest

from test_ui_sessions import *  # noqa: F403


@pytest.fixture
def db_path(any_location):
    return any_location
