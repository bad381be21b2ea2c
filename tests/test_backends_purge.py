"""The behavioural tests of test_purge.py, run on SQLite and on PostgreSQL alike (the
module's tests and fixtures are imported and ``db_path`` is a SQLite file or a fresh
PostgreSQL database, tests/pg.py), and PostgreSQL's own erase test: after a purge the
text is in no row of any table, nor in the files of the tables and their indexes."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

import hivemem
from test_purge import *  # noqa: F403
from test_purge import SECRET_WORDS, fill


@pytest.fixture
def db_path(any_location):
    return any_location


_BYTES = "the test reads sqlite-vec's bit vectors and runs PRAGMA integrity_check"
test_purge_all_leaves_no_byte_of_the_scope_and_keeps_others = pytest.mark.pg_gap(_BYTES)(
    test_purge_all_leaves_no_byte_of_the_scope_and_keeps_others  # noqa: F405
)


def _rows_holding(url: str, words) -> dict[str, list[str]]:
    """Per table of the schema, the words some row of it holds (as text)."""
    out: dict[str, list[str]] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        tables = [
            r[0]
            for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ]
        for table in tables:
            text = " ".join(
                r[0].lower()
                for r in conn.execute(f"SELECT t::text FROM {table} t")  # noqa: S608
            )
            held = [w for w in words if w in text]
            if held:
                out[table] = held
    return out


def _files_holding(url: str, words) -> dict[str, list[str]]:
    """Per relation (tables, their indexes and TOAST), the words its data files hold."""
    out: dict[str, list[str]] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")  # dirty pages reach the files
        home = Path(conn.execute("SELECT current_setting('data_directory')").fetchone()[0])
        rels = conn.execute(
            "SELECT c.relname, pg_relation_filepath(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname IN ('public', 'pg_toast') AND c.relkind IN ('r', 'i', 't') "
            "AND pg_relation_filepath(c.oid) IS NOT NULL"
        ).fetchall()
    for name, rel in rels:
        data = b"".join(p.read_bytes() for p in home.glob(f"{rel}*") if p.is_file()).lower()
        held = [w for w in words if w.encode() in data]
        if held:
            out[name] = held
    return out


def test_a_purge_erases_the_text_from_every_table_and_its_files(pg_url, clock):
    with hivemem.open(pg_url, clock=clock, embedder="hash") as store:
        alice, bob, _ = fill(store, clock)
        assert _rows_holding(pg_url, SECRET_WORDS)  # the words are there before
        assert "memories" in _files_holding(pg_url, SECRET_WORDS)
        report = alice.purge_all()
        assert report.vacuumed
        assert report.counts["memories"] >= 5 and report.counts["vault"] == 1
        assert alice.search("zorblaxian") == [] and alice.list() == []
        assert len(bob.search("quaxelberry")) == 2
    assert _rows_holding(pg_url, SECRET_WORDS) == {}
    assert _files_holding(pg_url, SECRET_WORDS) == {}
    assert "memories" in _rows_holding(pg_url, ["quaxelberry"])  # Bob's rows stay
