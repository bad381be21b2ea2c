"""Migration 0024 (issue 24, item 3: fewer pages per write): three indexes of
``memories`` hold only the rows their queries can find, and the categorizer's confidence
lives in one B-tree. A store written before it upgrades keeping every row, and every
read those indexes serve still uses them and still answers the same."""

from __future__ import annotations

from pathlib import Path

import pytest

import hivemem
from hivemem.store.sqlite import migrations
from hivemem.store.sqlite.backend import sqlite_driver

LEAN = "0024_lean_write_indexes"


def _dump(path: Path, sql: str) -> list[tuple]:
    conn = sqlite_driver.connect(str(path), isolation_level=None)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _schema(path: Path) -> dict[str, str]:
    return dict(_dump(path, "SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL"))


def _fill(path: Path) -> dict[str, str]:
    """Episodes, a supersede chain under a key, keyless facts, a categorized save."""
    ids: dict[str, str] = {}
    with hivemem.open(path, embedder="none") as store:
        mem = store.scope("team-a")
        for i in range(5):
            mem.add_episode(f"User: turn {i} about Berlin with Alice", "sess-1", "user")
        ids["v1"] = mem.save("Deploys go out on Fridays.", key="deploy-day").id
        ids["v2"] = mem.save("Deploys go out on Tuesdays.", key="deploy-day", minor=True).id
        ids["fact"] = mem.save("The staging database is on port 5433.").id
        ids["cat"] = mem.save("Alice prefers tea.", category="preference").id
    return ids


def test_a_store_from_before_0024_upgrades_keeping_every_row(tmp_path, monkeypatch):
    path = tmp_path / "old.db"
    with monkeypatch.context() as patch:
        patch.setattr(
            migrations, "MIGRATIONS", [m for m in migrations.MIGRATIONS if m.name != LEAN]
        )
        ids = _fill(path)
        assert "WITHOUT ROWID" not in _schema(path)["memory_categories"]
    memories = _dump(path, "SELECT * FROM memories ORDER BY id")
    categories = _dump(path, "SELECT memory_id, confidence FROM memory_categories ORDER BY 1")
    assert len(categories) == len(memories) == 9

    with hivemem.open(path, embedder="none") as store:  # the upgrade, nothing read
        assert store.health.schema_version()[-1] == LEAN
        assert store.health.health()["integrity"] == ["ok"]
    assert _dump(path, "SELECT * FROM memories ORDER BY id") == memories
    assert _dump(path, "SELECT memory_id, confidence FROM memory_categories ORDER BY 1") == (
        categories
    )

    with hivemem.open(path, embedder="none") as store:
        mem = store.scope("team-a")
        # The reads those indexes serve answer as before.
        assert [m.id for m in mem.history("deploy-day")] == [ids["v1"], ids["v2"]]
        assert [m.id for m in store.memories.successors(["team-a"], ids["v1"])] == [ids["v2"]]
        assert mem.save("The staging database is on port 5433.").id == ids["fact"]  # dedup
        assert mem.get("deploy-day").id == ids["v2"]
        assert store.job_state.categories(["team-a"], [ids["cat"]]) == {ids["cat"]: 1.0}
        # And the store keeps taking writes into the rebuilt table.
        mem.add_episode("User: one more turn", "sess-1", "user")

    after = _dump(path, "SELECT memory_id, confidence FROM memory_categories ORDER BY 1")
    assert after[: len(categories)] == categories and len(after) == len(categories) + 1
    schema = _schema(path)
    assert "WITHOUT ROWID" in schema["memory_categories"]
    assert "REFERENCES memories (id) ON DELETE CASCADE" in schema["memory_categories"]
    assert "WHERE key IS NOT NULL" in schema["memories_scope_key"]
    assert "WHERE supersedes_id IS NOT NULL" in schema["memories_supersedes"]
    assert "WHERE kind <> 'episode'" in schema["memories_scope_hash"]
    assert "memory_categories_new" not in schema


def test_an_episode_enters_none_of_the_lean_indexes(tmp_path):
    """Counted in the indexes themselves (the ``dbstat`` table: entries on each index's
    leaf pages), not in the table: three episodes and one keyless fact."""
    path = tmp_path / "new.db"
    with hivemem.open(path, embedder="none") as store:
        mem = store.scope("team-a")
        for i in range(3):
            mem.add_episode(f"User: turn {i}", "sess-1", "user")
        mem.save("A keyless fact.")
    try:
        rows = _dump(
            path,
            "SELECT name, SUM(ncell) FROM dbstat WHERE pagetype = 'leaf' AND name IN "
            "('memories_scope_key', 'memories_supersedes', 'memories_scope_hash') GROUP BY name",
        )
    except sqlite_driver.OperationalError:
        pytest.skip("this SQLite has no dbstat table")
    entries = {"memories_scope_key": 0, "memories_supersedes": 0, **dict(rows)}
    assert entries == {"memories_scope_key": 0, "memories_supersedes": 0, "memories_scope_hash": 1}


@pytest.mark.parametrize(
    ("query", "index"),
    [
        ("by_key", "memories_active_key"),
        ("versions_of_key", "memories_scope_key"),
        ("successors", "memories_supersedes"),
        ("find_duplicate", "memories_scope_hash"),
    ],
)
def test_the_queries_of_the_lean_indexes_still_use_them(store, query, index):
    """Each statement as the backend runs it, traced, then planned: a partial index the
    planner cannot prove usable would turn these into walks of the scope."""
    mem = store.scope("team-a")
    first = mem.save("v1", key="k")
    mem.save("v2", key="k", supersede_reason="changed")
    backend = store._backend
    calls = {
        "by_key": lambda: backend.by_key(["team-a"], "k"),
        "versions_of_key": lambda: backend.versions_of_key(["team-a"], "k"),
        "successors": lambda: backend.successors(["team-a"], first.id),
        "find_duplicate": lambda: backend.find_duplicate("team-a", "fact", "0" * 64),
    }
    statements: list[str] = []
    backend._conn.set_trace_callback(statements.append)
    try:
        with backend.on_writer():  # through the traced connection, not the pool
            calls[query]()
    finally:
        backend._conn.set_trace_callback(None)
    [sql] = [s for s in statements if "FROM memories" in s]
    plan = " ".join(str(row) for row in backend._read(f"EXPLAIN QUERY PLAN {sql}"))
    assert index in plan, plan


def test_find_duplicate_still_finds_an_episode(store):
    """Episodes are outside the hash index; asked for one, the backend still answers."""
    mem = store.scope("team-a")
    first = mem.add_episode("User: the same words", "sess-1", "user")
    mem.add_episode("User: the same words", "sess-1", "user")
    found = store._backend.find_duplicate("team-a", "episode", first.content_hash)
    assert found is not None and found.content == "User: the same words"
