"""The seats of test_seats.py on SQLite and on PostgreSQL alike."""

from __future__ import annotations

import pytest

from test_seats import *  # noqa: F403


@pytest.fixture
def db_path(any_location):
    return any_location
