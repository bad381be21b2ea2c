"""What ``--db postgresql://…`` (and ``hivemem.open(url)``) may do to the database it is
given: the rule of ``tests/test_store_paths.py`` on PostgreSQL (issue #25).

- Reads never create a store: found on main, ``hivemem --db postgresql://…/empty
  search deploy`` made HiveMem's schema (and enabled pgvector) in an empty database and
  printed "no matches". A read on a database with no HiveMem schema is one line naming
  it, exit 6, and the database is left as it was; a command that puts something in the
  store creates the schema and says so once on stderr.
- A database of another program (a ``customers`` table) is refused with one line naming
  it, and left as it was: found on main, every command added HiveMem's tables beside
  ``customers`` (and a table of the same name as one of HiveMem's failed the open
  half-way, with the tables before it made).

Every command of the CLI's table (``test_store_paths.COMMANDS``) is run on both.
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

import hivemem
from hivemem import NotAStore
from hivemem.frontends.cli import main
from hivemem.store.factory import redact_url
from test_store_paths import COMMANDS, CREATES, NEEDS, OPENING, error_lines, inputs  # noqa: F401


def state(url: str) -> tuple[list[tuple[str, str, str]], list[str]]:
    """What a database holds outside the system schemas: its relations (with their
    kind) and its extensions."""
    with psycopg.connect(url, autocommit=True) as conn:
        relations = conn.execute(
            "SELECT n.nspname, c.relname, c.relkind::text FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT IN "
            "('pg_catalog', 'information_schema', 'pg_toast') ORDER BY 1, 2"
        ).fetchall()
        extensions = [r[0] for r in conn.execute("SELECT extname FROM pg_extension ORDER BY 1")]
    return [tuple(r) for r in relations], extensions


def foreign(url: str) -> str:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE TABLE customers (id serial PRIMARY KEY, name text)")
        conn.execute("INSERT INTO customers (name) VALUES ('Ada'), ('Lin')")
    return url


def run(url: str, name: str, inputs: dict[str, str], out: Any) -> tuple[int, str]:  # noqa: F811
    args, _ = COMMANDS[name]
    filled = [a.format(out=out, **inputs) for a in args]
    result = CliRunner().invoke(main, ["--db", url, *name.split(), *filled])
    return result.exit_code, result.output


@pytest.fixture(scope="module")
def empty_url(pg_server: Any) -> Any:
    """A database with no schema at all, shared by the read commands (none may change it)."""
    name = pg_server.new_database(template="template0")
    yield pg_server.url(name)
    pg_server.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="module")
def foreign_url(pg_server: Any) -> Any:
    name = pg_server.new_database(template="template0")
    yield foreign(pg_server.url(name))
    pg_server.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def no_store(url: str) -> str:
    return (
        f"error: no HiveMem store at {redact_url(url)} (the database holds no HiveMem "
        "schema; nothing was created): check the URL, or create one with "
        "`hivemem --db URL init` (hivemem.open(url) in Python)"
    )


# ----------------------------------------------------------------------------- the library


def test_a_read_on_an_empty_database_creates_nothing(pg_fresh_url):
    before = state(pg_fresh_url)
    assert before == ([], ["plpgsql"])
    with pytest.raises(NotAStore, match="no HiveMem store at .*nothing was created"):
        hivemem.open(pg_fresh_url, create=False, embedder="none")
    assert state(pg_fresh_url) == before  # not even CREATE EXTENSION vector
    with hivemem.open(pg_fresh_url, embedder="none") as store:
        assert store.created
        store.scope("default").save("deploy on Mondays")
    with hivemem.open(pg_fresh_url, embedder="none") as store:
        assert not store.created
    with hivemem.open(pg_fresh_url, embedder="none", create=False) as store:
        assert not store.created
        assert [m.content for m in store.scope("default").list()] == ["deploy on Mondays"]


def test_the_library_refuses_a_foreign_database(pg_fresh_url):
    foreign(pg_fresh_url)
    before = state(pg_fresh_url)
    for create in (True, False):
        with pytest.raises(NotAStore) as err:
            hivemem.open(pg_fresh_url, create=create, embedder="none")
        assert str(err.value) == (
            f"{redact_url(pg_fresh_url)} is not a HiveMem store (it is another PostgreSQL "
            "database, holding customers, customers_id_seq); it was left unchanged: give "
            "the URL of a HiveMem store, or of an empty database"
        )
    assert state(pg_fresh_url) == before


def test_a_table_named_like_hivemems_is_refused_before_any_table_is_made(pg_fresh_url):
    """Found on main: a ``memories`` table of another program failed the first migration
    with a raw error, after the extension had been enabled."""
    with psycopg.connect(pg_fresh_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE memories (id int, body text)")
    before = state(pg_fresh_url)
    with pytest.raises(NotAStore, match="holding memories"):
        hivemem.open(pg_fresh_url, embedder="none")
    assert state(pg_fresh_url) == before


def test_another_programs_migrations_table_is_not_mistaken_for_a_store(pg_fresh_url):
    with psycopg.connect(pg_fresh_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE migrations (id serial PRIMARY KEY, app text, name text)")
        conn.execute("INSERT INTO migrations (app, name) VALUES ('shop', '0001_memories')")
    before = state(pg_fresh_url)
    with pytest.raises(NotAStore, match="holding migrations"):
        hivemem.open(pg_fresh_url, embedder="none")
    assert state(pg_fresh_url) == before


def test_an_extension_and_a_first_open_cut_short_still_make_a_store(pg_fresh_url):
    """pgvector enabled by an administrator (its objects are not the user's tables), and
    HiveMem's empty record of migrations (a first open stopped before its first one)."""
    with psycopg.connect(pg_fresh_url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION vector")
        conn.execute(
            "CREATE TABLE migrations (seq INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
            "applied_at TEXT NOT NULL)"
        )
    with pytest.raises(NotAStore, match="no HiveMem store"):
        hivemem.open(pg_fresh_url, embedder="none", create=False)
    with hivemem.open(pg_fresh_url, embedder="none") as store:
        assert store.created


# ----------------------------------------------------------------------------- the CLI


@pytest.mark.parametrize("name", [n for n in OPENING if COMMANDS[n][1] == NEEDS])
def test_a_read_never_creates_a_store(name, empty_url, inputs, tmp_path):  # noqa: F811
    before = state(empty_url)
    code, output = run(empty_url, name, inputs, tmp_path / "out.jsonl")
    assert code == 6, output
    assert error_lines(output) == [no_store(empty_url)], output
    assert state(empty_url) == before
    assert list(tmp_path.iterdir()) == []  # export wrote no file


@pytest.mark.parametrize("name", [n for n in OPENING if COMMANDS[n][1] == CREATES])
def test_a_write_creates_the_store_and_says_so_once(name, pg_fresh_url, inputs, tmp_path):  # noqa: F811
    _, output = run(pg_fresh_url, name, inputs, tmp_path / "out.jsonl")
    notice = f"created a new HiveMem store at {redact_url(pg_fresh_url)}\n"
    assert output.count("created a new HiveMem store") == 1 and notice in output, output
    assert ("public", "memories", "r") in state(pg_fresh_url)[0]
    _, again = run(pg_fresh_url, name, inputs, tmp_path / "out.jsonl")
    assert "created a new HiveMem store" not in again, again


@pytest.mark.parametrize("name", OPENING)
def test_a_foreign_database_is_refused_and_left_unchanged(name, foreign_url, inputs, tmp_path):  # noqa: F811
    before = state(foreign_url)
    code, output = run(foreign_url, name, inputs, tmp_path / "out.jsonl")
    assert code == 6, output
    assert error_lines(output) == [
        f"error: {redact_url(foreign_url)} is not a HiveMem store (it is another PostgreSQL "
        "database, holding customers, customers_id_seq); it was left unchanged: give the "
        "URL of a HiveMem store, or of an empty database"
    ], output
    assert state(foreign_url) == before


@pytest.mark.parametrize("side", ["SRC", "DST"])
def test_copy_reads_an_empty_source_and_refuses_a_foreign_side(side, pg_server, tmp_path):
    empty = pg_server.url(pg_server.new_database(template="template0"))
    other = foreign(pg_server.url(pg_server.new_database(template="template0")))
    with hivemem.open(tmp_path / "store.db", embedder="none") as store:
        store.scope("default").save("deploy on Mondays")
    before = state(empty), state(other)
    store_db = str(tmp_path / "store.db")
    if side == "SRC":
        result = CliRunner().invoke(main, ["copy", empty, str(tmp_path / "b.db")])
        assert result.exit_code == 6 and error_lines(result.output) == [no_store(empty)]
        assert not (tmp_path / "b.db").exists()
    pair = [other, store_db] if side == "SRC" else [store_db, other]
    result = CliRunner().invoke(main, ["copy", *pair])
    assert result.exit_code == 6, result.output
    assert error_lines(result.output)[0].startswith(f"error: {redact_url(other)} is not a")
    assert (state(empty), state(other)) == before
