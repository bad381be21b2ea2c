"""The tests of test_context_sections.py (issue #22: every section of the block earns its
place), run on SQLite and on PostgreSQL alike."""

from __future__ import annotations

import pytest

from test_context_sections import *  # noqa: F403


@pytest.fixture
def db_path(any_location):
    return any_location
