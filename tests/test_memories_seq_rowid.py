"""Migration 0026 (issue 24, item 3: fewer pages and statements per write): ``seq`` is
the rowid of ``memories``, so its own index and the trigger that numbered rows are gone.
The table is rebuilt, which the other tables' foreign keys would turn into a deletion of
every row that references it (``ON DELETE CASCADE``): a store written before it upgrades
keeping every row of every table, every value, and its planner statistics."""

from __future__ import annotations

from pathlib import Path

import pytest

import hivemem
from hivemem.store.sqlite import migrations
from hivemem.store.sqlite.backend import sqlite_driver

SEQ = "0026_memories_seq_rowid"
TABLES = {
    "memories": "SELECT * FROM memories ORDER BY seq",
    "chunks": "SELECT * FROM chunks ORDER BY id",
    "vector_queue": "SELECT * FROM vector_queue ORDER BY 1",
    "memory_entities": "SELECT * FROM memory_entities ORDER BY 1, 2",
    "memory_categories": "SELECT * FROM memory_categories ORDER BY 1",
    "memory_jobs": "SELECT * FROM memory_jobs ORDER BY 1, 2",
    "decay_state": "SELECT * FROM decay_state ORDER BY 1",
    "entities": "SELECT * FROM entities ORDER BY id",
    "sessions": "SELECT * FROM sessions ORDER BY seq",
    "scope_chunks": "SELECT * FROM scope_chunks ORDER BY 1",
}


def _dump(path: Path, sql: str) -> list[tuple]:
    conn = sqlite_driver.connect(str(path), isolation_level=None)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _before(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple]]:
    """A store written without 0026: turns of two sessions, a chain under a key, a
    categorized fact, a gap in seq (a hard purge), statistics; every table's rows."""
    with monkeypatch.context() as patch:
        patch.setattr(migrations, "MIGRATIONS", [m for m in migrations.MIGRATIONS if m.name != SEQ])
        with hivemem.open(path, embedder="none") as store:
            mem = store.scope("team-a")
            for i in range(6):
                mem.add_episode(f"User: turn {i} about Berlin with Alice", f"s{i % 2}", "user")
            gone = mem.save("Delete me entirely.")
            mem.save("Deploys go out on Fridays.", key="deploy-day")
            mem.save("Deploys go out on Tuesdays.", key="deploy-day", minor=True)
            mem.save("Alice prefers tea.", category="preference")
            mem.purge(gone.id)
            mem.add_episodes(
                [
                    {"content": f"Bob in Paris, turn {i}", "session_id": "s2", "role": "u"}
                    for i in (1, 2)
                ]
            )
            with store._backend.atomic():
                store._backend._write(
                    "INSERT INTO memory_jobs (job, memory_id, done_at) "
                    "SELECT 'categorize', id, created_at FROM memories"
                )
            store._backend._conn.execute("ANALYZE")
        schema = dict(_dump(path, "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL"))
        assert "memories_seq_ai" in schema and "memories_seq" in schema
    return {table: _dump(path, sql) for table, sql in TABLES.items()}


def test_a_store_from_before_0026_upgrades_keeping_every_row(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    rows = _before(path, monkeypatch)
    assert all(rows[t] for t in TABLES if t != "decay_state"), rows
    seqs = [r[-1] for r in rows["memories"]]
    assert seqs != list(range(1, len(seqs) + 1))  # the purge left a gap
    stats = _dump(path, "SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'memories' ORDER BY 1")
    samples_sql = "SELECT * FROM sqlite_stat4 WHERE tbl = 'memories' AND idx <> 'memories_seq'"
    samples = sorted(_dump(path, samples_sql))
    assert samples  # sqlean's SQLite keeps ANALYZE's samples (STAT4)

    with hivemem.open(path, embedder="none") as store:  # the upgrade, nothing read
        assert store.health.schema_version()[-1] == SEQ
        assert store.health.health()["integrity"] == ["ok"]
    for table, sql in TABLES.items():
        assert _dump(path, sql) == rows[table], table
    assert _dump(path, "PRAGMA foreign_key_check") == []
    assert _dump(path, "SELECT count(*) FROM memories WHERE rowid <> seq") == [(0,)]
    assert _dump(path, "SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'memories' ORDER BY 1") == [
        s for s in stats if s[0] != "memories_seq"
    ]
    assert sorted(_dump(path, samples_sql)) == samples  # the planner's samples too
    schema = dict(_dump(path, "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL"))
    assert "seq INTEGER PRIMARY KEY" in schema["memories"]
    assert "memories_seq" not in schema and "memories_seq_ai" not in schema
    assert "memories_new" not in schema
    names = {
        r[0] for r in _dump(path, "SELECT name FROM sqlite_master WHERE tbl_name = 'memories'")
    }
    assert names == {
        "memories",
        "sqlite_autoindex_memories_1",  # id's, the key the foreign keys name
        "memories_active_key",
        "memories_scope_created",
        "memories_scope_id",
        "memories_session",
        "memories_scope_key",
        "memories_supersedes",
        "memories_scope_hash",
    }

    with hivemem.open(path, embedder="none") as store:
        mem = store.scope("team-a")
        assert store._backend._conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
        assert mem.get("deploy-day").content == "Deploys go out on Tuesdays."
        one = mem.add_episode("User: one more turn", "s0", "user")
        two = mem.add_episodes([{"content": "and two", "session_id": "s0", "role": "u"}] * 2)
        first = rows["memories"][0][0]
        mem.purge(first)  # a delete still cascades to its chunks and links
    after = _dump(path, "SELECT id, seq FROM memories ORDER BY seq")
    assert after[-3:] == [
        (one.id, seqs[-1] + 1),
        (two[0].id, seqs[-1] + 2),
        (two[1].id, seqs[-1] + 3),
    ]
    assert _dump(path, f"SELECT count(*) FROM chunks WHERE memory_id = '{first}'") == [(0,)]
    assert _dump(path, "PRAGMA foreign_key_check") == []


def test_a_failed_rebuild_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    """The rebuild is one transaction: a failure inside it rolls every step back, and
    the connection has its foreign keys on again."""
    path = tmp_path / "old.db"
    rows = _before(path, monkeypatch)
    conn = sqlite_driver.connect(str(path), isolation_level=None)
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("CREATE TABLE memories_new (x)")  # the rebuild's name, taken
        with pytest.raises(sqlite_driver.OperationalError):
            migrations.apply(conn, "2026-11-28T00:00:00Z")
        assert conn.execute("PRAGMA foreign_keys").fetchone() == (1,)
        assert SEQ not in migrations.applied(conn)
    finally:
        conn.close()
    for table, sql in TABLES.items():
        assert _dump(path, sql) == rows[table], table
