"""Each hostile input issue #11 found on main, as a test: a clear ``HiveMemError`` naming
the field (CLI: a one-line error and its exit code; HTTP: 422 in the one error shape),
never a driver error, a traceback or a 500. The fuzzing of every surface is in
``test_fuzz_*.py``; these pin the cases that were seen to fail."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import httpx
import pytest
from click.testing import CliRunner

import hivemem
from hivemem import Conflict, InvalidInput, NotFound, StoreError
from hivemem.frontends.cli import main
from hivemem.frontends.http import create_app

SURROGATE = "\udbff"


@pytest.fixture
def saved(mem):
    return mem.save("the deploy window is Tuesday", key="deploy-window")


# ---------------------------------------------------------------- library: surrogates


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m, s, x: m.get(SURROGATE), "id"),
        (lambda m, s, x: m.confirm(SURROGATE), "id"),
        (lambda m, s, x: m.correct(SURROGATE, "y"), "id"),
        (lambda m, s, x: m.delete(SURROGATE), "id"),
        (lambda m, s, x: m.related(SURROGATE), "id"),
        (lambda m, s, x: m.promote(SURROGATE, to="swarm"), "id"),
        (lambda m, s, x: m.correct(x.id, "the window is Monday", reason=SURROGATE), "reason"),
        (lambda m, s, x: m.save("a lesson", source_ids=[SURROGATE]), "source_ids[0]"),
        (lambda m, s, x: s.vault("team-a").list(prefix=SURROGATE), "prefix"),
        (lambda m, s, x: m.delete_all(updated_by=SURROGATE), "updated_by"),
    ],
)
def test_unpaired_surrogates_are_invalid_input_naming_the_field(store, saved, call, field):
    mem = store.scope("team-a", shared=["swarm"])
    with pytest.raises(InvalidInput) as caught:
        call(mem, store, saved)
    assert caught.value.field == field
    assert "invalid character" in caught.value.message  # plain words first
    assert mem.get(saved.id).content == saved.content  # nothing changed


def test_a_surrogate_key_is_simply_not_in_the_vault(store):
    assert SURROGATE not in store.vault("team-a")


# ---------------------------------------------------------------- library: wrong types


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m, x: m.delete({"id": 1}), "id"),
        (lambda m, x: m.confirm([]), "id"),
        (lambda m, x: m.correct(x.id, "the window is Monday", reason=["a", None]), "reason"),
        (lambda m, x: m.correct(x.id, "the window is Monday", minor="no"), "minor"),
        (lambda m, x: m.add_episodes(1.5), "items"),
        (lambda m, x: m.add_episodes("not a list"), "items"),
        (lambda m, x: m.save("a fact", wait="yes"), "wait"),
        (lambda m, x: m.promote(x.id, to=["swarm"]), "to"),
    ],
)
def test_wrong_types_are_invalid_input_naming_the_field(mem, saved, call, field):
    with pytest.raises(InvalidInput) as caught:
        call(mem, saved)
    assert caught.value.field == field


# ---------------------------------------------------------------- library: huge numbers


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda m: m.list(since="99999999999999d"), "since"),
        (lambda m: m.list(until="999999d"), "until"),
        (lambda m: m.search("deploy", since="99999999999999d"), "since"),
        (lambda m: m.list(as_of="0001-01-01T00:00:00+01:00"), "as_of"),
        (lambda m: m.list(offset=2**70), "offset"),
        (lambda m: m.list(offset=10**20), "offset"),
        (lambda m: m.delete(2**70), "id"),
        (lambda m: m.get(2**70), "id"),
        (lambda m: m.related("x", limit=2**70), "limit"),
        (lambda m: m.save("a fact", event_time="99999999999999d"), "event_time"),
    ],
)
def test_huge_numbers_are_invalid_input_naming_the_field(mem, saved, call, field):
    with pytest.raises(InvalidInput) as caught:
        call(mem)
    assert caught.value.field == field


def test_a_far_away_but_representable_offset_is_an_empty_page(mem, saved):
    assert mem.list(offset=2**63 - 1) == []


# ---------------------------------------------------------------- library: paths, closed store


def test_indexing_a_path_too_long_for_the_file_system_is_invalid_input(mem, tmp_path):
    for folder in ["a" * 2000, str(tmp_path / ("b/" * 3000)), "x\x00y"]:
        with pytest.raises(InvalidInput) as caught:
            hivemem.index_folder(mem, folder)
        assert caught.value.field == "folder"


def test_a_handle_used_after_close_says_the_store_is_closed(db_path):
    store = hivemem.open(db_path, embedder="hash")
    mem = store.scope("team-a")
    memory = mem.save("kept across the close")
    vault = store.vault("team-a")
    store.close()
    for call in (
        lambda: mem.get(memory.id),
        lambda: mem.save("after close"),
        lambda: mem.search("kept"),
        lambda: mem.list(),
        lambda: vault.list(),
        lambda: store.stats(),
    ):
        with pytest.raises(StoreError, match="is closed"):
            call()
    store.close()  # closing twice is harmless
    with hivemem.open(db_path, embedder="hash") as again:
        assert again.scope("team-a").get(memory.id).content == "kept across the close"


# ---------------------------------------------------------------- promotion of a dead version


def test_promotion_refuses_a_superseded_then_deleted_memory(store):
    worker = store.scope("worker-1", shared=["swarm"])
    old = worker.save("deploy on Fridays", key="deploy-day")
    new = worker.save("never deploy on Fridays", key="deploy-day", supersede_reason="outage")
    worker.delete(new.id)
    with pytest.raises(Conflict, match="only current, live memories"):
        worker.promote(old.id, to="swarm")
    with pytest.raises(Conflict, match="deleted"):
        worker.promote(new.id, to="swarm")
    assert store.scope("swarm").list() == []  # the obsolete text reached nobody


def test_promotion_of_a_superseded_version_names_the_current_one(store):
    worker = store.scope("worker-1", shared=["swarm"])
    old = worker.save("deploy on Fridays", key="deploy-day")
    mid = worker.save("deploy on Thursdays", key="deploy-day", supersede_reason="v2")
    new = worker.save("deploy on Tuesdays", key="deploy-day", supersede_reason="v3")
    assert mid.status is hivemem.Status.ACTIVE
    with pytest.raises(Conflict) as caught:
        worker.promote(old.id, to="swarm")
    assert caught.value.current.id == new.id and new.id in caught.value.message
    assert store.scope("swarm").list() == []
    copy = worker.promote(new.id, to="swarm")  # the current version is promotable
    assert copy.content == "deploy on Tuesdays" and copy.source_ids == (new.id,)


def test_promotion_refuses_an_expired_memory(store, clock):
    worker = store.scope("worker-1", shared=["swarm"])
    memory = worker.save("build cache is warm", expires_at="2026-01-02T00:00:00Z")
    clock.advance(days=3)
    with pytest.raises(Conflict, match="expired"):
        worker.promote(memory.id, to="swarm")
    with pytest.raises(NotFound):
        worker.promote("no-such-id", to="swarm")


# ---------------------------------------------------------------- CLI


@pytest.fixture
def cli(db_path, monkeypatch):
    for name in list(os.environ):
        if name.startswith("HIVEMEM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HIVEMEM_EMBEDDER", "hash")

    def invoke(*args):
        return CliRunner().invoke(main, ["--db", str(db_path), *args])

    assert invoke("add", "the deploy window is Tuesday").exit_code == 0
    return invoke


@pytest.mark.parametrize(
    "args",
    [
        ["confirm", "\udc80"],
        ["forget", "\udcbd"],
        ["correct", "\udc80", "y"],
        ["vault", "list", "--prefix", "\udc80"],
        ["token", "revoke", "\udcbd"],
        ["list", "--since", "999999d"],
        ["search", "deploy", "--since", "99999999999999d"],
        ["index", "a" * 2000],
        ["export", "x" * 5000],  # found by the long fuzz: the name broke exists()
        ["--scope", "\udc80", "purge", "--audit"],  # found by the long fuzz: a driver error
    ],
)
def test_cli_bad_arguments_are_one_line_errors_with_exit_code_2(cli, args):
    result = cli(*args)
    assert result.exit_code == 2, (result.output, result.exception)
    assert not isinstance(result.exception, Exception) or isinstance(
        result.exception, SystemExit
    ), result.exception
    assert result.output.startswith("error: ") and "Traceback" not in result.output


def test_cli_with_real_non_utf8_bytes_prints_no_traceback(db_path, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    env.update(HIVEMEM_DB=str(db_path), HIVEMEM_EMBEDDER="hash")
    hivemem.open(db_path, embedder="none").close()  # reads never create a store (#25)
    code = "import sys; from hivemem.frontends.cli import main; sys.exit(main())"
    for args in ([b"confirm", b"\x80"], [b"vault", b"list", b"--prefix", b"\x80"]):
        proc = subprocess.run(
            [sys.executable.encode(), b"-c", code.encode(), *args],
            capture_output=True,
            env=env,
            timeout=120,
        )
        assert proc.returncode == 2, proc.stderr
        assert b"Traceback" not in proc.stderr
        assert proc.stderr.startswith(b"error: ")


# ---------------------------------------------------------------- HTTP


def _get(app, url, token):
    async def go():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get(url, headers={"Authorization": f"Bearer {token}"})

    return asyncio.run(go())


def test_http_out_of_range_numbers_are_422_in_the_one_error_shape(store):
    _, token = store.tokens.create("t", {"A": "write"}, store.clock())
    app = create_app(store)
    try:
        for url, field in [
            ("/v1/scopes/A/memories?offset=99999999999999999999", "offset"),
            ("/v1/scopes/A/memories?offset=-1", "offset"),
            ("/v1/scopes/A/memories?max_results=99999999999999999999", "max_results"),
            ("/v1/scopes/A/entities/x?max_results=1e999", "max_results"),
        ]:
            response = _get(app, url, token)
            assert response.status_code == 422, (url, response.text)
            assert response.json()["error"]["code"] == "invalid_input"
            assert response.json()["error"]["field"] == field
        assert _get(app, f"/v1/scopes/A/memories?offset={2**63 - 1}", token).json()["count"] == 0
    finally:
        app.state.api.close()


# ---------------------------------------------------------------- found by the fuzzers


def test_found_by_fuzzing_are_invalid_input_too(store, mem, saved):
    cases = [
        (lambda: hivemem.run_job(store, "decay", SURROGATE), "scope"),
        (lambda: store.guard_fields(saved.id), "fields"),
        (lambda: list(store.iter_memories([SURROGATE])), "scopes"),
        (lambda: hivemem.ContextProvider(mem).messages(5), "history"),
        (lambda: hivemem.ContextProvider(mem).system_message(instructions=2**70), "instructions"),
        (lambda: store.scope("team-a", lead_of=2**70), "lead_of"),  # was a TypeError
    ]
    for call, field in cases:
        with pytest.raises(InvalidInput) as caught:
            call()
        assert caught.value.field == field
    assert list(store.iter_memories([])) == []


def test_a_sign_in_redirect_drops_a_way_back_too_long_for_a_location_header(store):
    """Found by the long fuzz of /ui: a signed-out GET of a huge URL was redirected to
    the sign-in page with the whole URL, percent-encoded again, in ``next``: a Location
    header past what clients accept (httpx refused it: "URL too long")."""
    app = create_app(store)

    async def get(url):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            return await client.get(url)

    try:
        long = asyncio.run(get("/ui/scopes/team-a?q=" + "%C3%A9" * 10_000))
        assert long.status_code == 303 and long.headers["location"] == "/ui/login"
        short = asyncio.run(get("/ui/scopes/team-a?q=deploy"))
        assert short.status_code == 303
        assert short.headers["location"] == "/ui/login?next=/ui/scopes/team-a%3Fq%3Ddeploy"
    finally:
        app.state.api.close()


def test_found_by_the_long_fuzz_of_settings_and_purge(cli):
    """``Settings(chunk_tokens=8)`` was refused as ``chunk_overlap_tokens`` (a setting the
    caller never gave); ``purge --all`` without ``--yes`` exited 1 without an ``error:``
    line."""
    with pytest.raises(InvalidInput) as caught:
        hivemem.Settings(chunk_tokens=8)
    assert caught.value.field == "chunk_tokens"
    with pytest.raises(InvalidInput) as caught:
        hivemem.Settings(summarize_min_group=1000)
    assert caught.value.field == "summarize_min_group"
    result = cli("purge", "--all")
    assert result.exit_code == 1
    assert "error: nothing was erased: add --yes" in result.output
