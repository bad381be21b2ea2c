"""The ``resolve`` job's tests of test_resolve.py, run on SQLite and on PostgreSQL alike
(its verdicts and merges are shared SQL: ``hivemem.store.resolutions``)."""

from __future__ import annotations

import pytest

from test_resolve import *  # noqa: F403


@pytest.fixture
def db_path(any_location):
    return any_location
