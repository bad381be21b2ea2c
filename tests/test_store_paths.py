"""What ``--db`` (and ``hivemem.open``) may do to the path it is given (issue #25, items
1 and 2), over every command of the CLI's table.

- A SQLite file of another program (a ``customers`` table) is refused with one line
  naming it, and left byte for byte as it was: found on main, ``hivemem --db
  other.sqlite list`` answered "no memories" after adding HiveMem's tables to it. A file
  that is not SQLite at all (text, random bytes) is refused too and left as it was.
- Reads never create a store: found on main, ``--db typo-name.db search deploy`` made a
  290 KB store and printed "no matches". A missing path is one line naming it and how to
  create a store, and nothing (no file, no folder) is made. A command that puts something
  in the store creates it, with its folders, and says so once on stderr.

``COMMANDS`` lists every command of ``hivemem``; a new command fails
``test_the_table_covers_every_command`` until it is placed here.
"""

from __future__ import annotations

import hashlib
import os
import random
import socket
from pathlib import Path

import pytest
import sqlean as sqlite3
from click.testing import CliRunner

import hivemem
from hivemem import NotAStore
from hivemem.frontends.cli import main
from hivemem.frontends.cli.reference import _walk
from hivemem.lifecycle.portability import export_jsonl

CREATES = "creates"  # puts something in the store: makes a missing one, and says so
NEEDS = "needs"  # reads (or changes what is there): a missing store is an error
NO_STORE = "no store"  # never opens --db

SERVE_HTTP = ["--host", "127.0.0.1", "--port", "{port}"]  # taken: stops after opening
SERVE_MCP = ["--transport", "http", "--host", "127.0.0.1", "--port", "{port}"]

# command -> (arguments; {file}: an export file, {folder}: a notes folder; what it does)
COMMANDS: dict[str, tuple[list[str], str]] = {
    "init": ([], CREATES),
    "add": (["deploy on Mondays"], CREATES),
    "search": (["deploy"], NEEDS),
    "context": (["deploy"], NEEDS),
    "list": ([], NEEDS),
    "show": (["deploy-rule"], NEEDS),
    "history": (["deploy-rule"], NEEDS),
    "forget": (["deploy-rule"], NEEDS),
    "correct": (["deploy-rule", "deploy on Tuesdays"], NEEDS),
    "confirm": (["deploy-rule"], NEEDS),
    "purge": (["deploy-rule", "--yes"], NEEDS),
    "export": (["{out}"], NEEDS),
    "import": (["{file}"], CREATES),
    "stats": ([], NEEDS),
    "doctor": ([], NEEDS),
    "settings": ([], NO_STORE),
    "reindex": ([], NEEDS),
    "copy": ([], NEEDS),  # SRC and DST: test_copy_refuses_a_foreign_file_on_either_side
    "bench": ([], NO_STORE),  # generated stores of its own (--db: only a postgresql:// URL)
    "eval all": ([], NO_STORE),  # the suites' own stores
    "eval decay": ([], NO_STORE),
    "eval locomo": ([], NO_STORE),
    "eval longmemeval": ([], NO_STORE),
    "eval paraphrase": ([], NO_STORE),
    "eval paraphrase-b": ([], NO_STORE),
    "eval silence": ([], NO_STORE),
    "eval entities": ([], NO_STORE),
    "eval context": ([], NO_STORE),
    "eval access": ([], NO_STORE),
    "maintain": (["decay"], NEEDS),
    "serve-http": (SERVE_HTTP, CREATES),
    "ui": (["--no-browser", "--port", "{port}"], NEEDS),  # a taken port: it cannot serve
    "token create": (["ci-bot", "--write", "team-a"], CREATES),
    "token list": ([], NEEDS),
    "token revoke": (["ci-bot"], NEEDS),
    "serve-mcp": (SERVE_MCP, CREATES),
    "index": (["{folder}"], CREATES),
    "vault delete": (["k"], NEEDS),
    "vault get": (["k"], NEEDS),
    "vault list": ([], NEEDS),
    "vault set": (["k", "v"], CREATES),
    "completion": (["bash"], NO_STORE),
    "mcp-config": ([], NO_STORE),
    # a local PostgreSQL in a folder of its own (--data), never --db: tests/test_postgres_local.py
    "postgres start": ([], NO_STORE),
    "postgres url": ([], NO_STORE),
    "postgres stop": ([], NO_STORE),
}
NOT_RUN = {
    "bench",
    "eval all",
    "eval decay",
    "eval locomo",
    "eval longmemeval",
    "eval paraphrase",
    "eval paraphrase-b",
    "eval silence",
    "eval entities",
    "eval context",
    "eval access",
    "postgres start",  # would start a server in the user's data folder
    "postgres url",
    "postgres stop",
}  # slow, or not about --db
OPENING = [name for name, (_, kind) in COMMANDS.items() if kind != NO_STORE and name != "copy"]


def leaf_commands() -> set[str]:
    import click

    return {
        " ".join(path[1:])
        for path, command in _walk(main, ["hivemem"])
        if not isinstance(command, click.Group)
    }


def test_the_table_covers_every_command():
    assert leaf_commands() == set(COMMANDS)


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def foreign_sqlite(path: Path) -> Path:
    conn = sqlite3.connect(path)
    with conn:
        conn.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        conn.executemany("INSERT INTO customers (name) VALUES (?)", [("Ada",), ("Lin",)])
    conn.close()
    return path


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """An export file for ``import``, a notes folder for ``index``, and a port already
    taken (a server that opened a store it should have refused stops, not serves)."""
    folder = tmp_path_factory.mktemp("inputs")
    with hivemem.open(folder / "source.db", embedder="none") as store:
        store.scope("default").save("deploy on Mondays", key="deploy-rule")
        with (folder / "export.jsonl").open("w", encoding="utf-8") as fp:
            export_jsonl(store, fp)
    notes = folder / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Deploys\n\nDeploy on Mondays.\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        yield {"file": str(folder / "export.jsonl"), "folder": str(notes), "port": port}


def run(db: Path | str, name: str, inputs: dict[str, str], out: Path) -> tuple[int, str]:
    args, _ = COMMANDS[name]
    filled = [a.format(out=out, **inputs) for a in args]
    result = CliRunner().invoke(main, ["--db", str(db), *name.split(), *filled])
    return result.exit_code, result.output


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


# ----------------------------------------------------------------------------- foreign files


@pytest.mark.parametrize("name", OPENING)
def test_a_foreign_sqlite_file_is_refused_and_left_unchanged(name, tmp_path, inputs):
    work = tmp_path / "work"
    work.mkdir()
    other = foreign_sqlite(work / "other.sqlite")
    before, files = sha(other), listing(work)
    code, output = run(other, name, inputs, work / "out.jsonl")
    assert code == 6, output
    assert error_lines(output) == [
        f"error: {other} is not a HiveMem store (it is another SQLite database, holding "
        "customers); it was left unchanged: give the path of a HiveMem store, or of a new file"
    ], output
    assert sha(other) == before and listing(work) == files


@pytest.mark.parametrize("name", sorted(n for n, (_, k) in COMMANDS.items() if k == NO_STORE))
def test_commands_without_a_store_never_touch_the_file(name, tmp_path, inputs):
    if name in NOT_RUN:
        pytest.skip("slow; opens stores of its own, never --db (a SQLite path)")
    other = foreign_sqlite(tmp_path / "other.sqlite")
    before = sha(other)
    code, output = run(other, name, inputs, tmp_path / "out.jsonl")
    assert code == 0, output
    assert sha(other) == before and listing(tmp_path) == ["other.sqlite"]


@pytest.mark.parametrize("side", ["SRC", "DST"])
def test_copy_refuses_a_foreign_file_on_either_side(side, tmp_path):
    other = foreign_sqlite(tmp_path / "other.sqlite")
    with hivemem.open(tmp_path / "store.db", embedder="none") as store:
        store.scope("default").save("deploy on Mondays", key="deploy-rule")
    before = sha(other)
    pair = [other, tmp_path / "store.db"] if side == "SRC" else [tmp_path / "store.db", other]
    result = CliRunner().invoke(main, ["copy", *map(str, pair)])
    assert result.exit_code == 6, result.output
    assert error_lines(result.output)[0].startswith(f"error: {other} is not a HiveMem store")
    assert sha(other) == before


def test_the_library_refuses_a_foreign_file(tmp_path):
    other = foreign_sqlite(tmp_path / "other.sqlite")
    before = sha(other)
    for create in (True, False):
        with pytest.raises(NotAStore, match="holding customers"):
            hivemem.open(other, create=create)
    assert sha(other) == before and listing(tmp_path) == ["other.sqlite"]


def test_a_file_in_wal_mode_of_another_program_is_left_unchanged(tmp_path):
    other = foreign_sqlite(tmp_path / "other.sqlite")
    conn = sqlite3.connect(other)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.close()
    before = sha(other)
    with pytest.raises(NotAStore):
        hivemem.open(other)
    assert sha(other) == before


def test_another_programs_migrations_table_is_not_mistaken_for_a_store(tmp_path):
    other = tmp_path / "django.sqlite"
    conn = sqlite3.connect(other)
    with conn:
        conn.execute("CREATE TABLE migrations (id INTEGER PRIMARY KEY, app TEXT, name TEXT)")
        conn.execute("INSERT INTO migrations (app, name) VALUES ('shop', '0001_initial')")
    conn.close()
    before = sha(other)
    with pytest.raises(NotAStore, match="holding migrations"):
        hivemem.open(other)
    assert sha(other) == before


@pytest.mark.parametrize("content", ["text", "random"])
@pytest.mark.parametrize("name", OPENING)
def test_a_file_that_is_not_sqlite_is_refused_and_left_unchanged(name, content, tmp_path, inputs):
    work = tmp_path / "work"
    work.mkdir()
    path = work / "notes.txt"
    if content == "text":
        path.write_text("Shopping list\n- milk\n- bread\n" * 50)
    else:
        path.write_bytes(random.Random(7).randbytes(20_000))
    before, files = sha(path), listing(work)
    code, output = run(path, name, inputs, work / "out.jsonl")
    # doctor reports it (exit 1); export tries a rescue, which finds nothing (exit 6)
    assert code in (1, 6), output
    assert str(path) in output and "Traceback" not in output, output
    assert sha(path) == before and listing(work) == files


def test_an_empty_file_and_a_first_open_cut_short_become_stores(tmp_path):
    empty = tmp_path / "empty.db"
    empty.touch()
    cut_short = tmp_path / "cut.db"  # the table of names made, no migration recorded yet
    conn = sqlite3.connect(cut_short)
    conn.execute(
        "CREATE TABLE migrations (seq INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
        "applied_at TEXT NOT NULL)"
    )
    conn.close()
    for path in (empty, cut_short):
        with hivemem.open(path, embedder="none") as store:
            assert store.created
            store.scope("default").save("kept")
        with hivemem.open(path, embedder="none", create=False) as store:
            assert not store.created and store.scope("default").list()[0].content == "kept"


# ----------------------------------------------------------------------------- missing paths


@pytest.mark.parametrize("name", [n for n in OPENING if COMMANDS[n][1] == NEEDS])
def test_a_read_never_creates_a_store(name, tmp_path, inputs):
    for db in (tmp_path / "typo-name.db", tmp_path / "no" / "such" / "m.db"):
        code, output = run(db, name, inputs, tmp_path / "out.jsonl")
        assert code == 6, output
        assert error_lines(output) == [
            f"error: no HiveMem store at {db} (nothing was created): check the path, or "
            "create one with `hivemem --db PATH init` (hivemem.open(path) in Python)"
        ], output
        assert listing(tmp_path) == [], name


@pytest.mark.parametrize("name", [n for n in OPENING if COMMANDS[n][1] == CREATES])
def test_a_write_creates_the_store_and_says_so_once(name, tmp_path, inputs):
    db = tmp_path / "new" / "folder" / "m.db"
    _, output = run(db, name, inputs, tmp_path / "out.jsonl")
    notice = f"created a new HiveMem store at {db} (and its folder {db.parent})"
    assert output.count("created a new HiveMem store") == 1 and notice in output, output
    assert db.exists()
    _, again = run(db, name, inputs, tmp_path / "out.jsonl")
    assert "created a new HiveMem store" not in again, again


def test_copy_reads_its_source_and_creates_its_target(tmp_path):
    result = CliRunner().invoke(main, ["copy", str(tmp_path / "typo.db"), str(tmp_path / "b")])
    assert result.exit_code == 2 and "no store at" in result.output
    assert listing(tmp_path) == []
    with hivemem.open(tmp_path / "a.db", embedder="none") as store:
        store.scope("default").save("deploy on Mondays")
    target = tmp_path / "copies" / "b.db"
    result = CliRunner().invoke(main, ["copy", str(tmp_path / "a.db"), str(target)])
    assert result.exit_code == 0, result.output
    assert f"created a new HiveMem store at {target}" in result.output


def test_a_read_on_an_empty_file_leaves_it_empty(tmp_path):
    empty = tmp_path / "typo.db"
    empty.touch()
    result = CliRunner().invoke(main, ["--db", str(empty), "search", "deploy"])
    assert result.exit_code == 6 and f"no HiveMem store at {empty}" in result.output
    assert empty.stat().st_size == 0 and listing(tmp_path) == ["typo.db"]


def test_a_new_store_whose_pages_are_still_in_its_log_is_read(tmp_path):
    path = tmp_path / "m.db"
    writer = hivemem.open(path, embedder="none")  # held open: nothing checkpointed yet
    writer.scope("default").save("deploy on Mondays")
    try:
        with hivemem.open(path, embedder="none", create=False) as reader:
            assert [m.content for m in reader.scope("default").list()] == ["deploy on Mondays"]
    finally:
        writer.close()


def test_the_library_creates_unless_told_not_to(tmp_path):
    path = tmp_path / "memory.db"
    with pytest.raises(NotAStore, match=f"no HiveMem store at {path}"):
        hivemem.open(path, create=False)
    assert not path.exists()
    with hivemem.open(path, embedder="none") as store:  # the README's first line
        assert store.created
    with hivemem.open(path, embedder="none") as store:
        assert not store.created


def test_export_of_a_missing_store_writes_no_file(tmp_path):
    out = tmp_path / "out.jsonl"
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "x.db"), "export", str(out)])
    assert result.exit_code == 6 and not out.exists()
    assert "exporting every memory" not in result.output  # no rescue of a file not there
    assert os.listdir(tmp_path) == []


def test_library_text_is_one_line(tmp_path):
    other = foreign_sqlite(tmp_path / "o.sqlite")
    with pytest.raises(NotAStore) as err:
        hivemem.open(other)
    assert "\n" not in str(err.value) and str(other) in str(err.value)


def test_a_path_that_cannot_be_looked_at_is_one_error_line(tmp_path):
    """A name too long for the file system (the CLI fuzz found it: a traceback)."""
    too_long = str(tmp_path / ("x" * 300))
    for args in (["stats"], ["add", "deploy on Mondays"], ["search", "deploy"]):
        result = CliRunner().invoke(main, ["--db", too_long, *args])
        assert result.exit_code == 6, (args, result.output)
        assert result.stderr.startswith("error: cannot open ") and "File name too long" in (
            result.stderr
        )
        assert "Traceback" not in result.output
    with pytest.raises(hivemem.StoreError, match="File name too long"):
        hivemem.open(too_long)
