"""The CLI as a new user meets it (issue 12, items 8-10): one error format with
documented exit codes, the same rules as the other front ends, keys wherever ids are
taken, whole content on request, colour that obeys NO_COLOR, --version, completion, and
the MCP client config of this install."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

import hivemem
from hivemem.frontends.cli import main
from hivemem.frontends.cli.common import EXIT_CODES


@pytest.fixture
def run(db_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("HIVEMEM_") or name == "NO_COLOR":
            monkeypatch.delenv(name)
    monkeypatch.setenv("HIVEMEM_EMBEDDER", "hash")

    def invoke(*args, db=db_path, input=None, env=None, color=False):
        return CliRunner().invoke(
            main, ["--db", str(db), *args], input=input, env=env, color=color, prog_name="hivemem"
        )

    return invoke


def _one_error_line(result, code):
    assert result.exit_code == code, (result.output, result.exception)
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Usage:" not in result.output and "Error:" not in result.output
    return lines[0]


def test_empty_query_is_an_error_as_over_http(run):
    for query in ("", "   "):
        line = _one_error_line(run("search", query), 2)
        assert "query" in line


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["--bogus"], "No such option '--bogus' (see 'hivemem --help')"),
        (["add"], "Missing argument 'CONTENT' (see 'hivemem add --help')"),
        (["search", "x", "--limit", "many"], "'many' is not a valid integer"),
        (["nonsense"], "No such command 'nonsense'"),
        (["token", "create"], "(see 'hivemem token create --help')"),
    ],
)
def test_usage_errors_are_one_error_line_with_exit_2(run, args, fragment):
    assert fragment in _one_error_line(run(*args), 2)


def test_file_errors_are_one_error_line_with_exit_1(run, tmp_path):
    line = _one_error_line(run("import", str(tmp_path / "missing.jsonl")), 1)
    assert "missing.jsonl" in line


def test_invalid_text_is_named_in_plain_words(run):
    run("add", "a fact", "--key", "k")
    line = _one_error_line(run("show", "bad\udcffkey"), 2)
    assert "contains an invalid character" in line


def test_every_exit_code_is_documented_in_help_and_docs(run):
    help_text = run("--help").output
    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    for code, _meaning in EXIT_CODES:
        assert f"\n    {code}  " in help_text, code
        assert f"\n    {code}  " in page, code
    assert {code for code, _ in EXIT_CODES} >= {0, 1, 2, 3, 4, 5, 6}
    exit_codes = {
        value.exit_code
        for value in vars(hivemem.errors).values()
        if isinstance(value, type) and issubclass(value, hivemem.HiveMemError)
    }
    assert exit_codes <= {code for code, _ in EXIT_CODES}


def test_a_file_locked_past_the_busy_timeout_exits_8_try_again(run, db_path, monkeypatch):
    """SQLite's "database is locked" after ``busy_timeout_ms`` is ``TryAgain`` (reason
    ``busy``): exit status 8, nothing written, and no second wait of the library's own
    (the backend already waited)."""
    import sqlean as sqlite3

    assert run("add", "first").exit_code == 0
    holder = sqlite3.connect(str(db_path))
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the file
    try:
        monkeypatch.setenv("HIVEMEM_BUSY_TIMEOUT_MS", "200")
        started = time.monotonic()
        result = run("add", "second")
        assert result.exit_code == 8, result.output
        assert "locked" in result.output and "try again" in result.output
        assert time.monotonic() - started < 8
    finally:
        holder.rollback()
        holder.close()
    assert "second" not in run("list").output


def test_correct_and_confirm_take_a_key_like_show_and_forget(run):
    assert run("add", "Deploy before noon", "--key", "deploy").exit_code == 0
    corrected = run("correct", "deploy", "Deploy before 15:00", "--json")
    assert corrected.exit_code == 0, corrected.output
    assert json.loads(corrected.stdout)["content"] == "Deploy before 15:00"
    confirmed = run("confirm", "deploy", "--json")
    assert confirmed.exit_code == 0, confirmed.output
    record = json.loads(confirmed.stdout)
    assert record["content"] == "Deploy before 15:00" and record["confidence"] == 1.0
    assert len(json.loads(run("history", "deploy", "--json").stdout)) == 2
    _one_error_line(run("confirm", "no-such-key"), 3)


def test_add_creates_a_missing_folder_as_init_does(run, tmp_path):
    db = tmp_path / "new" / "deeper" / "memory.db"
    result = run("add", "first memory", db=db)
    assert result.exit_code == 0, result.output
    assert db.exists()


def test_full_shows_whole_content_in_list_history_and_search(run):
    long = "Release checklist: " + " ".join(f"step{i}" for i in range(80)) + " ENDMARK"
    assert run("add", long, "--key", "release").exit_code == 0
    for args in (["list"], ["history", "release"], ["search", "release checklist"]):
        short = run(*args)
        assert short.exit_code == 0 and "ENDMARK" not in short.stdout, args
        full = run(*args, "--full")
        assert full.exit_code == 0 and "ENDMARK" in full.stdout, args
    multi = run("add", "line one\nline two", "--key", "multi")
    assert multi.exit_code == 0
    assert "line one\n    line two" in run("show", "multi").stdout + run("list", "--full").stdout


def test_index_watch_without_the_extra_fails_before_saying_it_watches(run, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "watchfiles", None)
    (tmp_path / "notes").mkdir()
    result = run("index", str(tmp_path / "notes"), "--watch")
    line = _one_error_line(result, 5)
    assert "pip install 'hivemem[watch]'" in line
    assert "Ctrl-C to stop" not in result.output


def test_version(run):
    result = run("--version")
    assert result.exit_code == 0 and hivemem.__version__ in result.stdout


def test_completion_scripts_and_the_completion_protocol(run):
    for shell in ("bash", "zsh", "fish"):
        result = run("completion", shell)
        assert result.exit_code == 0 and "_HIVEMEM_COMPLETE" in result.stdout, shell
    env = {"_HIVEMEM_COMPLETE": "bash_complete", "COMP_WORDS": "hivemem sea", "COMP_CWORD": "1"}
    completed = CliRunner().invoke(main, [], env=env, prog_name="hivemem")
    assert "plain,search" in completed.output.splitlines()
    page = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    assert "hivemem completion bash" in page


def test_no_color_turns_colour_off(run):
    run("init")  # a read of a missing store is exit 6; here: a missing memory, exit 3
    coloured = run("show", "missing", color=True)
    assert "\x1b[" in coloured.stderr
    plain = run("show", "missing", color=True, env={"NO_COLOR": "1"})
    assert plain.exit_code == 3 and "\x1b[" not in plain.stderr
    assert plain.stderr.startswith("error: ")


def test_mcp_config_prints_this_installs_absolute_command(run, tmp_path):
    db = tmp_path / "team.db"
    result = CliRunner().invoke(
        main, ["--db", str(db), "--scope", "agent-1", "--shared", "team", "mcp-config"]
    )
    assert result.exit_code == 0, result.output
    server = json.loads(result.stdout)["mcpServers"]["memory"]
    command = Path(server["command"])
    assert command.is_absolute() and command.exists()
    assert command.parent == Path(os.path.abspath(sys.executable)).parent
    assert server["args"] == [
        "--db",
        str(db),
        "serve-mcp",
        "--scope",
        "agent-1",
        "--shared",
        "team",
    ]


def _json_commands():
    from hivemem.frontends.cli.reference import _walk

    return [
        " ".join(path)
        for path, command in _walk(main, ["hivemem"])
        if any(getattr(p, "name", None) == "as_json" for p in command.params)
    ]


def test_every_json_output_is_documented_with_its_shape(run):
    page = (Path(__file__).resolve().parent.parent / "docs" / "json.md").read_text()
    headings = [line for line in page.splitlines() if line.startswith("### ")]
    for name in _json_commands():
        assert any(f"`{name}`" in h for h in headings), f"{name} --json is not in docs/json.md"
    assert run("add", "Deploy before noon", "--key", "deploy").exit_code == 0
    memory = json.loads(run("show", "deploy", "--json").stdout)
    hit = json.loads(run("search", "deploy noon", "--json").stdout)[0]
    for record, keys in (
        ("Memory", memory),
        ("Hit", {k: v for k, v in hit.items()}),
        ("Hit", hit["explain"]),
    ):
        section = page.split(f"### {record}\n", 1)[1].split("\n### ", 1)[0]
        for key in keys:
            assert f"| `{key}` |" in section, f"{record}.{key} is not documented"
    assert "docs/json.md" in run("--help").output


def test_a_bare_group_shows_its_help_not_an_error(run):
    for args in ([], ["token"], ["vault"]):
        result = CliRunner().invoke(main, args, prog_name="hivemem")
        assert result.output.startswith("Usage: hivemem"), args
        assert not result.stderr.startswith("error:") and "Commands:\n" in result.output
