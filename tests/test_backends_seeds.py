"""The behavioural tests of test_seeds.py (the seed designs' users, issue #14), run on
SQLite and on PostgreSQL alike: the module's tests and fixtures are imported and
``db_path`` (which its fixtures open) is a SQLite file or a fresh PostgreSQL database
(tests/pg.py)."""

from __future__ import annotations

import pytest

from test_seeds import *  # noqa: F403


@pytest.fixture
def db_path(any_location):
    return any_location
