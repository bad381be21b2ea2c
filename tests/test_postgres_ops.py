"""Operating a PostgreSQL store from the CLI: ``doctor`` checks the server, and a URL's
password appears in no output, log or error of doctor, copy or a failed serve-http."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

import hivemem
from hivemem.frontends.cli import main
from test_backends_postgres import password_user  # noqa: F401 - a fixture
from test_doctor import SERVER_NAMES

SECRET = "pw-Sekrit-42"
WRONG = "pw-Wrong-99"


@pytest.fixture(autouse=True)
def _hash_embedder(monkeypatch):
    monkeypatch.setenv("HIVEMEM_EMBEDDER", "hash")


def _cli(*args: str):
    return CliRunner().invoke(main, list(args))


def _run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """The real ``hivemem`` in a child process: its whole stdout and stderr, logs too."""
    return subprocess.run(
        [sys.executable, "-c", "from hivemem.frontends.cli import main; main()", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "HIVEMEM_EMBEDDER": "hash", "HIVEMEM_LOG_LEVEL": "debug"},
    )


def test_doctor_checks_the_server(pg_url):
    with hivemem.open(pg_url, embedder="hash") as store:
        store.scope("a").save("The heron nests by the lake", key="heron")
    done = _cli("--db", pg_url, "doctor", "--json")
    assert done.exit_code == 0, done.output
    checks = {c["name"]: c for c in json.loads(done.output)["checks"]}
    assert list(checks) == SERVER_NAMES
    assert all(c["ok"] for c in checks.values()), checks
    assert checks["server"]["detail"].startswith("PostgreSQL 1")
    assert checks["pgvector"]["detail"].startswith("pgvector 0.")
    # a scope this small is searched exactly: no HNSW index (one per big scope, issue #25)
    assert "gin" in checks["indexes"]["detail"] and "hnsw" not in checks["indexes"]["detail"]
    assert "1 memories" in checks["memories"]["detail"]


def test_doctor_finds_an_invalid_index_and_names_the_fix(pg_url, pg_server):
    hivemem.open(pg_url, embedder="none").close()
    flag = "UPDATE pg_index SET indisvalid = {} WHERE indexrelid = 'chunks_terms'::regclass"
    pg_server.execute_in("hivemem_test", flag.format("false"))
    try:
        done = _cli("--db", pg_url, "doctor")
        assert done.exit_code == 1
        assert "FAIL  indexes" in done.output and "chunks_terms" in done.output
        assert "REINDEX INDEX CONCURRENTLY chunks_terms" in done.output
    finally:
        pg_server.execute_in("hivemem_test", flag.format("true"))


def _no_secret(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text and WRONG not in text, text


def test_no_password_in_doctor_copy_or_serve_http(
    password_user,  # noqa: F811
    pg_url,
    pg_server,
    tmp_path,
    caplog,
):
    caplog.set_level(logging.DEBUG)
    good = password_user.format(SECRET).replace("/postgres?", "/hivemem_test?")
    bad = password_user.format(WRONG).replace("/postgres?", "/hivemem_test?")
    source = tmp_path / "memory.db"
    with hivemem.open(source, embedder="none") as store:
        store.scope("a").save("The heron nests by the lake")

    # the right password: doctor and copy work and print the URL without it
    hivemem.open(pg_url, embedder="hash").close()  # the owner makes the vector table
    pg_server.execute_in("hivemem_test", "GRANT ALL ON ALL TABLES IN SCHEMA public TO hm_user")
    doctor = _cli("--db", good, "doctor")
    assert doctor.exit_code == 0 and "hm_user:***@" in doctor.output, doctor.output
    copied = _run("copy", str(source), good)
    assert copied.returncode == 0, copied.stderr
    assert "copied 1 memories" in copied.stdout and "hm_user:***@" in copied.stdout
    _no_secret(doctor.output, copied.stdout, copied.stderr)

    # the wrong password: one line naming the fix, the exit code of a store error
    for args in (("--db", bad, "stats"), ("copy", str(source), bad), ("copy", bad, str(source))):
        failed = _run(*args)
        assert failed.returncode == 6, failed.stderr
        assert failed.stderr.count("\n") == 1 and "user or password is wrong" in failed.stderr
        _no_secret(failed.stdout, failed.stderr)
    doctor = _run("--db", bad, "doctor")
    assert doctor.returncode == 1 and "user or password is wrong" in doctor.stdout
    _no_secret(doctor.stdout, doctor.stderr)
    served = _run("--db", bad, "serve-http", "--port", "0")
    assert served.returncode == 6 and "user or password is wrong" in served.stderr
    assert served.stderr.count("\n") == 1, served.stderr
    _no_secret(served.stdout, served.stderr, caplog.text)


def test_unreachable_server_and_missing_extension_name_the_fix(
    password_user,  # noqa: F811
    pg_server,
    tmp_path,
):
    nowhere = f"postgresql://u:{SECRET}@/db?host={tmp_path}/nowhere&connect_timeout=2"
    for args in (("--db", nowhere, "stats"), ("--db", nowhere, "serve-http", "--port", "0")):
        failed = _run(*args)
        assert failed.returncode == 6, failed.stderr
        assert "no server answers there; start PostgreSQL or fix the host and port" in (
            failed.stderr
        )
        assert failed.stderr.count("\n") == 1
        _no_secret(failed.stdout, failed.stderr)
    doctor = _run("--db", nowhere, "doctor")
    assert doctor.returncode == 1 and "no server answers there" in doctor.stdout
    _no_secret(doctor.stdout, doctor.stderr)

    name = pg_server.new_database(template="template0")
    try:
        pg_server.execute(f"GRANT ALL ON DATABASE {name} TO hm_user")
        url = password_user.format(SECRET).replace("/postgres?", f"/{name}?")
        failed = _run("--db", url, "init")  # a read would not create: "no HiveMem store"
        assert failed.returncode == 6 and "CREATE EXTENSION vector" in failed.stderr
        assert failed.stderr.count("\n") == 1
        doctor = _run("--db", url, "doctor")  # nothing was made: no store to check
        assert doctor.returncode == 6 and "no HiveMem store at" in doctor.stderr
        _no_secret(failed.stdout, failed.stderr, doctor.stdout, doctor.stderr)
    finally:
        pg_server.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def test_a_user_without_ddl_rights_opens_a_store_whose_vector_table_exists(
    password_user,  # noqa: F811
    pg_url,
    pg_server,
):
    """A node's user may lack CREATE on the schema: before the owner made the vector
    table, opening with an embedder says so in one line; after, it opens."""
    url = password_user.format(SECRET).replace("/postgres?", "/hivemem_test?")
    with pytest.raises(hivemem.StoreError, match="GRANT CREATE ON SCHEMA") as info:
        hivemem.open(url, embedder="hash")
    assert "\n" not in str(info.value) and SECRET not in str(info.value)
    hivemem.open(pg_url, embedder="hash").close()
    pg_server.execute_in("hivemem_test", "GRANT ALL ON ALL TABLES IN SCHEMA public TO hm_user")
    with hivemem.open(url, embedder="hash") as store:
        saved = store.scope("a").save("The heron nests by the lake", wait=True)
        assert store.indexer.enabled
        assert store.scope("a").search("heron")[0].memory.id == saved.id
