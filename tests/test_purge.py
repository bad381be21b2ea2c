"""Hard purges (``hivemem.write.purge``): the erased text is found nowhere in the database
file's bytes afterwards — main file, FTS shadow tables, WAL — while other scopes keep
everything; the audit keeps no content; the CLI guards with --yes; the Mem0 adapter,
the tools and the HTTP routes reach it (write-scoped)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import hivemem
from hivemem import Forbidden, NotFound, tools
from hivemem.compat.mem0 import Memory as Mem0
from hivemem.frontends.cli import main
from hivemem.write import purge as purgemod
from hivemem.write import retry

SECRET_WORDS = ("zorblaxian", "quintessence", "xylophonia", "marchetti", "vexquarium")


def server_bytes(url: str) -> bytes:
    """Every byte a PostgreSQL database holds of HiveMem's data: the data files of its
    tables, their indexes and TOAST (after a CHECKPOINT), and every row as text."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")  # dirty pages reach the files
        home = Path(conn.execute("SELECT current_setting('data_directory')").fetchone()[0])
        files = conn.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname IN ('public', 'pg_toast') AND c.relkind IN ('r', 'i', 't') "
            "AND pg_relation_filepath(c.oid) IS NOT NULL"
        ).fetchall()
        tables = [
            r[0]
            for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ]
        rows = [
            r[0]
            for t in tables
            for r in conn.execute(f"SELECT t::text FROM {t} t")  # noqa: S608
        ]
    data = b"".join(p.read_bytes() for (f,) in files for p in home.glob(f"{f}*") if p.is_file())
    return (data + " ".join(rows).encode()).lower()


def file_bytes(path: Path) -> bytes:
    """Every byte of the store: the main file, its WAL and shared-memory index (on
    PostgreSQL: ``server_bytes``)."""
    if str(path).startswith("postgresql"):
        return server_bytes(str(path))
    out = b""
    for suffix in ("", "-wal", "-shm"):
        part = Path(f"{path}{suffix}")
        if part.exists():
            out += part.read_bytes()
    return out.lower()


def found(path: Path, words=SECRET_WORDS) -> list[str]:
    data = file_bytes(path)
    return [w for w in words if w.encode() in data]


def vectors_of(store, memory_ids):
    """The float vectors cached for the memories' chunks (the bytes a purge must drop)."""
    rows = store._backend._read(
        "SELECT e.vector FROM chunks c JOIN embedding_cache e ON e.text_hash = c.text_hash "
        f"WHERE c.memory_id IN ({','.join('?' for _ in memory_ids)})",
        list(memory_ids),
    )
    return [r[0] for r in rows]


def fill(store, clock):
    """Alice's private data (every table a scope reaches) and Bob's, beside it."""
    alice = store.scope("alice")
    first = alice.save("Zorblaxian quintessence pudding is Alice's secret", key="recipe")
    alice.save(
        "Zorblaxian quintessence pudding, with honey",
        key="recipe",
        supersede_reason="Xylophonia Marchetti told us the honey matters",
    )
    alice.add_episode("I met Xylophonia Marchetti about the zorblaxian plan", "s1", "user")
    alice.add_episode("The vexquarium needs cleaning", "s1", "agent")
    alice.save("Vexquarium maintenance is weekly", key="tank")
    alice.store.vault("alice").set("zorblaxian-api", "quintessence-token-1", secret=True)
    bob = store.scope("bob")
    bob.save("Bob keeps the quaxelberry notes", key="notes")
    bob.add_episode("Quaxelberry jam is Bob's favourite", "b1", "user")
    store.flush()
    hivemem.run_job(store, "consolidate", "alice")
    hivemem.run_job(store, "crossrefs", "alice")
    store.flush()
    tokens = store.tokens
    tokens.create("alice-only", {"alice": "write"}, clock())
    tokens.create("both", {"alice": "read", "bob": "write"}, clock())
    return alice, bob, first


def test_purge_all_leaves_no_byte_of_the_scope_and_keeps_others(db_path, clock):
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        alice, bob, first = fill(store, clock)
        ids = [m.id for m in store.iter_memories(["alice"])]
        cached = vectors_of(store, ids)
        bits = [  # the binary vectors of sqlite-vec's table
            r[0]
            for r in store._backend._read(
                "SELECT v.embedding FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id "
                "JOIN memories m ON m.id = c.memory_id WHERE m.scope = 'alice'"
            )
        ]
        assert cached and bits and found(db_path)  # the words are there before
        report = alice.purge_all()
        assert report.vacuumed and report.checkpointed
        assert report.counts["memories"] == len(ids) and report.counts["tokens"] == 1
        assert report.counts["vault"] == 1 and report.counts["sessions"] == 1
        assert alice.list() == [] and alice.search("zorblaxian") == []
        assert alice.stats()["total"] == 0 and alice.sessions() == []
        assert len(bob.search("quaxelberry")) == 2
        tokens = store.tokens.list()
        assert [t.name for t in tokens] == ["both"] and dict(tokens[0].scopes) == {"bob": "write"}
        assert store.vault("alice").list() == []
        [record] = purgemod.audit(store, "alice")
        assert record["target"] == "scope" and set(record["memory_ids"]) == set(ids)
        assert "zorblax" not in json.dumps(record).lower()
    assert found(db_path) == []  # main file, FTS shadow tables, WAL: nothing left
    data = file_bytes(db_path)
    assert all(v.lower() not in data for v in cached)  # nor its cached vectors
    raw = b"".join(
        Path(f"{db_path}{x}").read_bytes() for x in ("", "-wal") if Path(f"{db_path}{x}").exists()
    )
    assert not any(b in raw for b in bits)  # nor its bit vectors
    assert b"quaxelberry" in data  # Bob's rows are intact
    with hivemem.open(db_path, embedder="hash") as store:
        assert len(store.scope("bob").search("quaxelberry jam")) >= 1
        assert store._backend._read("PRAGMA integrity_check") == [("ok",)]


def test_purge_of_one_memory_erases_its_whole_chain_and_nothing_else(db_path, clock):
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        alice = store.scope("alice")
        alice.save("The vexquarium pump is blue", key="pump")
        alice.save("The vexquarium pump is red", key="pump", supersede_reason="repainted")
        alice.save("The vexquarium pump is green", key="pump", minor=True)
        kept = alice.save("Alice waters the ferns on Mondays")
        store.flush()
        chain = [m.id for m in alice.history("pump")]
        cached = vectors_of(store, chain)
        report = alice.purge("pump")
        assert sorted(report.memory_ids) == sorted(chain) and report.target == "memory"
        assert report.counts["memories"] == 3
        with pytest.raises(NotFound):
            alice.get(chain[0])
        with pytest.raises(NotFound):
            alice.purge("pump")
        assert [m.id for m in alice.list()] == [kept.id]
        assert alice.search("ferns")[0].memory.id == kept.id
    assert found(db_path, ["vexquarium", "repainted"]) == []
    assert all(v.lower() not in file_bytes(db_path) for v in cached)
    assert b"ferns" in file_bytes(db_path)


def test_an_entity_only_the_purged_memory_named_goes_and_a_shared_one_stays(mem, store):
    gone = mem.save("Xylophonia Marchetti visited Berlin")
    mem.save("Berlin is cold in winter")
    mem.purge(gone.id, vacuum=False)  # right after the saves: the worker may be embedding
    with pytest.raises(NotFound):
        mem.entity("Xylophonia Marchetti")
    entity, linked = mem.entity("Berlin")
    assert entity.mention_count == 1 and [m.content for m in linked] == ["Berlin is cold in winter"]


def test_purges_while_the_embedding_worker_is_busy_all_complete_on_their_first_run(
    mem, store, monkeypatch
):
    """Purges right after saves, while the worker embeds them: on PostgreSQL the two
    once deadlocked (``test_backends_races.py`` has the race in a fixed order). No
    retry is allowed here, so a deadlock would fail a purge."""
    monkeypatch.setattr(retry, "ATTEMPTS", 1)
    saved = [mem.save(f"Pump log {i}: the vexquarium valve {i % 7} was checked") for i in range(90)]
    gone = saved[::3]
    for memory in gone:
        mem.purge(memory.id, vacuum=False)
    store.flush()
    left = {m.id for m in mem.list(limit=1000)}
    assert left == {m.id for m in saved} - {m.id for m in gone}
    assert store.vectors.pending_count() == 0
    assert store.vectors.count() == len(left)  # one chunk each, every one embedded


def test_a_dry_run_changes_nothing(mem):
    saved = mem.save("Keep me", key="k")
    report = mem.purge("k", dry_run=True)
    assert report.dry_run and report.memory_ids == (saved.id,)
    assert mem.get("k").content == "Keep me"
    assert purgemod.audit(mem.store) == []


def test_a_worker_cannot_purge_the_swarm_scope_a_lead_can(store):
    store.scope("swarm").save("Shared wisdom", key="wisdom")
    worker = store.scope("worker-1", shared=["swarm"])
    with pytest.raises(Forbidden):
        worker.purge("wisdom")
    lead = store.scope("lead", lead_of=["swarm"])
    assert lead.purge("wisdom").scope == "swarm"
    assert store.scope("swarm").list() == []
    assert purgemod.audit(store, "swarm")[0]["purged_by"] == "lead"


def test_cli_purge_needs_yes_and_prints_what_would_go(db_path):
    with hivemem.open(db_path, embedder="hash") as store:
        store.scope("alice").save("Zorblaxian secret", key="s")
    run = CliRunner().invoke
    dry = run(main, ["--db", str(db_path), "--scope", "alice", "purge", "s"])
    assert dry.exit_code == 1, dry.output
    assert "would erase" in dry.output and "add --yes" in dry.output
    assert run(main, ["--db", str(db_path), "--scope", "alice", "show", "s"]).exit_code == 0
    both = run(main, ["--db", str(db_path), "purge"])
    assert both.exit_code == 2  # neither an id nor --all
    done = run(main, ["--db", str(db_path), "--scope", "alice", "purge", "--all", "--yes"])
    assert done.exit_code == 0 and "erased scope 'alice'" in done.output
    assert found(db_path, ["zorblaxian"]) == []
    log = run(main, ["--db", str(db_path), "--scope", "alice", "purge", "--audit", "--json"])
    [record] = json.loads(log.output)
    assert record["target"] == "scope" and record["counts"]["memories"] == 1


def test_mem0_erases_a_users_data(db_path, clock):
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        m = Mem0(store)
        m.add("Zorblaxian pudding is my favourite", user_id="alice")
        m.add("I like quaxelberry jam", user_id="bob")
        out = m.delete_all(user_id="alice", purge=True)
        assert "erased" in out["message"]
        assert m.get_all(user_id="alice")["results"] == []
        assert len(m.get_all(user_id="bob")["results"]) == 1
    assert found(db_path, ["zorblaxian"]) == []


def test_purge_tools_need_the_scope_name_to_erase_everything(mem):
    mem.save("Zorblaxian notes", key="z")
    with pytest.raises(hivemem.InvalidInput, match="confirm"):
        tools.call(mem, "memory_purge_all", {"confirm": "other"})
    out = tools.call(mem, "memory_purge", {"id": "z"})["purged"]
    assert out["counts"]["memories"] == 1 and not out["dry_run"]
    assert tools.call(mem, "memory_purge_all", {"confirm": "team-a"})["purged"]["target"] == "scope"


def test_purge_over_mcp_erases_a_whole_chain(mem):
    import anyio
    from mcp import Client

    from hivemem.frontends import mcp as mcp_server

    mem.save("Zorblaxian plan v1", key="plan")
    mem.save("Zorblaxian plan v2", key="plan", supersede_reason="revised")

    async def main():
        async with Client(mcp_server.create_server(mem)) as client:
            return await client.call_tool("memory_purge", {"id": "plan"})

    out = json.loads(anyio.run(main).content[0].text)["purged"]
    assert out["counts"]["memories"] == 2 and mem.search("zorblaxian") == []
    with pytest.raises(NotFound):
        mem.history("plan")


def test_purge_routes_need_a_write_grant_and_erase_over_http(db_path, clock):
    import asyncio

    import httpx

    from hivemem.frontends.http import create_app

    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        mem = store.scope("alice")
        chain = mem.save("Zorblaxian diary entry", key="diary")
        tokens = store.tokens
        reader = tokens.create("reader", {"alice": "read"}, clock())[1]
        writer = tokens.create("writer", {"alice": "write"}, clock())[1]
        app = create_app(store)

        async def post(url, token, body=None):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                headers = {"Authorization": f"Bearer {token}"}
                return await c.post(url, headers=headers, json=body or {})

        try:
            url = f"/v1/scopes/alice/memories/{chain.id}/purge"
            refused = asyncio.run(post(url, reader))
            assert refused.status_code == 403 and mem.get(chain.id)
            done = asyncio.run(post(url, writer))
            assert done.status_code == 200, done.text
            assert done.json()["purged"]["memory_ids"] == [chain.id]
            missing = asyncio.run(post(url, writer))
            assert missing.status_code == 404
            listed = asyncio.run(
                post("/v1/scopes/alice/tools/memory_purge_all", writer, {"confirm": "alice"})
            )
            assert listed.status_code == 200 and listed.json()["purged"]["counts"]["tokens"] == 2
        finally:
            app.state.api.close()
    assert found(db_path, ["zorblaxian"]) == []


def test_what_was_drawn_from_a_purged_episode_goes_with_it(db_path, clock):
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        mem = store.scope("alice")
        turn = mem.add_episode("I keep my zorblaxian savings at Quixbank now", "s1", "user")
        mem.add_episode("Noted, thanks", "s1", "agent")
        mem.save("Alice likes tea")
        hivemem.run_job(store, "consolidate", "alice", session_id="s1")
        facts = [m for m in mem.list(kind="fact") if turn.id in m.source_ids]
        assert facts and "zorblaxian" in facts[0].content.lower()
        kept = mem.purge(turn.id, derived=False, dry_run=True)
        assert kept.memory_ids == (turn.id,)
        report = mem.purge(turn.id)
        # the facts drawn from it, and anything else drawn from it (a session summary)
        assert {turn.id, *(f.id for f in facts)} <= set(report.memory_ids)
        assert mem.list(kind="summary") == []
        assert [m.content for m in mem.list(kind="fact")] == ["Alice likes tea"]
    assert found(db_path, ["zorblaxian", "quixbank"]) == []


def test_a_purge_while_chunks_wait_for_their_vectors(db_path, clock):
    settings = hivemem.Settings().replace(embed_in_background=False)  # queued, not embedded
    with hivemem.open(db_path, settings=settings, clock=clock, embedder="hash") as store:
        mem = store.scope("alice")
        gone = mem.save("Zorblaxian draft")
        kept = mem.save("Alice's public note")
        assert store.vectors.pending_count() == 2
        mem.purge(gone.id)
        assert store.flush() == 1  # only the kept memory's chunk is left to embed
        assert [h.memory.id for h in mem.search("public note")] == [kept.id]
    assert found(db_path, ["zorblaxian"]) == []


def test_a_purge_follows_promoted_copies_where_the_caller_may_erase(db_path, clock):
    """Found on main: a memory promoted to the swarm kept its copy (text, chunks,
    vectors) after a purge of the original. A lead's purge erases the copies, their
    later versions and what was drawn from them; a worker's purge keeps a copy in a scope
    it does not lead and names it in the report."""
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        lead = store.scope("lead", shared=["swarm", "team"], lead_of=["swarm", "team"])
        original = lead.save("Zorblaxian deploy key lives in the quintessence vault", key="k")
        copy = lead.promote(original.id, "swarm")
        swarm = store.scope("swarm", shared=["team"])
        swarm.correct(copy.id, "Zorblaxian deploy key moved to the quintessence safe")
        again = swarm.promote(swarm.get("k").id, "team")  # a copy of the copy
        kept = store.scope("swarm").save("Swarm rules stay", key="rules")
        store.flush()
        preview = lead.purge(original.id, dry_run=True)
        assert set(preview.copies) == {"swarm", "team"} and preview.copies_kept == ()
        report = lead.purge(original.id)
        assert copy.id in report.copies["swarm"] and again.id in report.copies["team"]
        assert [m.id for m in store.scope("swarm").list()] == [kept.id]
        assert store.scope("team").list() == []
        assert purgemod.audit(store, "swarm")[0]["memory_ids"] == list(report.copies["swarm"])

        worker = store.scope("worker-1", shared=["swarm"])
        mine = worker.save("Vexquarium pump notes for everyone")
        shared_copy = worker.promote(mine.id, "swarm")
        result = worker.purge(mine.id)
        assert result.copies == {} and result.copies_kept == (f"swarm/{shared_copy.id}",)
        assert store.scope("swarm").get(shared_copy.id).content.startswith("Vexquarium")
    assert found(db_path, ["zorblaxian", "quintessence"]) == []
    assert b"swarm rules stay" in file_bytes(db_path)


def test_purge_all_erases_the_scopes_promoted_copies_too(db_path, clock):
    with hivemem.open(db_path, clock=clock, embedder="hash") as store:
        lead = store.scope("lead", shared=["swarm"], lead_of=["swarm"])
        lead.promote(lead.save("Marchetti's xylophonia plan").id, "swarm")
        report = lead.purge_all()
        assert sum(len(ids) for ids in report.copies.values()) == 1
        assert store.scope("swarm").list() == []
    assert found(db_path, ["marchetti", "xylophonia"]) == []


def test_cli_purge_names_the_copies_it_erases_or_keeps(db_path):
    with hivemem.open(db_path, embedder="hash") as store:
        mem = store.scope("alice", shared=["swarm"])
        copy = mem.promote(mem.save("Zorblaxian plan", key="p").id, "swarm")
    run = CliRunner().invoke
    out = run(main, ["--db", str(db_path), "--scope", "alice", "purge", "p", "--yes"])
    assert out.exit_code == 0 and f"swarm/{copy.id}" in out.output and "kept" in out.output
    gone = run(main, ["--db", str(db_path), "--scope", "swarm", "purge", copy.id, "--yes"])
    assert gone.exit_code == 0
    assert found(db_path, ["zorblaxian"]) == []
