"""The ``hivemem`` command: every command documented, every read command speaks JSON,
user errors are one line and an exit code, and the installed entry point works."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import hivemem
from hivemem import Settings
from hivemem.frontends.cli import main

READ_COMMANDS = ["search", "list", "show", "history", "stats", "doctor", "settings"]


@pytest.fixture
def run(db_path, monkeypatch):
    """Invoke the CLI on a tmp store; returns the Click result."""
    for name in list(os.environ):
        if name.startswith("HIVEMEM_"):
            monkeypatch.delenv(name)
    runner = CliRunner()

    def invoke(*args, input=None, env=None):
        return runner.invoke(main, ["--db", str(db_path), *args], input=input, env=env)

    return invoke


def _ok(result):
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def _error(result, code, *fragments):
    """A user error: exit ``code``, one ``error:`` line on stderr, no traceback."""
    assert result.exit_code == code, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: "), result.stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in lines[-1]
    return lines[-1]


def _leaves(command, path=()):
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from _leaves(sub, (*path, name))
    else:
        yield path, command


def test_global_options_are_taken_after_the_command_too(tmp_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("HIVEMEM_"):
            monkeypatch.delenv(name)
    for path, command in _leaves(main):
        opts = {opt for param in command.params for opt in getattr(param, "opts", ())}
        assert {"--db", "--scope", "--shared"} <= opts, " ".join(path)
    db = str(tmp_path / "m.db")
    runner = CliRunner()
    # The inspector's hint, as it prints it (home.html): the options after the command.
    _ok(runner.invoke(main, ["add", "Never deploy on Fridays", "--db", db, "--scope", "team-a"]))
    _ok(runner.invoke(main, ["--db", db, "--scope", "swarm", "add", "Shared wisdom"]))
    hits = _ok(runner.invoke(main, ["search", "deploy", "--json", "--scope", "team-a", "--db", db]))
    assert [h["memory"]["scope"] for h in json.loads(hits.stdout)] == ["team-a"]
    # An option after the command wins over the one before it; --shared replaces.
    both = runner.invoke(
        main,
        ["--db", db, "--scope", "nope", "list", "--json", "--scope", "team-a", "--shared", "swarm"],
    )
    assert sorted(m["scope"] for m in json.loads(_ok(both).stdout)) == ["swarm", "team-a"]
    # serve-mcp keeps its own --scope (the scope it serves), and a subgroup's commands
    # take them too.
    assert [p for p in main.commands["serve-mcp"].params if "--scope" in p.opts][0].help


def test_stats_of_an_empty_scope_says_where_the_memories_are(run):
    _ok(run("--scope", "team-a", "add", "Never deploy on Fridays"))
    result = _ok(run("stats"))
    assert result.stdout.startswith("scope: default\n")
    assert "scope 'default' is empty; the store has 1 other scope(s): team-a" in result.stderr


def test_every_command_and_option_has_help():
    ctx = click.Context(main)
    assert main.help
    for name, command in main.commands.items():
        assert command.help, f"{name} has no help text"
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, f"{name} {param.opts} has no help"
        result = CliRunner().invoke(main, [name, "--help"])
        assert result.exit_code == 0, name
        assert command.get_short_help_str().rstrip(".") in main.get_help(ctx)
        assert not command.get_short_help_str(limit=60).endswith("...")  # the first line is short
        assert f"Usage: main {name}" in result.output or f"Usage: hivemem {name}" in result.output
    expected = {"init", "add", "search", "list", "show", "history", "forget", "correct"}
    expected |= {"confirm", "export", "import", "stats", "doctor", "settings"}
    assert expected <= set(main.commands)


def test_every_read_command_prints_json(run):
    _ok(run("add", "Never deploy on Fridays", "--key", "deploy", "--type", "warning"))
    args = {
        "search": ["search", "deploy"],
        "list": ["list"],
        "show": ["show", "deploy"],
        "history": ["history", "deploy"],
        "stats": ["stats"],
        "doctor": ["doctor"],
        "settings": ["settings"],
    }
    assert sorted(args) == sorted(READ_COMMANDS)
    outputs = {}
    for name in READ_COMMANDS:
        assert any(p.name == "as_json" for p in main.commands[name].params), name
        outputs[name] = json.loads(_ok(run(*args[name], "--json")).stdout)
    assert outputs["search"][0]["memory"]["key"] == "deploy"
    assert outputs["search"][0]["score"] > 0 and "explain" in outputs["search"][0]
    assert outputs["list"][0]["type"] == "lesson"
    assert outputs["show"]["content"] == "Never deploy on Fridays"
    assert [m["status"] for m in outputs["history"]] == ["active"]
    assert outputs["stats"]["total"] == 1 and outputs["stats"]["scope"] == "default"
    assert outputs["doctor"]["ok"] is True and outputs["doctor"]["repair"] is None
    assert [s["name"] for s in outputs["settings"]] == [n for n, _, _ in Settings.fields_help()]


def test_write_and_read_workflow(run):
    init = _ok(run("init")).stdout
    assert "schema: 0001_memories" in init
    saved = json.loads(
        _ok(run("add", "Never deploy on Fridays", "--key", "deploy", "--json")).stdout
    )
    first = saved["id"]

    line = _error(run("add", "Deploy any day", "--key", "deploy"), 4, "already holds")
    assert "--reason" in line

    out = _ok(run("add", "Deploy Monday to Thursday", "--key", "deploy", "--reason", "policy"))
    assert f"supersedes {first} (policy)" in out.stdout
    _ok(run("add", "Deploy Monday–Thursday", "--key", "deploy", "--minor"))
    _ok(run("add", "-", "--tag", "ops", "--tag", "infra", input="from stdin\n"))

    found = _ok(run("search", "deploy", "--explain")).stdout.splitlines()
    assert float(found[0].split()[0]) > 0.5 and "Deploy Monday–Thursday" in found[0]
    assert "lanes: keyword(" in found[1] and "vector(" in found[1]
    assert any("[superseded]" in line for line in found)

    listed = _ok(run("list")).stdout
    assert "from stdin" in listed and "Never deploy" not in listed
    tagged = json.loads(_ok(run("list", "--tag", "infra", "--json")).stdout)
    assert [m["content"] for m in tagged] == ["from stdin"]

    history = _ok(run("history", "deploy")).stdout.splitlines()
    assert len(history) == 3 and "(policy)" in history[1] and history[2].count("→ now") == 1

    shown = _ok(run("show", "deploy")).stdout
    assert "supersede_kind    soft" in shown and shown.rstrip().endswith("Deploy Monday–Thursday")

    current = json.loads(_ok(run("show", "deploy", "--json")).stdout)["id"]
    corrected = json.loads(
        _ok(run("correct", current, "Deploy Mon–Thu", "--reason", "typo", "--json")).stdout
    )
    assert corrected["supersedes_id"] == current
    confirmed = json.loads(_ok(run("confirm", corrected["id"], "--json")).stdout)
    assert confirmed["decay_rate"] == 0.0

    assert "deleted" in _ok(run("forget", "deploy")).stdout
    assert "Deploy Mon–Thu" not in _ok(run("search", "deploy")).stdout
    assert json.loads(_ok(run("show", corrected["id"], "--json")).stdout)["status"] == "deleted"

    stats = _ok(run("stats")).stdout
    assert "memories: 5 (1 active, 1 deleted, 3 superseded)" in stats


def test_episodes_scopes_and_shared_scopes(run):
    _ok(run("--scope", "swarm", "add", "Shared wisdom", "--key", "w"))
    _ok(run("--scope", "agent-1", "add", "hi there", "--episode", "--session", "s1", "--role", "u"))
    episode = json.loads(_ok(run("--scope", "agent-1", "list", "--json")).stdout)[0]
    assert (episode["kind"], episode["type"], episode["session_id"]) == (
        "episode",
        "historical",
        "s1",
    )
    assert _ok(run("--scope", "agent-1", "list")).stdout.count("\n") == 1
    both = _ok(run("--scope", "agent-1", "--shared", "swarm", "list")).stdout
    assert "@swarm" in both and "hi there" in both
    env = {"HIVEMEM_SCOPE": "agent-1", "HIVEMEM_SHARED": "swarm"}
    stats = json.loads(_ok(run("stats", "--json", env=env)).stdout)
    assert stats["scope"] == "agent-1" and stats["shared"]["swarm"]["total"] == 1
    assert json.loads(_ok(run("stats", "--all", "--json")).stdout)["total"] == 2


def test_user_errors_are_one_line_with_the_right_exit_code(run, tmp_path):
    _ok(run("add", "a fact", "--key", "k"))
    _error(run("show", "nope"), 3, "no memory 'nope'")
    _error(run("forget", "nope"), 3)
    _error(run("add", "x", "--type", "bogus"), 2, "type: unknown type 'bogus'")
    _error(run("list", "--since", "last tuesday"), 2, "since:")
    _error(run("search", "x", "--status", "deleted"), 2, "never searchable")
    _error(run("search", "x", "--limit", "0"), 2, "limit")
    _error(run("settings", env={"HIVEMEM_MAX_TAGS": "many"}), 2, "HIVEMEM_MAX_TAGS")
    not_a_store = tmp_path / "notes.txt"
    not_a_store.write_text("just some text, not a database " * 100)
    result = CliRunner().invoke(main, ["--db", str(not_a_store), "list"])
    _error(result, 6, "cannot open")
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "no" / "such" / "dir.db"), "list"])
    _error(result, 6, "no HiveMem store at")
    usage = run("add", "x", "--episode")
    assert usage.exit_code == 2 and "--episode needs --session and --role" in usage.output


def test_init_creates_the_folder(tmp_path):
    db = tmp_path / "deep" / "er" / "memory.db"
    result = _ok(CliRunner().invoke(main, ["--db", str(db), "init"]))
    assert db.exists() and str(db) in result.stdout


def test_export_import_round_trip_through_files(run, db_path, tmp_path):
    _ok(run("add", "Never deploy on Fridays", "--key", "deploy"))
    _ok(run("add", "Deploy Mon–Thu", "--key", "deploy", "--reason", "changed"))
    _ok(run("--scope", "other", "add", "Other fact"))
    dump = tmp_path / "dump.jsonl"
    assert "exported 3 memories" in _ok(run("export", str(dump))).stderr
    assert not (tmp_path / "dump.jsonl.partial").exists()

    copy = tmp_path / "copy.db"
    result = _ok(CliRunner().invoke(main, ["--db", str(copy), "import", str(dump)]))
    assert "imported 3 memories, skipped 0" in result.stdout
    again = _ok(CliRunner().invoke(main, ["--db", str(copy), "import", str(dump), "--json"]))
    assert json.loads(again.stdout)["skipped_identical"] == 3
    with hivemem.open(db_path) as a, hivemem.open(copy) as b:
        assert [m.to_dict() for m in a.iter_memories()] == [m.to_dict() for m in b.iter_memories()]

    only = _ok(run("--scope", "other", "export", "--scope-only")).stdout.splitlines()
    assert json.loads(only[0])["count"] == 1 and "Other fact" in only[1]

    moved = tmp_path / "moved.db"
    _ok(CliRunner().invoke(main, ["--db", str(moved), "import", "--into-scope", "x", str(dump)]))
    listed = json.loads(
        _ok(CliRunner().invoke(main, ["--db", str(moved), "--scope", "x", "list", "--json"])).stdout
    )
    assert {m["scope"] for m in listed} == {"x"} and len(listed) == 2


def test_import_errors_name_the_line_and_import_nothing(run, tmp_path):
    _ok(run("add", "one"))
    _ok(run("add", "two"))
    lines = _ok(run("export")).stdout.splitlines()
    lines[2] = lines[2].replace('"kind": "fact"', '"kind": "rumour"')
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n")
    fresh = tmp_path / "fresh.db"
    result = CliRunner().invoke(main, ["--db", str(fresh), "import", str(bad)])
    _error(result, 2, "nothing imported: 1 invalid lines")
    assert "line 3: kind: unknown value 'rumour'" in result.stderr
    with hivemem.open(fresh) as store:
        assert list(store.iter_memories()) == []

    # Re-importing a store's own export into another scope of it: ids clash.
    good = tmp_path / "good.jsonl"
    good.write_text("\n".join(_ok(run("export")).stdout.splitlines()) + "\n")
    result = run("import", str(good), "--into-scope", "elsewhere")
    _error(result, 4, "nothing imported: 0 invalid lines, 2 conflicts")
    assert "line 2: id " in result.stderr
    assert _ok(run("import", "-", input=good.read_text())).stdout.startswith("imported 0")

    missing = run("import", str(tmp_path / "missing.jsonl"))
    assert missing.exit_code != 0 and "Traceback" not in missing.output


def test_settings_lists_every_setting_with_help(run):
    out = _ok(run("settings", env={"HIVEMEM_MAX_TAGS": "7"})).stdout
    for name, default, help_text in Settings.fields_help():
        assert f"{name} = {default!r}" in out and help_text in out
    assert "max_tags = 64  (now 7)" in out


def test_settings_show_what_the_models_profile_gives_a_setting_left_at_minus_one(run):
    # Found in review: seat_depth and seat_lead showed -1, not the 2 and 0.15 a search
    # of the default model uses (providers/calibration.py).
    out = _ok(run("settings")).stdout
    assert "seat_depth = -1  (the model's: 2, all-MiniLM-L6-v2-int8:384)" in out
    assert "seat_lead = -1.0  (the model's: 0.15, all-MiniLM-L6-v2-int8:384)" in out
    rows = {r["name"]: r for r in json.loads(_ok(run("settings", "--json")).stdout)}
    assert rows["vector_seats"]["model_value"] == 2
    assert rows["vector_seats"]["model"] == "all-MiniLM-L6-v2-int8:384"
    assert "model_value" not in rows["max_tags"]
    # Set by the user, the setting is its own; with no embedder, HiveMem's defaults.
    mine = _ok(run("settings", env={"HIVEMEM_SEAT_DEPTH": "5"})).stdout
    assert "seat_depth = -1  (now 5)\n" in mine
    bare = _ok(run("settings", env={"HIVEMEM_EMBEDDER": "none"})).stdout
    assert "vector_seats = -1  (the model's: 0, no embedder)" in bare


def test_installed_entry_point_runs(tmp_path):
    """One real process: the console script installed by pip runs the CLI."""
    script = Path(sys.executable).parent / "hivemem"
    assert script.exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    env["HIVEMEM_DB"] = str(tmp_path / "proc.db")

    def call(*args):
        return subprocess.run(
            [str(script), *args], env=env, capture_output=True, text=True, timeout=60
        )

    saved = call("add", "Never deploy on Fridays", "--key", "deploy")
    assert saved.returncode == 0, saved.stderr
    found = json.loads(call("search", "fridays", "--json").stdout)
    assert found[0]["memory"]["key"] == "deploy"
    missing = call("show", "nope")
    assert missing.returncode == 3
    assert missing.stderr == "error: no memory 'nope' visible from scope 'default'\n"
