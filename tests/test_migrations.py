"""Upgrades from earlier schemas (LESSONS 7: no silent data loss on upgrade).

A database is built by the first migration alone, with a raw driver connection, and
filled with SQL as that schema allows; ``hivemem.open`` must upgrade it keeping every
field of every row, backfill the derived tables, and refuse what it cannot open (a newer
schema, a file that is not SQLite) without touching it. A failing migration rolls back.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

import hivemem
from hivemem import Conflict, Status, StoreError
from hivemem import text as textmod
from hivemem.store.protocols import SessionInfo
from hivemem.store.sqlite import migrations
from hivemem.store.sqlite.backend import sqlite_driver

NOW = "2025-03-01T09:00:00.000000Z"
FIRST_THREE = ["0001_memories", "0002_chunks_fts", "0003_sessions"]


def _t(day: int, hour: int = 12) -> str:
    return f"2025-02-{day:02d}T{hour:02d}:00:00.000000Z"


def _connect(path: Path):
    return sqlite_driver.connect(str(path), isolation_level=None)


def _row(**fields) -> dict:
    row = {
        "kind": "fact",
        "type": "context",
        "source": "manual",
        "status": "active",
        "valid_from": fields.get("created_at", _t(1)),
        "created_at": _t(1),
        "updated_at": fields.get("created_at", _t(1)),
        **fields,
    }
    row["content_hash"] = textmod.content_hash(row["content"])
    return row


LONG_NOTE = (
    "\n\n".join(
        f"Paragraph {i} of the runbook: restart the ingest workers, check the queue depth, "
        f"and page the on-call engineer if lag exceeds {i} minutes." * 3
        for i in range(12)
    )
    + "\n\nThe final paragraph mentions the word quetzal exactly once."
)

LEGACY_ROWS = [
    # A supersede chain of three versions under one key, every column filled.
    _row(
        id="00000000-0000-7000-8000-000000000001",
        scope="team-a",
        type="lesson",
        key="deploy-day",
        content="Deploy on Fridays (zephyr).",
        status="superseded",
        valid_from=_t(1),
        valid_until=_t(2),
        created_at=_t(1),
        updated_at=_t(2),
        updated_by="agent-x",
        confidence=0.9,
        decay_rate=0.02,
        access_count=3,
        last_accessed=_t(2, 8),
        event_time=_t(1, 7),
        tags=json.dumps(["ops", "deploy"]),
        attributes=json.dumps({"origin": "retro", "weight": 2, "ü": "ñ"}),
        source_ids=json.dumps([]),
        category="project",
    ),
    _row(
        id="00000000-0000-7000-8000-000000000002",
        scope="team-a",
        type="lesson",
        key="deploy-day",
        content="Never deploy on Fridays (zephyr revised).",
        status="superseded",
        valid_from=_t(2),
        valid_until=_t(3),
        supersedes_id="00000000-0000-7000-8000-000000000001",
        supersede_reason="outage on a Friday",
        supersede_kind="hard",
        created_at=_t(2),
        updated_at=_t(3),
        tags=json.dumps(["ops"]),
        category="project",
    ),
    _row(
        id="00000000-0000-7000-8000-000000000003",
        scope="team-a",
        type="lesson",
        key="deploy-day",
        content="Never deploy on Fridays or before holidays (zephyr final).",
        valid_from=_t(3),
        supersedes_id="00000000-0000-7000-8000-000000000002",
        supersede_reason="minor correction",
        supersede_kind="soft",
        created_at=_t(3),
        confidence=0.75,
        decay_rate=0.0,
        access_count=11,
        last_accessed=_t(4),
        tags=json.dumps(["ops"]),
        attributes=json.dumps({"reviewed": True}),
        category="project",
    ),
    # Episodes of two sessions (one in another scope).
    _row(
        id="00000000-0000-7000-8000-000000000004",
        scope="team-a",
        kind="episode",
        type="historical",
        source="conversation",
        content="User: the kestrel dashboard is down again (ticket wombat)",
        session_id="sess-1",
        role="user",
        created_at=_t(5, 9),
    ),
    _row(
        id="00000000-0000-7000-8000-000000000005",
        scope="team-a",
        kind="episode",
        type="historical",
        source="conversation",
        content="Agent: restarted the kestrel dashboard",
        session_id="sess-1",
        role="agent",
        created_at=_t(5, 10),
    ),
    _row(
        id="00000000-0000-7000-8000-000000000006",
        scope="team-b",
        kind="episode",
        type="historical",
        source="conversation",
        content="User: remind me about the marmot report",
        session_id="sess-2",
        role="user",
        created_at=_t(6),
        source_ids=json.dumps([]),
    ),
    # Deleted, expired, archived, long multi-chunk, and a minimal row left to defaults.
    _row(
        id="00000000-0000-7000-8000-000000000007",
        scope="team-a",
        content="Old wifi password hint: pelican",
        status="deleted",
        valid_until=_t(7),
        created_at=_t(6),
        updated_at=_t(7),
        category="credential",
    ),
    _row(
        id="00000000-0000-7000-8000-000000000008",
        scope="team-a",
        source="task_completion",
        content="Finished the narwhal migration task",
        created_at=_t(6),
        expires_at=_t(13),
        category="task",
    ),
    _row(
        id="00000000-0000-7000-8000-000000000009",
        scope="team-a",
        kind="summary",
        type="historical",
        source="consolidation",
        content="Summary of January: the axolotl project shipped",
        status="archived",
        source_ids=json.dumps(
            ["00000000-0000-7000-8000-000000000004", "00000000-0000-7000-8000-000000000005"]
        ),
    ),
    _row(
        id="00000000-0000-7000-8000-000000000010",
        scope="team-a",
        kind="note",
        type="reference",
        source="file_index",
        content=LONG_NOTE,
        key="notes/runbook.md",
        attributes=json.dumps({"path": "notes/runbook.md", "mtime": 1700000000.5}),
    ),
    {
        "id": "00000000-0000-7000-8000-000000000011",
        "scope": "team-b",
        "kind": "fact",
        "type": "identity",
        "content": "I am the ocelot agent",
        "content_hash": textmod.content_hash("I am the ocelot agent"),
        "source": "manual",
        "status": "active",
        "valid_from": _t(8),
        "created_at": _t(8),
        "updated_at": _t(8),
    },
]

# The word only each memory holds, and whether plain search may return it.
UNIQUE_WORDS = {
    "00000000-0000-7000-8000-000000000004": "wombat",
    "00000000-0000-7000-8000-000000000007": "pelican",
    "00000000-0000-7000-8000-000000000008": "narwhal",
    "00000000-0000-7000-8000-000000000009": "axolotl",
    "00000000-0000-7000-8000-000000000010": "quetzal",
}


def _legacy_database(path: Path) -> None:
    conn = _connect(path)
    try:
        assert migrations.apply(conn, NOW, upto="0001_memories") == ["0001_memories"]
        conn.execute("BEGIN")
        for row in LEGACY_ROWS:
            columns = ", ".join(row)
            marks = ", ".join("?" for _ in row)
            conn.execute(f"INSERT INTO memories ({columns}) VALUES ({marks})", list(row.values()))
        conn.execute("COMMIT")
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "chunks" not in tables and "sessions" not in tables
    finally:
        conn.close()


def _dump(path: Path, sql: str) -> list[tuple]:
    conn = _connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _memories(path: Path) -> list[tuple]:
    return _dump(path, "SELECT * FROM memories ORDER BY id")


def _applied(path: Path) -> list[tuple]:
    return _dump(path, "SELECT seq, name, applied_at FROM migrations ORDER BY seq")


def test_the_first_migrations_keep_their_names():
    assert migrations.known_names()[:3] == FIRST_THREE


def test_upgrade_from_the_first_schema_keeps_every_row_and_backfills(tmp_path):
    path = tmp_path / "legacy.db"
    _legacy_database(path)
    before = _memories(path)
    assert len(before) == len(LEGACY_ROWS)

    # No access tracking: the reads below leave every row exactly as it was written.
    # No embedder: the searches below are about the backfilled keyword index.
    settings = hivemem.Settings(track_access=False, neighbour_weight=0, window_weight=0)
    with hivemem.open(path, settings=settings, embedder="none") as store:
        assert store.health.schema_version() == migrations.known_names()
        health = store.health.health()
        # Every backfilled chunk waits for a vector (embedded once an embedder is set).
        assert health["chunks_awaiting_vectors"] == health["vectors"] + len(
            _dump(path, "SELECT id FROM chunks")
        )
        team_a, team_b = store.scope("team-a"), store.scope("team-b")
        sessions = team_a.sessions() + team_b.sessions()
        chain = team_a.history("deploy-day")
        found = {
            mid: [h.memory.id for h in team_a.search(words)] for mid, words in UNIQUE_WORDS.items()
        }
        expired_found = [h.memory.id for h in team_a.search("narwhal", include_expired=True)]
        zephyr = [(h.memory.id, h.memory.status) for h in team_a.search("zephyr")]
        ocelot = [h.memory.id for h in team_b.search("ocelot")]
        marmot_in_a = team_a.search("marmot")
        gone = team_a.get("00000000-0000-7000-8000-000000000007")

    # Every column of every row, exactly as written.
    assert _memories(path) == before
    assert [r[0] for r in before] == sorted(r["id"] for r in LEGACY_ROWS)

    # Chunks: every memory (any status) chunked exactly as the chunker would today.
    chunks = _dump(path, "SELECT memory_id, seq, text FROM chunks ORDER BY memory_id, seq")
    expected_chunks = [
        (row["id"], seq, piece)
        for row in sorted(LEGACY_ROWS, key=lambda r: r["id"])
        for seq, piece in enumerate(textmod.chunk(row["content"]))
    ]
    assert chunks == expected_chunks
    assert len(textmod.chunk(LONG_NOTE)) > 1
    assert health["integrity"] == ["ok"]
    assert health["fts_ok"] is True
    assert health["memories_without_chunks"] == 0
    assert health["broken_supersede_links"] == 0

    # Keyword search reaches the backfilled rows; deleted and expired stay hidden.
    assert found == {
        "00000000-0000-7000-8000-000000000004": ["00000000-0000-7000-8000-000000000004"],
        "00000000-0000-7000-8000-000000000007": [],
        "00000000-0000-7000-8000-000000000008": [],
        "00000000-0000-7000-8000-000000000009": [],  # archived is not searched by default
        "00000000-0000-7000-8000-000000000010": ["00000000-0000-7000-8000-000000000010"],
    }
    assert expired_found == ["00000000-0000-7000-8000-000000000008"]
    # Superseded versions stay searchable, below the current one.
    assert zephyr[0] == ("00000000-0000-7000-8000-000000000003", Status.ACTIVE)
    assert sorted(zephyr[1:]) == [
        ("00000000-0000-7000-8000-000000000001", Status.SUPERSEDED),
        ("00000000-0000-7000-8000-000000000002", Status.SUPERSEDED),
    ]
    assert ocelot == ["00000000-0000-7000-8000-000000000011"]
    assert marmot_in_a == []
    assert gone.status is Status.DELETED

    # The supersede chain reads as before.
    assert [(m.id, m.status, m.supersedes_id) for m in chain] == [
        ("00000000-0000-7000-8000-000000000001", Status.SUPERSEDED, None),
        (
            "00000000-0000-7000-8000-000000000002",
            Status.SUPERSEDED,
            "00000000-0000-7000-8000-000000000001",
        ),
        (
            "00000000-0000-7000-8000-000000000003",
            Status.ACTIVE,
            "00000000-0000-7000-8000-000000000002",
        ),
    ]

    # Sessions are backfilled from the episodes.
    utc = lambda text: datetime.fromisoformat(text).astimezone(UTC)  # noqa: E731
    assert sessions == [
        SessionInfo("team-a", "sess-1", utc(_t(5, 9)), utc(_t(5, 10)), 2, None),
        SessionInfo("team-b", "sess-2", utc(_t(6)), utc(_t(6)), 1, None),
    ]


def test_upgraded_rows_read_back_field_for_field(tmp_path):
    path = tmp_path / "legacy.db"
    _legacy_database(path)
    with hivemem.open(path, settings=hivemem.Settings(track_access=False)) as store:
        loaded = {m.id: m.to_dict() for m in store.iter_memories()}
    utc = lambda text: None if text is None else datetime.fromisoformat(text).isoformat()  # noqa: E731
    for row in LEGACY_ROWS:
        memory = loaded[row["id"]]
        expected = {
            "id": row["id"],
            "scope": row["scope"],
            "kind": row["kind"],
            "type": row["type"],
            "key": row.get("key"),
            "content": row["content"],
            "content_hash": row["content_hash"],
            "source": row["source"],
            "status": row["status"],
            "valid_from": utc(row["valid_from"]),
            "valid_until": utc(row.get("valid_until")),
            "supersedes_id": row.get("supersedes_id"),
            "supersede_reason": row.get("supersede_reason"),
            "supersede_kind": row.get("supersede_kind"),
            "updated_by": row.get("updated_by"),
            "confidence": row.get("confidence", 1.0),
            "decay_rate": row.get("decay_rate", 0.0),
            "access_count": row.get("access_count", 0),
            "last_accessed": utc(row.get("last_accessed")),
            "event_time": utc(row.get("event_time")),
            "created_at": utc(row["created_at"]),
            "updated_at": utc(row["updated_at"]),
            "expires_at": utc(row.get("expires_at")),
            "session_id": row.get("session_id"),
            "role": row.get("role"),
            "tags": json.loads(row.get("tags", "[]")),
            "attributes": json.loads(row.get("attributes", "{}")),
            "source_ids": json.loads(row.get("source_ids", "[]")),
            "category": row.get("category", "general"),
        }
        assert memory == expected


def test_write_rules_hold_on_upgraded_data(tmp_path):
    path = tmp_path / "legacy.db"
    _legacy_database(path)
    with hivemem.open(path) as store:
        mem = store.scope("team-a")
        with pytest.raises(Conflict) as err:
            mem.save("Deploy whenever", key="deploy-day")
        assert err.value.current.id == "00000000-0000-7000-8000-000000000003"
        newer = mem.save("Deploy whenever", key="deploy-day", supersede_reason="CI is solid")
        assert newer.supersedes_id == "00000000-0000-7000-8000-000000000003"
        assert newer.type.value == "lesson"  # types never change unless asked
        mem.add_episode("User: kestrel is fine now", session_id="sess-1", role="user")
        assert [(s.session_id, s.episode_count) for s in mem.sessions()] == [("sess-1", 3)]
        assert [m.id for m in mem.list(key="deploy-day")] == [newer.id]


def test_opening_twice_applies_nothing_new(tmp_path):
    path = tmp_path / "legacy.db"
    _legacy_database(path)
    hivemem.open(path, settings=hivemem.Settings(track_access=False)).close()
    applied = _applied(path)
    rows = _memories(path)
    chunks = _dump(path, "SELECT * FROM chunks ORDER BY id")
    assert [name for _, name, _ in applied] == migrations.known_names()

    hivemem.open(path, settings=hivemem.Settings(track_access=False)).close()
    assert _applied(path) == applied
    assert _memories(path) == rows
    assert _dump(path, "SELECT * FROM chunks ORDER BY id") == chunks
    conn = _connect(path)
    try:
        assert migrations.apply(conn, NOW) == []
    finally:
        conn.close()


def test_a_fresh_store_records_every_migration(store):
    assert store.health.schema_version() == migrations.known_names()


@pytest.mark.parametrize("upgraded", [False, True], ids=["at-0001", "current"])
def test_a_database_from_a_newer_hivemem_is_refused_untouched(tmp_path, upgraded):
    path = tmp_path / "future.db"
    _legacy_database(path)
    if upgraded:
        hivemem.open(path).close()
    conn = _connect(path)
    conn.execute(
        "INSERT INTO migrations (name, applied_at) VALUES ('9999_from_the_future', ?)", (NOW,)
    )
    conn.close()
    applied, rows = _applied(path), _memories(path)

    with pytest.raises(StoreError) as err:
        hivemem.open(path)
    assert "newer HiveMem" in err.value.message
    assert "9999_from_the_future" in err.value.message
    assert str(path) in err.value.message
    # Refused before any pending migration ran.
    assert _applied(path) == applied
    assert _memories(path) == rows


@pytest.mark.parametrize(
    "content",
    [
        bytes(random.Random(7).randrange(256) for _ in range(8192)),
        b"SQLite format 3\x00" + bytes(random.Random(8).randrange(256) for _ in range(8192)),
        b'{"memories": []}\n',
    ],
    ids=["random-bytes", "sqlite-header-then-garbage", "json-text"],
)
def test_a_file_that_is_not_a_hivemem_database_gives_store_error(tmp_path, content):
    path = tmp_path / "not-a-db.bin"
    path.write_bytes(content)
    with pytest.raises(StoreError) as err:
        hivemem.open(path)
    assert err.value.message == (f"cannot open {path} as a HiveMem store: file is not a database")
    assert path.read_bytes() == content  # never "repaired" into an empty store
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-db.bin"]


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        ("python", RuntimeError),
        ("sql", StoreError),
    ],
)
def test_a_failing_migration_rolls_back_to_the_previous_one(tmp_path, failure, error):
    path = tmp_path / "legacy.db"
    _legacy_database(path)
    before = _memories(path)
    name = "9998_test_failing_migration"

    def failing(conn) -> None:
        conn.execute("CREATE TABLE half_done (x INTEGER)")
        conn.execute("UPDATE memories SET content = 'clobbered'")
        conn.execute("DELETE FROM chunks")
        if failure == "python":
            raise RuntimeError("migration bug")
        conn.execute("ALTER TABLE no_such_table ADD COLUMN y TEXT")

    migrations.migration(name)(failing)
    try:
        with pytest.raises(error):
            hivemem.open(path)
        # The earlier pending migrations committed one by one; the failing one left nothing.
        assert [n for _, n, _ in _applied(path)] == migrations.known_names()[:-1]
        tables = {r[0] for r in _dump(path, "SELECT name FROM sqlite_master")}
        assert "half_done" not in tables
        assert _memories(path) == before
        assert _dump(path, "SELECT COUNT(DISTINCT memory_id) FROM chunks") == [(len(before),)]
    finally:
        migrations.MIGRATIONS[:] = [m for m in migrations.MIGRATIONS if m.name != name]
    assert name not in migrations.known_names()

    with hivemem.open(path) as store:  # without the bad migration the file opens fine
        assert store.health.schema_version() == migrations.known_names()
        assert store.health.health()["integrity"] == ["ok"]


def test_backfilled_sessions_agree_with_live_writes(tmp_path):
    event_time, created_at = "2024-12-24T18:00:00.000000Z", _t(9)
    path = tmp_path / "legacy.db"
    conn = _connect(path)
    migrations.apply(conn, NOW, upto="0001_memories")
    row = _row(
        id="00000000-0000-7000-8000-000000000099",
        scope="team-a",
        kind="episode",
        type="historical",
        source="import",
        content="User: we met on Christmas Eve",
        session_id="sess-x",
        role="user",
        event_time=event_time,
        created_at=created_at,
    )
    conn.execute(
        f"INSERT INTO memories ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})",
        list(row.values()),
    )
    conn.close()
    with hivemem.open(path) as store:
        backfilled = store.scope("team-a").sessions()
    with hivemem.open(tmp_path / "live.db") as store:
        mem = store.scope("team-a")
        mem.add_episode("User: we met on Christmas Eve", "sess-x", "user", event_time=event_time)
        live = mem.sessions()
    assert [(s.started_at, s.last_event_at) for s in backfilled] == [
        (s.started_at, s.last_event_at) for s in live
    ]
