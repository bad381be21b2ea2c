"""The vault: key/value state and secrets per scope, never indexed, and tests that try
to leak a secret through every output path (search hits and snippets, context, get /
list / history / entity, tool results, logs, exports, the CLI)."""

from __future__ import annotations

import io
import json
import logging
import os
import threading
import time

import pytest
import sqlean as sqlite3  # the SQLite library the store uses (tests/test_project_rules.py)
from click.testing import CliRunner

import hivemem
from hivemem import Conflict, InvalidInput, NotFound, Settings
from hivemem.frontends.cli import main
from hivemem.lifecycle.portability import export_jsonl
from hivemem.write.redact import REDACTED
from hivemem.write.vault import MASK

SECRET = "zq-9f8e7d6c5b4a-Mellon-Vault"  # no credential shape: only the vault knows it


def test_set_get_list_delete_round_trip_with_json_values(store):
    vault = store.vault("agent-1")
    vault.set("cursor", {"page": 3, "ids": [1, 2]})
    vault.set("flag", True)
    vault.set("name", "Ada")
    assert vault.get("cursor") == {"page": 3, "ids": [1, 2]}
    assert vault.get("missing", None) is None
    assert "flag" in vault and "nope" not in vault
    assert [e.key for e in vault.list()] == ["cursor", "flag", "name"]
    assert [e.key for e in vault.list(prefix="f")] == ["flag"]
    vault.set("name", "Grace")  # replace
    assert vault.get("name") == "Grace"
    assert vault.delete("flag").value is True
    with pytest.raises(NotFound):
        vault.get("flag")
    with pytest.raises(NotFound):
        vault.delete("flag")


def test_vault_is_per_scope_and_persists(db_path, clock):
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        store.vault("a").set("k", "from a")
        store.vault("b").set("k", "from b")
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        assert store.vault("a").get("k") == "from a"
        assert store.vault("b").get("k") == "from b"
        assert [e.key for e in store.vault("c").list()] == []


def test_bad_input_is_a_clear_error_and_changes_nothing(store):
    vault = store.vault("a")
    vault.set("k", "keep me")
    cases = [
        (lambda: vault.set("", "x"), "key"),
        (lambda: vault.set("k\n2", "x"), "key"),
        (lambda: vault.set("k", {1, 2}), "value"),
        (lambda: vault.set("k", float("nan")), "value"),
        (lambda: vault.set("k", "x" * 300_000), "value"),
        (lambda: vault.set("k", "abc", secret=True), "value"),
        (lambda: vault.set("k", 12345678, secret=True), "value"),
        (lambda: vault.set("k", "x", secret="yes"), "secret"),
        (lambda: store.vault(""), "scope"),
    ]
    for call, field in cases:
        with pytest.raises(InvalidInput) as err:
            call()
        assert err.value.field == field
    assert vault.get("k") == "keep me"


def test_a_secret_is_never_downgraded_by_accident(store):
    vault = store.vault("a")
    vault.set("pw", SECRET, secret=True)
    with pytest.raises(Conflict):
        vault.set("pw", "now public")
    assert vault.get("pw") == SECRET
    vault.set("pw", SECRET + "-rotated", secret=True)
    assert vault.get("pw") == SECRET + "-rotated"
    assert store.scrub(f"old {SECRET} new {SECRET}-rotated") == f"old {SECRET} new {REDACTED}"


def test_secret_values_are_masked_in_repr_and_listings(store):
    entry = store.vault("a").set("pw", SECRET, secret=True)
    assert SECRET not in repr(entry)
    assert entry.to_dict()["value"] == MASK
    assert entry.to_dict(reveal=True)["value"] == SECRET
    assert [e.to_dict()["value"] for e in store.vault("a").list()] == [MASK]


def test_vault_entries_are_never_indexed_or_searchable(store, db_path):
    mem = store.scope("a")
    store.vault("a").set("pw", SECRET, secret=True)
    store.vault("a").set("note", "plain machine state about kafka")
    store.flush()
    assert mem.search("kafka") == []
    assert mem.search(SECRET) == []
    assert mem.stats()["total"] == 0
    assert store._backend._read("SELECT COUNT(*) FROM chunks") == [(0,)]
    assert store._backend._read("SELECT COUNT(*) FROM memories") == [(0,)]
    assert "kafka" not in mem.context("kafka")


@pytest.fixture
def leaky(db_path, clock):
    """A store that lets a secret into memory content (credential_policy=allow) before
    the vault learns it is a secret: the worst case every output must still redact."""
    settings = Settings().replace(credential_policy="allow")
    store = hivemem.open(db_path, settings=settings, clock=clock, embedder="hash")
    mem = store.scope("a", shared=["team"])
    fact = mem.save(f"the deploy password is {SECRET} for prod", key="deploy", type="identity")
    mem.add_episode(f"user said the password {SECRET} to Melanie", "s1", "user")
    store.scope("team").save(f"team wiki mentions {SECRET} too")
    mem.correct(fact.id, f"the deploy password is {SECRET} for prod and staging")
    store.vault("other-scope").set("pw", SECRET, secret=True)
    store.flush()
    yield store, mem
    store.close()


def test_search_hits_and_snippets_never_show_a_secret(leaky):
    _, mem = leaky
    hits = mem.search("deploy password prod")
    assert hits
    dumped = json.dumps([h.to_dict() for h in hits])
    assert SECRET not in dumped
    assert REDACTED in dumped


def test_context_never_shows_a_secret(leaky):
    _, mem = leaky
    block = mem.context("what is the deploy password?")
    assert "deploy password" in block
    assert SECRET not in block


def test_get_list_history_entity_related_never_show_a_secret(leaky):
    store, mem = leaky
    mem.save(f"the prod deploy password {SECRET} rotates monthly")
    hivemem.run_job(store, "crossrefs", "a", raise_errors=True)
    related = mem.related(mem.get("deploy").id)
    assert related and all(SECRET not in r.memory.content for r in related)
    assert SECRET not in mem.get("deploy").content
    assert all(SECRET not in m.content for m in mem.list(limit=100))
    assert all(SECRET not in m.content for m in mem.history("deploy"))
    _, linked = mem.entity("Melanie")
    assert linked and all(SECRET not in m.content for m in linked)


def test_errors_never_show_a_secret(leaky):
    _, mem = leaky
    with pytest.raises(Conflict) as err:
        mem.save("a different deploy password", key="deploy")
    assert "deploy password" in str(err.value)
    assert SECRET not in str(err.value)
    assert SECRET not in err.value.current.content


def test_tool_results_never_show_a_secret(leaky):
    tools = pytest.importorskip("hivemem.tools")
    _, mem = leaky
    for name, args in [
        ("memory_search", {"query": "deploy password"}),
        ("memory_list", {}),
        ("memory_get", {"id": mem.get("deploy").id}),
    ]:
        result = tools.call(mem, name, args)
        assert SECRET not in json.dumps(result), name


def test_logs_never_show_a_secret(leaky, caplog):
    store, _ = leaky
    with caplog.at_level(logging.DEBUG, logger="hivemem"):
        logging.getLogger("hivemem.lifecycle.maintenance").warning("job failed on %r", SECRET)
    assert caplog.records and SECRET not in caplog.text


def test_exports_redact_secrets_unless_asked(leaky):
    store, _ = leaky
    out = io.StringIO()
    assert export_jsonl(store, out) == 4  # the correction superseded one: 4 rows
    assert SECRET not in out.getvalue()
    assert REDACTED in out.getvalue()
    full = io.StringIO()
    export_jsonl(store, full, include_secrets=True)
    assert full.getvalue().count(SECRET) == 5  # 4 memories and the vault entry itself


def test_new_content_with_a_known_secret_is_redacted_on_save(store):
    store.vault("x").set("pw", SECRET, secret=True)
    saved = store.scope("y").save(f"remember {SECRET}")  # another scope: still a secret
    assert saved.content == "remember [REDACTED:vault-secret]"


def test_a_batch_reads_the_vault_once_and_redacts_a_known_secret_in_any_row(store):
    store.vault("x").set("pw", SECRET, secret=True)
    asked: list[int] = []
    holds = store.scrubber.holds_secrets
    store.scrubber.holds_secrets = lambda: asked.append(1) or holds()
    turns = [{"content": f"turn {i}", "session_id": "s", "role": "user"} for i in range(5)]
    turns[3]["content"] = f"remember {SECRET}"
    saved = store.scope("y").add_episodes(turns)
    assert saved[3].content == "remember [REDACTED:vault-secret]"
    assert len(asked) == 1  # the first row's validation asked; the others used its values


def test_a_secret_set_by_another_process_is_redacted_at_once(db_path, clock):
    # "At once": from the first output more than the store's recheck window (5 ms) after
    # the other connection's commit; the sleeps step past that window.
    with hivemem.open(db_path, clock=clock, embedder="hash") as reader:
        assert reader.scrub(f"x {SECRET}") == f"x {SECRET}"
        with hivemem.open(db_path, clock=clock, embedder="hash") as writer:
            writer.vault("a").set("pw", SECRET, secret=True)
        time.sleep(0.02)
        assert reader.scrub(f"x {SECRET}") == f"x {REDACTED}"
        with hivemem.open(db_path, clock=clock, embedder="hash") as writer:
            writer.vault("a").delete("pw")
        time.sleep(0.02)
        assert reader.scrub(f"x {SECRET}") == f"x {SECRET}"


def test_own_writes_do_not_reload_the_secrets_and_others_still_are_seen(db_path, clock):
    """With the read pool every commit of this store moves the pool's counter; the
    writer's counter moves only for other connections, so the write path's outputs no
    longer read every secret again after each write. Another handle's secret is seen at
    once all the same, also while this store's writer is held by another thread (then
    the pool's counter answers). On PostgreSQL (test_backends_vault.py) the listener
    answers, and the first part holds there too."""
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        loads: list[int] = []
        secret_values = store.vault_rows.secret_values
        store.vault_rows.secret_values = lambda: loads.append(1) or secret_values()
        mem = store.scope("a")
        assert store.scrub(f"x {SECRET}") == f"x {SECRET}"
        before = len(loads)
        for i in range(3):
            mem.add_episode(f"turn {i}", "s1", "user")
            time.sleep(0.02)  # past the recheck window: each output asks SQLite
        assert len(loads) == before
        with hivemem.open(db_path, clock=clock, embedder="hash") as other:
            other.vault("a").set("pw", SECRET, secret=True)
        time.sleep(0.02)
        assert store.scrub(f"x {SECRET}") == f"x {REDACTED}"
        writer = getattr(store._backend, "_lock", None)
        if writer is None:
            return  # PostgreSQL: no writer connection to hold (its listener answers)
        held, release = threading.Event(), threading.Event()

        def hold_the_writer() -> None:
            with writer:
                held.set()
                release.wait(10)

        holder = threading.Thread(target=hold_the_writer)
        holder.start()
        try:
            assert held.wait(10)
            with hivemem.open(db_path, clock=clock, embedder="hash") as other:
                other.vault("a").set("pw2", "another-long-secret", secret=True)
            time.sleep(0.02)
            assert store.scrub("y another-long-secret") == f"y {REDACTED}"
        finally:
            release.set()
            holder.join()


def _pragmas(store, search) -> int | None:
    seen: list[str] = []
    seam = store.tracing(seen.append)
    if seam is None:  # PostgreSQL: no statement seam (its listener answers the vault)
        search()
        return None
    with seam:
        search()
    return sum(s == "PRAGMA data_version" for s in seen)


def test_a_search_checks_the_vault_with_its_own_views_counter(db_path, clock):
    """The output of a search is checked against the change counter its read view began
    under (``viewed_version``): while nothing is committed a search runs one ``PRAGMA
    data_version`` (its snapshot's own, ``PooledReads._settle``), not a second one on the
    writer for the vault. A secret
    set by another process before a search begins is redacted in its hits all the
    same, and a view's counter is never used for a later output: a secret set after a
    search is redacted in the next output past the recheck window."""
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        mem = store.scope("a")
        mem.save(f"the door code is {SECRET}")
        mem.search("door code")
        time.sleep(0.02)
        mem.search("door code")
        time.sleep(0.02)  # past the recheck window: each search's output asks again
        assert _pragmas(store, lambda: mem.search("door code")) in (1, None)
        with hivemem.open(db_path, clock=clock, embedder="hash") as other:
            other.vault("a").set("pw", SECRET, secret=True)
        time.sleep(0.02)
        hits = mem.search("door code")
        assert hits and all(SECRET not in h.memory.content for h in hits)
        assert REDACTED in hits[0].memory.content
        with hivemem.open(db_path, clock=clock, embedder="hash") as other:
            other.vault("a").delete("pw")
        time.sleep(0.02)
        assert SECRET in mem.search("door code")[0].memory.content
        mem.search("door code")  # its view's counter is taken by its own output only
        with hivemem.open(db_path, clock=clock, embedder="hash") as other:
            other.vault("a").set("pw", SECRET, secret=True)
        time.sleep(0.02)
        assert store.scrub(f"x {SECRET}") == f"x {REDACTED}"


def test_a_views_counter_is_taken_once_and_only_while_fresh(db_path, clock):
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        backend = store._backend
        if not hasattr(backend, "viewed_version"):
            pytest.skip("SQLite's read view only")
        with backend.search_view():
            pass
        assert backend.viewed_version(time.monotonic() - 60) is not None
        assert backend.viewed_version(time.monotonic() - 60) is None  # taken
        with backend.search_view():
            pass
        assert backend.viewed_version(time.monotonic() + 1) is None  # ended too long ago
        assert backend.viewed_version(time.monotonic() - 60) is None  # taken all the same
        with pytest.raises(RuntimeError), backend.search_view():
            raise RuntimeError("a failed search has no output")
        assert backend.viewed_version(time.monotonic() - 60) is None


# ----------------------------------------------------------------------------- CLI


@pytest.fixture
def cli(db_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("HIVEMEM_") and name != "HIVEMEM_EMBEDDER":
            monkeypatch.delenv(name)
    runner = CliRunner()

    def invoke(*args, input=None):
        return runner.invoke(main, ["--db", str(db_path), "--scope", "a", *args], input=input)

    return invoke


def test_cli_vault_commands(cli):
    result = cli("vault", "set", "pw", "--secret", input=f"{SECRET}\n")  # prompted, no echo
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output
    assert cli("vault", "set", "cursor", '{"page": 2}', "--value-json").exit_code == 0
    listed = cli("vault", "list")
    assert listed.exit_code == 0
    assert listed.stdout.splitlines() == ['cursor  {"page": 2}', f"pw  {MASK} (secret)"]
    assert SECRET not in cli("vault", "list", "--json").stdout
    assert cli("vault", "get", "pw").stdout == SECRET + "\n"
    assert json.loads(cli("vault", "get", "cursor", "--json").stdout)["value"] == {"page": 2}
    assert cli("vault", "delete", "cursor").exit_code == 0
    missing = cli("vault", "get", "cursor")
    assert missing.exit_code == 3
    assert "no vault key 'cursor'" in missing.stderr
    bad = cli("vault", "set", "x", "{not json", "--value-json")
    assert bad.exit_code == 2 and "value: not valid JSON" in bad.stderr
    short = cli("vault", "set", "x", "abc", "--secret")
    assert short.exit_code == 2 and "at least 6 characters" in short.stderr


def test_cli_export_redacts_unless_include_secrets(cli, db_path, tmp_path, monkeypatch):
    monkeypatch.setenv("HIVEMEM_CREDENTIAL_POLICY", "allow")
    assert cli("add", f"the password is {SECRET}").exit_code == 0
    monkeypatch.delenv("HIVEMEM_CREDENTIAL_POLICY")
    assert cli("vault", "set", "pw", SECRET, "--secret").exit_code == 0
    assert SECRET not in cli("search", "password").stdout
    redacted, full = tmp_path / "r.jsonl", tmp_path / "f.jsonl"
    assert cli("export", str(redacted)).exit_code == 0
    assert cli("export", str(full), "--include-secrets").exit_code == 0
    assert SECRET not in redacted.read_text() and REDACTED in redacted.read_text()
    assert SECRET in full.read_text()


def test_upgrade_from_0007_adds_the_vault_and_api_tokens_tables(tmp_path, clock):
    from hivemem.store.sqlite import migrations

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    migrations.apply(conn, "2026-01-01T00:00:00+00:00", upto="0007_maintenance")
    conn.close()
    with hivemem.open(path, clock=clock, embedder="hash") as store:
        versions = store.health.schema_version()
        after = versions[versions.index("0007_maintenance") + 1 :]
        assert after[:2] == ["0008_vault", "0009_api_tokens"]
        store.vault("a").set("pw", SECRET, secret=True)
        assert store.vault("a").get("pw") == SECRET
    with sqlite3.connect(path) as conn:
        columns = [(r[1], r[2], r[3], r[5]) for r in conn.execute("PRAGMA table_info(api_tokens)")]
    assert columns == [
        ("id", "TEXT", 0, 1),
        ("name", "TEXT", 1, 0),
        ("token_hash", "TEXT", 1, 0),
        ("scopes", "TEXT", 1, 0),
        ("created_at", "TEXT", 1, 0),
        ("revoked_at", "TEXT", 0, 0),
        ("last_used_at", "TEXT", 0, 0),
    ]
