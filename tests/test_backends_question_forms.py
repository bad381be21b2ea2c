"""The searches of test_question_forms.py on SQLite and on PostgreSQL alike: there the
vector lane reads on a thread of its own, except when the statement form is on (its
share is known only after the keyword lane)."""

from __future__ import annotations

import pytest

from test_question_forms import *  # noqa: F403


@pytest.fixture
def db_path(any_location):
    return any_location
