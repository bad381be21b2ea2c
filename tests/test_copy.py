"""``hivemem copy SRC DST``: SQLite ↔ PostgreSQL (and SQLite → SQLite), lossless and
resumable, against the real embedded PostgreSQL of tests/pg.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

import hivemem
from hivemem.evaluation import doctor
from hivemem.frontends.cli import main
from hivemem.lifecycle.copying import copy_store
from hivemem.lifecycle.maintenance import run_job
from hivemem.store.factory import is_url
from terminal import CLI, run_on_a_terminal

# Side tables compared row for row (generated ids left out, entity ids by name).
_TABLES = {
    "sessions": "scope, session_id, started_at, last_event_at, episode_count, "
    "consolidated_at, attributes",
    "vault": "scope, key, value, is_secret, created_at, updated_at",
    "api_tokens": "id, name, token_hash, scopes, created_at, revoked_at, last_used_at",
    "cross_refs": "memory_id, related_id, score",
    "memory_jobs": "job, memory_id, done_at",
    "decay_state": "memory_id, base, anchor, applied",
    "memory_categories": "memory_id, confidence",
    "maintenance_runs": "job, scope, trigger, started_at, finished_at, status, counts, error",
    "entities": "scope, canonical, type, name, mention_count, first_seen, last_seen",
}


def _backend(store: Any) -> Any:
    return store._backend  # raw SQL of the comparison only


def dump(store: Any, tables: dict[str, str] = _TABLES) -> dict[str, Any]:
    """Everything a copy must carry, in natural keys (comparable across backends)."""
    backend = _backend(store)
    rows = store.table_rows
    out: dict[str, Any] = {}
    memories = {m.id: m.to_dict() for m in store.memories.iter_all(None)}
    out["memories"] = memories
    chunks = store.keyword.memory_chunks(list(memories))
    out["chunks"] = sorted((c.memory_id, c.seq, c.text) for c in chunks)
    for table, columns in tables.items():
        if not rows.columns(table):
            continue
        got = backend._read(f"SELECT {columns} FROM {table}")
        out[table] = sorted(tuple(r) for r in got)
    out["memory_entities"] = sorted(
        tuple(r)
        for r in backend._read(
            "SELECT me.memory_id, e.scope, e.canonical, e.type FROM memory_entities me "
            "JOIN entities e ON e.id = me.entity_id"
        )
    )
    out["entity_aliases"] = sorted(
        tuple(r)
        for r in backend._read(
            "SELECT a.scope, a.alias, e.canonical, e.type FROM entity_aliases a "
            "JOIN entities e ON e.id = a.entity_id"
        )
    )
    identity = store.vectors.recorded_identity()
    out["identity"] = identity
    if identity:
        found = store.vectors.vectors(identity, [c.chunk_id for c in chunks])
        out["vectors"] = sorted(
            (c.memory_id, c.seq, tuple(round(float(x), 6) for x in found[c.chunk_id]))
            for c in chunks
            if c.chunk_id in found
        )
    out["queued"] = store.vectors.pending_count()
    return out


def fill(location: Any, clock: Any, *, memories: int = 30) -> None:
    """A store with every kind of state: chains, deleted rows, sessions, vault, a token,
    aliases, usage counts, vectors; maintenance bookkeeping where the backend has it."""
    made = CliRunner().invoke(
        main, ["--db", str(location), "token", "create", "bot", "--write", "team"]
    )
    assert made.exit_code == 0, made.output
    with hivemem.open(location, clock=clock, embedder="hash") as store:
        mem = store.scope("team")
        mem.save("Alice works on the Apollo project in Paris", key="alice", tags=["people"])
        mem.save(
            "Alice moved to the Zephyr project in Berlin",
            key="alice",
            supersede_reason="she changed team",
            attributes={"source": "standup"},
        )
        mem.save("Alice leads Zephyr since March", key="alice", supersede_reason="promotion")
        mem.save("Zephyr project planning with Alice in Berlin")
        gone = mem.save("The staging password rotates monthly", key="staging")
        mem.delete(gone.id)
        for i in range(memories):
            mem.add_episode(f"turn {i}: Bob asked Carol about Kubernetes {i}", "s1", "user")
        mem.add_episode("Dana reviewed the Helm chart", "s2", "agent")
        mem.alias("Alice", "Ally")
        mem.search("Alice Zephyr")  # usage counts
        store.vault("team").set("endpoint", "https://example.test")
        store.vault("team").set("deploy-key", "s3cr3t-value", secret=True)
        store.scope("other").save("Other team's note about Grafana", key="grafana")
        store.indexer.flush()
        if not is_url(str(location)):
            for job in ("categorize", "crossrefs", "decay"):
                run_job(store, job)
            alice, _ = store.scope("team").entity("Alice")
            store.entities.describe("team", alice.id, summary="leads Zephyr")


@pytest.mark.parametrize("direction", ["sqlite-to-postgres", "postgres-to-sqlite"])
def test_copy_between_backends_is_lossless(direction, tmp_path, pg_url, clock):
    sqlite = tmp_path / "memory.db"
    source, target = (sqlite, pg_url) if direction == "sqlite-to-postgres" else (pg_url, sqlite)
    fill(source, clock)
    with hivemem.open(source, embedder="none") as src, hivemem.open(target, embedder="none") as dst:
        report = copy_store(src, dst)
        before, after = dump(src), dump(dst)
    assert report.memories == len(before["memories"]) == 37
    # a column the target's schema lacks (SQLite's entity summary, before PostgreSQL's
    # migration has it) is counted, never dropped silently
    with hivemem.open(target, embedder="none") as dst:
        lacking = "summary" not in dst.table_rows.columns("entities")
    assert report.left_out == ({"entities.summary": 1} if lacking else {})
    assert report.queued == 0 and report.vectors == len(before["vectors"]) > 0
    assert after == before
    # the copy is a working store: search finds through the copied index and vectors
    # the copy is a working store: its index, vectors and key rule answer
    with hivemem.open(target, embedder="hash") as store:
        assert store.indexer.enabled and store.indexer.pending() == 0
        report = doctor.diagnose(store)
        assert report.ok, [c for c in report.checks if not c.ok]
        if is_url(str(target)):  # small scopes: exact scans, no HNSW index (issue #25)
            indexes = next(c for c in report.checks if c.name == "indexes")
            assert "hnsw" not in indexes.detail and not store.vectors.index_missing()
        mem = store.scope("team")
        hits = mem.search("Zephyr planning")
        assert "Zephyr project planning with Alice in Berlin" in [h.memory.content for h in hits]
        assert [m.status.value for m in mem.history("alice")].count("active") == 1
        with pytest.raises(hivemem.Conflict):
            mem.save("a second active alice", key="alice")


def test_round_trip_sqlite_postgres_sqlite_compares_everything(tmp_path, pg_url, clock):
    first, last = tmp_path / "first.db", tmp_path / "last.db"
    fill(first, clock)
    runner = CliRunner()
    for src, dst in ((first, pg_url), (pg_url, last)):
        done = runner.invoke(main, ["copy", str(src), str(dst), "--json"])
        assert done.exit_code == 0, done.output
        assert json.loads(done.stdout)["memories"] == 37
    with hivemem.open(first, embedder="none") as a, hivemem.open(last, embedder="none") as c:
        original, back = dump(a), dump(c)
    assert original["maintenance_runs"] and original["cross_refs"] and original["vectors"]
    assert back == original


def test_sqlite_to_sqlite_and_refusals(tmp_path, clock):
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    fill(a, clock, memories=3)
    runner = CliRunner()
    done = runner.invoke(main, ["copy", str(a), str(b)])
    assert done.exit_code == 0, done.output
    assert "copied 10 memories" in done.output and "vectors:" in done.output
    assert "not carried" not in done.output
    full = {**_TABLES, "entities": _TABLES["entities"] + ", protected, summary"}
    with hivemem.open(a, embedder="none") as src, hivemem.open(b, embedder="none") as dst:
        assert dump(dst, full) == dump(src, full)
    # a non-empty target is refused, naming --resume
    again = runner.invoke(main, ["copy", str(a), str(b)])
    assert again.exit_code == 4 and "--resume" in again.output
    # --resume over a complete copy adds nothing
    resumed = runner.invoke(main, ["copy", str(a), str(b), "--resume", "--json"])
    assert resumed.exit_code == 0, resumed.output
    assert json.loads(resumed.output)["memories"] == 0
    assert json.loads(resumed.output)["records"] == {}
    # a target holding other data is refused even with --resume; nothing overwritten
    c = tmp_path / "c.db"
    with hivemem.open(c, clock=clock, embedder="none") as other:
        other.scope("team").save("someone else's memory")
    with hivemem.open(c, embedder="none") as other:
        other_ids = {m.id for m in other.iter_memories()}
    with hivemem.open(a, embedder="none") as src:
        mine = next(iter(src.iter_memories())).to_dict()
    with hivemem.open(c, embedder="none") as other, hivemem.open(a, embedder="none") as src:
        # the same id with other content in the target
        row = {**mine, "content": "tampered", "key": None, "status": "deleted"}
        from hivemem.lifecycle.portability import memory_from_dict

        with other.atomic():
            other.memories.insert(memory_from_dict(row, other.settings), ["tampered"])
        with pytest.raises(hivemem.Conflict, match="not a copy of this source"):
            copy_store(src, other, resume=True)
        assert other.scope("team").get(mine["id"]).content == "tampered"
        assert other_ids < {m.id for m in other.iter_memories()}
    missing = runner.invoke(main, ["copy", str(tmp_path / "nope.db"), str(tmp_path / "x.db")])
    assert missing.exit_code == 2 and "SRC" in missing.output
    for other_name in (str(a), str(tmp_path / "." / "a.db")):
        same = runner.invoke(main, ["copy", str(a), other_name])
        assert same.exit_code == 2 and "same store" in same.output


class _Stop(Exception):
    pass


@pytest.mark.parametrize("direction", ["sqlite-to-postgres", "postgres-to-sqlite"])
def test_interrupted_copy_resumes_without_duplicates(direction, tmp_path, pg_url, clock):
    sqlite = tmp_path / "memory.db"
    source, target = (sqlite, pg_url) if direction == "sqlite-to-postgres" else (pg_url, sqlite)
    fill(source, clock, memories=120)

    def stop_half_way(what: str, done: int, total: int) -> None:
        if what == "memories" and done >= total // 2 and done:
            raise _Stop

    with hivemem.open(source, embedder="none") as src, hivemem.open(target, embedder="none") as dst:
        with pytest.raises(_Stop):
            copy_store(src, dst, progress=stop_half_way, batch=25)
        part = dst.stats()["total"]
        assert 0 < part < src.stats()["total"]
    runner = CliRunner()
    refused = runner.invoke(main, ["copy", str(source), str(target)])
    assert refused.exit_code == 4 and "--resume" in refused.output
    done = runner.invoke(main, ["copy", str(source), str(target), "--resume", "--json"])
    assert done.exit_code == 0, done.output
    result = json.loads(done.output)
    with hivemem.open(source, embedder="none") as src, hivemem.open(target, embedder="none") as dst:
        assert result["already_there"] == part
        assert result["memories"] + part == src.stats()["total"]
        assert dump(dst) == dump(src)


def test_copy_killed_mid_way_is_finished_by_resume(tmp_path, pg_url, clock):
    """kill -9 of a real `hivemem copy` process half-way: each batch is one transaction,
    so the target holds whole batches only, and --resume finishes it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import psycopg

    source = tmp_path / "memory.db"
    with hivemem.open(source, clock=clock, embedder="none") as store:
        store.scope("team").add_episodes(
            {"content": f"turn {i}: the herons of lake {i % 7}", "session_id": f"s{i // 50}",
             "role": "user"}
            for i in range(3000)
        )  # fmt: skip
    copying = subprocess.Popen(
        [sys.executable, "-c", "from hivemem.frontends.cli import main; main()",
         "copy", str(source), pg_url],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ},
    )  # fmt: skip
    deadline = time.monotonic() + 120
    with psycopg.connect(pg_url, autocommit=True) as conn:
        while True:
            count = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
            if count >= 500:
                break
            assert copying.poll() is None, copying.stdout.read().decode()
            assert time.monotonic() < deadline
            time.sleep(0.05)
    copying.send_signal(signal.SIGKILL)
    copying.wait(timeout=30)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        part = conn.execute("SELECT COUNT(*) FROM memories").fetchone()[0]
    assert 0 < part < 3000 and part % 500 == 0  # whole batches only
    done = CliRunner().invoke(main, ["copy", str(source), pg_url, "--resume", "--json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.output)["already_there"] == part
    with hivemem.open(source, embedder="none") as src, hivemem.open(pg_url, embedder="none") as dst:
        assert dump(dst) == dump(src)


def test_a_terminal_gets_progress_bars_and_a_pipe_none(tmp_path, clock):
    import subprocess

    source = tmp_path / "a.db"
    fill(source, clock, memories=3)
    done, shown = run_on_a_terminal("copy", str(source), str(tmp_path / "b.db"))
    assert done.returncode == 0
    assert "memories" in shown and "vectors" in shown and "100%" in shown
    piped = subprocess.run(
        [*CLI, "copy", str(source), str(tmp_path / "c.db")], capture_output=True, text=True
    )
    assert piped.returncode == 0 and "%" not in piped.stderr and "copied 10" in piped.stdout


def test_postgres_to_postgres(pg_url, pg_fresh_url, clock):
    fill(pg_url, clock, memories=5)
    with (
        hivemem.open(pg_url, embedder="none") as src,
        hivemem.open(pg_fresh_url, embedder="none") as dst,
    ):
        report = copy_store(src, dst)
        assert report.memories == 12 and report.queued == 0
        assert dump(dst) == dump(src)


def test_insert_many_writes_a_batch_and_refuses_as_insert_does(any_store, tmp_path, clock):
    """The batch insert of the copy (PostgreSQL: one pipeline for the rows, one statement
    for their chunks): rows, chunks in order, the vector queue; a row whose id exists, a
    key with another active row or an id twice in the batch raise ``Conflict`` with the
    messages of ``insert``, and the rolled-back batch leaves nothing."""
    from hivemem.errors import Conflict

    with hivemem.open(tmp_path / "src.db", clock=clock, embedder="none") as source:
        mem = source.scope("team-a")
        mem.save("The deploy key rotates monthly", key="k")
        mem.save("Kafka runs on three brokers")
        mem.save(" ".join(f"word{i} filler text." for i in range(900)))  # many chunks
        rows = list(source.iter_memories())
    dst = any_store.memories
    settings = any_store.settings

    def items(memories):
        from hivemem.text import chunk

        return [
            (m, chunk(m.content, settings.chunk_tokens, settings.chunk_overlap_tokens), ())
            for m in memories
        ]

    holder = any_store.scope("team-a").save("Another deploy key", key="k")
    plain = any_store.scope("team-a").save("A fact of the target")
    for batch, message in (
        (rows, "key 'k' already has an active memory in scope 'team-a'"),
        ([rows[1], rows[1]], f"a memory with id {rows[1].id} already exists"),
        ([rows[1], plain], f"a memory with id {plain.id} already exists"),
    ):
        with pytest.raises(Conflict, match=message), any_store.atomic():
            dst.insert_many(items(batch))
        assert {m.id for m in any_store.iter_memories()} == {holder.id, plain.id}
    with any_store.atomic():
        dst.insert_many(items(rows[1:]))
    assert {m.id for m in any_store.iter_memories()} == {
        holder.id,
        plain.id,
        rows[1].id,
        rows[2].id,
    }
    chunks = list(any_store.keyword.memory_chunks([rows[2].id]))
    assert len(chunks) > 3 and " ".join(c.text for c in chunks).startswith("word0 filler")
    assert [h.memory.id for h in any_store.scope("team-a").search("brokers", limit=3)] == [
        rows[1].id
    ]


def test_a_consolidation_cursor_is_the_targets_after_a_copy(tmp_path, clock):
    """A consolidation stopped after its first batch keeps the ``seq`` of the last
    episode it consumed; the copy numbers episodes afresh (a purged row's gap closes),
    so the cursor is carried as the count consumed and given the target's numbering
    (the copy's next run read none of the episodes left: a read-only review)."""
    with hivemem.open(tmp_path / "src.db", clock=clock, embedder="none") as src:
        gone = src.scope("b").add_episodes(
            [{"content": f"filler {i}", "session_id": "x", "role": "user"} for i in range(20)]
        )
        src.scope("b").purge(gone[5].id)  # the source's seqs have a gap now
        mem = src.scope("a")
        turns = [mem.add_episode(f"Alice deployed service {i}", "s", "user") for i in range(4)]
        consumed = src.job_state.episodes("a", "s", 0, 10)[1][0]
        with src.atomic():
            src.job_state.set_session_state("a", "s", {"cursor": consumed, "facts": 0})
        with hivemem.open(tmp_path / "dst.db", clock=clock, embedder="none") as dst:
            copy_store(src, dst)
            state = dst.job_state.session_state("a", "s")
            left = dst.job_state.episodes("a", "s", int(state["cursor"]), 10)
            assert [m.id for _, m in left] == [t.id for t in turns[2:]]
            assert state == {"cursor": state["cursor"], "facts": 0}
