"""Property: every CLI command, given hostile arguments and options, exits with a
documented code (0, or 1-6 for a library error, 2 for a usage error) and prints no
traceback: a failure is one ``error: ...`` line on stderr.

Commands are found by walking the Click group, so a new command is fuzzed without a
change here. Left out: the servers (``serve-http``, ``serve-mcp``, ``ui``, ``postgres
start``), ``bench`` and
``eval`` (long-running by design, tested in their own files) and the flags that never
return (``--watch``, ``--daemon``). Paths given to ``export``/``import``/``index`` land
in a temporary folder. Arguments hold what a shell can pass: no NUL, and lone surrogates
only in U+DC80..U+DCFF (bytes that are not UTF-8; Click itself cannot convert others).
"""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from hivemem.frontends.cli import main
from hivemem.frontends.cli.common import EXIT_CODES as DOCUMENTED

from .hostile import FUZZ, cli_text, tally

EXIT_CODES = {code for code, _ in DOCUMENTED}  # every documented exit code, 7 and 8 too
SKIPPED_COMMANDS = {"serve-http", "serve-mcp", "ui", "bench", "eval"}
# Starts a PostgreSQL that runs on after the command (tests/test_postgres_local.py):
# fuzzed, it would leave servers behind in hostile folders. ``url`` and ``stop`` are fuzzed.
SKIPPED_PATHS = {("postgres", "start")}
SKIPPED_FLAGS = {"watch", "daemon"}
PLAUSIBLE = ["deploy-window", "deploy", "team-a", "swarm", "api_token", "decay", "s1", "7d"]


def _commands(
    group: click.Group, path: tuple[str, ...] = ()
) -> dict[tuple[str, ...], click.Command]:
    found: dict[tuple[str, ...], click.Command] = {}
    for name, command in group.commands.items():
        if name in SKIPPED_COMMANDS:
            continue
        if isinstance(command, click.Group):
            found.update(_commands(command, (*path, name)))
        elif (*path, name) not in SKIPPED_PATHS:
            found[(*path, name)] = command
    return found


COMMANDS = _commands(main)


@pytest.fixture(scope="module")
def store_file(tmp_path_factory):
    """A store with a keyed fact, its old version, a session and a vault secret."""
    db = tmp_path_factory.mktemp("cli-fuzz") / "fuzz.db"
    runner = CliRunner()
    env = {"HIVEMEM_EMBEDDER": "hash", "HIVEMEM_SCOPE": "team-a"}
    for args in (
        ["add", "the deploy window is Monday", "--key", "deploy-window"],
        ["add", "the deploy window is Tuesday", "--key", "deploy-window", "--reason", "moved"],
        ["add", "Alice said hello", "--episode", "--session", "s1", "--role", "user"],
        ["vault", "set", "api_token", "tok-0123456789abcdef", "--secret"],
    ):
        result = runner.invoke(main, ["--db", str(db), *args], env=env)
        assert result.exit_code == 0, result.output
    return db


def _argv(command: click.Command, data: st.DataObject) -> list[str]:
    text = st.one_of(cli_text(), st.sampled_from(PLAUSIBLE), st.sampled_from(PLAUSIBLE))
    argv: list[str] = []
    for param in command.params:
        if isinstance(param, click.Argument):
            count = 1 if param.nargs == 1 else data.draw(st.integers(0, 2))
            argv += [data.draw(text, param.name) for _ in range(count)]
            continue
        assert isinstance(param, click.Option)
        if param.name in SKIPPED_FLAGS or not data.draw(st.booleans(), f"give {param.name}"):
            continue
        if param.is_flag:
            argv.append(param.opts[0])
        else:
            argv += [param.opts[0], data.draw(text, param.name)]
    return argv


@pytest.mark.parametrize("path", sorted(COMMANDS), ids=" ".join)
@FUZZ
@given(data=st.data())
def test_cli_command(store_file, tmp_path, monkeypatch, path, data):
    argv = ["--db", str(store_file)]
    if data.draw(st.booleans(), "hostile scope"):
        argv += ["--scope", data.draw(cli_text(), "scope")]
    argv += [*path, *_argv(COMMANDS[path], data)]
    monkeypatch.chdir(tmp_path)  # relative paths (export FILE, index DIR) land there
    result = CliRunner().invoke(main, argv, env={"HIVEMEM_EMBEDDER": "hash"})
    tally("cli", f"exit {result.exit_code}")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception  # the traceback a user would have seen
    assert result.exit_code in EXIT_CODES, (argv, result.output)
    assert "Traceback" not in result.output
    if result.exit_code != 0:
        assert "error" in result.output.lower() or "usage" in result.output.lower(), result.output
