"""API tokens: stored hashed, bound to scopes, revocable; and `hivemem token`."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

import hivemem
from hivemem.frontends.cli import main
from hivemem.store.tokens import hash_token


@pytest.fixture
def tokens(store):
    return store.tokens


def test_a_token_is_shown_once_and_stored_only_as_its_hash(store, tokens, db_path):
    info, secret = tokens.create("ci-bot", {"team-a": "write", "swarm": "read"}, store.clock())
    assert secret.startswith("hm_") and len(secret) >= 40
    assert info.name == "ci-bot" and info.scopes == {"team-a": "write", "swarm": "read"}
    assert info.active and info.last_used_at is None
    assert "token" not in json.dumps(info.to_dict()) and secret not in json.dumps(info.to_dict())
    stored = store._backend._read("SELECT * FROM api_tokens")
    store.close()
    if str(db_path).startswith("postgresql"):  # the rows, as the server holds them
        raw = repr(stored).encode()
    else:  # every byte of the file, its WAL and its journal
        raw = b"".join(p.read_bytes() for p in db_path.parent.iterdir() if p.is_file())
    assert secret.encode() not in raw
    assert hash_token(secret).encode() in raw
    with hivemem.open(db_path, embedder="hash") as again:
        assert again.tokens.verify(secret).id == info.id


def test_two_tokens_never_share_a_secret(store, tokens):
    secrets = {tokens.create("t", {"a": "read"}, store.clock())[1] for _ in range(20)}
    assert len(secrets) == 20


def test_verify_takes_only_the_exact_active_secret(store, tokens):
    info, secret = tokens.create("t", {"a": "read"}, store.clock())
    assert tokens.verify(secret).id == info.id
    for wrong in ("", "hm_", secret[:-1], secret + "x", secret.upper(), "Bearer " + secret, None):
        assert tokens.verify(wrong) is None, wrong
    tokens.revoke(info.id, store.clock())
    assert tokens.verify(secret) is None


def test_grants_write_implies_read_and_nothing_else(store, tokens):
    info, _ = tokens.create("t", {"a": "write", "b": "read"}, store.clock())
    assert info.can("a", "read") and info.can("a", "write")
    assert info.can("b", "read") and not info.can("b", "write")
    assert not info.can("c", "read") and not info.can("A", "read")
    revoked = tokens.revoke(info.id, store.clock())
    assert not revoked.can("a", "read")


@pytest.mark.parametrize(
    ("name", "scopes", "field"),
    [
        ("t", {}, "scopes"),
        ("t", {"a": "admin"}, "scopes"),
        ("t", {"  ": "read"}, "scopes"),
        ("t", {"a\x00": "read"}, "scopes"),
        ("t", ["a"], "scopes"),
        ("", {"a": "read"}, "name"),
        (None, {"a": "read"}, "name"),
    ],
)
def test_bad_tokens_are_refused_and_nothing_is_written(store, tokens, name, scopes, field):
    with pytest.raises(hivemem.InvalidInput) as err:
        tokens.create(name, scopes, store.clock())
    assert err.value.field == field
    assert tokens.list() == []


def test_revoke_by_id_or_unique_name_and_list(store, tokens):
    first, _ = tokens.create("bot", {"a": "read"}, store.clock())
    second, _ = tokens.create("other", {"b": "write"}, store.clock())
    assert [t.id for t in tokens.list()] == [first.id, second.id]
    revoked = tokens.revoke("bot", store.clock())
    assert revoked.id == first.id and revoked.revoked_at is not None
    again = tokens.revoke(first.id, store.clock())  # idempotent: the first time stays
    assert again.revoked_at == revoked.revoked_at
    assert [t.id for t in tokens.list(include_revoked=False)] == [second.id]
    with pytest.raises(hivemem.NotFound):
        tokens.revoke("bot", store.clock())  # no ACTIVE token of that name any more
    with pytest.raises(hivemem.NotFound):
        tokens.revoke("nope", store.clock())
    tokens.create("twin", {"a": "read"}, store.clock())
    tokens.create("twin", {"a": "read"}, store.clock())
    with pytest.raises(hivemem.InvalidInput, match="2 active tokens"):
        tokens.revoke("twin", store.clock())


def test_touch_records_the_last_use(store, tokens):
    info, _ = tokens.create("t", {"a": "read"}, store.clock())
    when = store.clock()
    tokens.touch(info.id, when)
    assert tokens.get(info.id).last_used_at == when


# ----------------------------------------------------------------------------- CLI


def run(db_path, *args):
    return CliRunner().invoke(main, ["--db", str(db_path), *args])


def test_cli_create_list_revoke(db_path):
    made = run(db_path, "token", "create", "ci", "--write", "team-a", "--read", "swarm", "--json")
    assert made.exit_code == 0, made.output
    record = json.loads(made.stdout)
    secret = record["token"]
    assert record["scopes"] == {"team-a": "write", "swarm": "read"}

    listed = run(db_path, "token", "list")
    assert listed.exit_code == 0 and "ci" in listed.output and "team-a:write" in listed.output
    assert secret not in listed.output
    listed_json = json.loads(run(db_path, "token", "list", "--json").stdout)
    assert [t["id"] for t in listed_json] == [record["id"]] and "token" not in listed_json[0]

    human = run(db_path, "token", "create", "ci2", "--read", "x")
    assert human.exit_code == 0 and "token: hm_" in human.output

    revoked = run(db_path, "token", "revoke", record["id"], "--json")
    assert revoked.exit_code == 0 and json.loads(revoked.stdout)["revoked_at"]
    active = json.loads(run(db_path, "token", "list", "--active", "--json").stdout)
    assert [t["name"] for t in active] == ["ci2"]
    with hivemem.open(db_path, embedder="hash") as store:
        assert store.tokens.verify(secret) is None


def test_cli_errors_are_one_line_and_an_exit_code(db_path):
    no_scope = run(db_path, "token", "create", "ci")
    assert no_scope.exit_code == 2 and "--read SCOPE" in no_scope.output
    run(db_path, "init")  # revoke on a missing store is exit 6: reads never create one
    missing = run(db_path, "token", "revoke", "nope")
    assert missing.exit_code == 3 and missing.output.startswith("error: ")
    blank = run(db_path, "token", "create", "ci", "--read", " ")
    assert blank.exit_code == 2 and "Traceback" not in blank.output


def test_token_commands_have_short_help_and_documented_options():
    from hivemem.frontends.cli.http import token

    for name, command in token.commands.items():
        assert command.help and not command.get_short_help_str(limit=60).endswith("..."), name
        for param in command.params:
            if isinstance(param, click.Option):
                assert param.help, (name, param.opts)
        assert CliRunner().invoke(main, ["token", name, "--help"]).exit_code == 0
