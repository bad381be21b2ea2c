"""The behavioural tests of test_purge.py, run on SQLite and on PostgreSQL alike (the
module's tests and fixtures are imported and ``db_path`` is a SQLite file or a fresh
PostgreSQL database, tests/pg.py), and PostgreSQL's own erase test: after a purge the
text is in no row of any table, nor in the files of the tables and their indexes."""

from __future__ import annotations

import pytest

import hivemem
from test_purge import *  # noqa: F403
from test_purge import SECRET_WORDS, fill, found


@pytest.fixture
def db_path(any_location):
    return any_location


_BYTES = "the test reads sqlite-vec's bit vectors and runs PRAGMA integrity_check"
test_purge_all_leaves_no_byte_of_the_scope_and_keeps_others = pytest.mark.pg_gap(_BYTES)(
    test_purge_all_leaves_no_byte_of_the_scope_and_keeps_others  # noqa: F405
)


def test_a_purge_erases_the_text_from_every_table_and_its_files(pg_url, clock):
    with hivemem.open(pg_url, clock=clock, embedder="hash") as store:
        alice, bob, _ = fill(store, clock)
        assert found(pg_url) == list(SECRET_WORDS)  # in the rows and the files before
        report = alice.purge_all()
        assert report.vacuumed
        assert report.counts["memories"] >= 5 and report.counts["vault"] == 1
        assert alice.search("zorblaxian") == [] and alice.list() == []
        assert len(bob.search("quaxelberry")) == 2
    assert found(pg_url) == []  # no row, no data file of a table, index or TOAST
    assert found(pg_url, ["quaxelberry"]) == ["quaxelberry"]  # Bob's rows stay
