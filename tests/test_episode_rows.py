"""The rows ``add_episode(s)`` writes (``write/episodes.py``, ``store/sqlite/inserts.py``,
``link_many``), made with fewer steps since issue 24 (the write path against plain
SQLite): the category is decided before the row is built, a one-chunk memory's chunk
takes the row's hash, a write looks its names up in one statement and links a new
memory by one ``executemany``. What is stored must be what the slower steps stored."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlean as sqlite3

import hivemem
from hivemem import text as textmod
from hivemem.errors import InvalidInput
from hivemem.write.categorizer import categorize
from locomo_turns import locomo_turns

TEXTS = [
    "Caroline met Melanie at the Acme Corp office in Berlin.",
    "I love hiking; my favourite trail is near Lake Tahoe.",
    "Deadline for the report is Friday, remind me.",
    "Nobody is named here.",
    "  spaces around, and a tab\tinside  ",
]


def _rows(path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT m.content, m.category, c.confidence FROM memories m "
            "JOIN memory_categories c ON c.memory_id = m.id ORDER BY m.seq"
        ).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("source", ["texts", "locomo"])
def test_each_turn_keeps_the_categorizers_category_and_confidence(tmp_path, source):
    texts = TEXTS if source == "texts" else locomo_turns()[:1500]
    half = len(texts) // 2
    with hivemem.open(tmp_path / "m.db", embedder="none") as store:
        mem = store.scope("s")
        for text in texts[:half]:
            mem.add_episode(text, "one", "user")
        returned = mem.add_episodes(
            [{"content": t, "session_id": "many", "role": "user"} for t in texts[half:]]
        )
    assert [r.category for r in returned] == [categorize(t)[0] for t in texts[half:]]
    assert _rows(tmp_path / "m.db") == [(t, *categorize(t)) for t in texts]


def test_a_chunks_hash_is_the_hash_of_its_text(tmp_path):
    long = " ".join(f"Sentence {i} tells about Berlin and Paris." for i in range(400))
    with hivemem.open(tmp_path / "m.db", embedder="none") as store:
        mem = store.scope("s")
        mem.add_episode("short turn about Lisbon", "a", "user")
        mem.add_episode(long, "a", "user")
        mem.add_episodes(
            [{"content": t, "session_id": "b", "role": "u"} for t in ("one more", long, "x y")]
        )
        mem.save("a fact, saved  with  spaces")
    conn = sqlite3.connect(tmp_path / "m.db")
    try:
        chunks = conn.execute("SELECT text, text_hash FROM chunks").fetchall()
        per_memory = conn.execute("SELECT memory_id, count(*) FROM chunks GROUP BY 1").fetchall()
    finally:
        conn.close()
    assert max(n for _, n in per_memory) > 1  # the long turn is several chunks
    assert [h for _, h in chunks] == [textmod.content_hash(t) for t, _ in chunks]


def test_a_write_looks_its_names_up_in_one_statement(tmp_path):
    fixed = datetime(2026, 11, 28, tzinfo=UTC)
    with hivemem.open(tmp_path / "m.db", clock=lambda: fixed, embedder="none") as store:
        mem = store.scope("s")
        mem.add_episode("Caroline, Melanie and Jordan met in Berlin.", "a", "user")
        statements: list[str] = []
        conn = store._backend._conn
        conn.set_trace_callback(statements.append)
        try:
            second = mem.add_episode("Caroline told Melanie about Berlin.", "a", "user")
        finally:
            conn.set_trace_callback(None)
        lookups = [s for s in statements if s.startswith("SELECT") and "FROM entities" in s]
        assert len(lookups) == 1, lookups
    conn = sqlite3.connect(tmp_path / "m.db")
    try:
        linked = conn.execute(
            "SELECT e.canonical, e.mention_count FROM memory_entities me "
            "JOIN entities e ON e.id = me.entity_id WHERE me.memory_id = ? ORDER BY 1",
            [second.id],
        ).fetchall()
    finally:
        conn.close()
    assert linked == [("berlin", 2), ("caroline", 2), ("melanie", 2)]


def test_a_new_memory_is_linked_once_to_an_entity_it_names_twice(tmp_path):
    """``@caroline`` reaches the person Caroline by her alias: one link, one count per
    memory."""
    with hivemem.open(tmp_path / "m.db", embedder="none") as store:
        mem = store.scope("s")
        mem.add_episode("Caroline went home.", "a", "user")
        mem.add_episodes(
            [
                {"content": "Caroline says hi, @caroline", "session_id": "a", "role": "u"},
                {"content": "Nobody here.", "session_id": "a", "role": "u"},
            ]
        )
    conn = sqlite3.connect(tmp_path / "m.db")
    try:
        counts = conn.execute(
            "SELECT e.canonical, e.mention_count, count(me.memory_id) FROM entities e "
            "JOIN memory_entities me ON me.entity_id = e.id GROUP BY e.id"
        ).fetchall()
    finally:
        conn.close()
    assert counts == [("caroline", 2, 2)]


def test_a_bad_item_is_named_as_before(tmp_path):
    with hivemem.open(tmp_path / "m.db", embedder="none") as store:
        mem = store.scope("s")
        good = {"content": "fine", "session_id": "a", "role": "u"}
        with pytest.raises(InvalidInput) as first:
            mem.add_episodes([{**good, "content": 3}])
        assert first.value.field == "content"
        with pytest.raises(InvalidInput) as later:
            mem.add_episodes([good, {**good, "role": "  "}])
        assert later.value.field == "items[1].role"
        with pytest.raises(InvalidInput) as unknown:
            mem.add_episodes([good, {**good, "colour": "red"}])
        assert unknown.value.field == "items[1]"
        assert mem.list() == []


def test_a_turn_asks_no_statement_to_return_rows(tmp_path):
    """``RETURNING`` costs SQLite an ephemeral table (an upsert of the session with it
    13-22 µs, without it 2): a turn of a known session naming a new entity and a known
    one is written by statements that return nothing."""
    with hivemem.open(tmp_path / "m.db", embedder="none") as store:
        mem = store.scope("s")
        mem.add_episode("Caroline went home.", "a", "user")
        statements: list[str] = []
        conn = store._backend._conn
        conn.set_trace_callback(statements.append)
        try:
            mem.add_episode("Caroline met Jordan.", "a", "user")
        finally:
            conn.set_trace_callback(None)
    assert any(s.startswith("INSERT INTO entities") for s in statements)
    assert not [s for s in statements if "RETURNING" in s]


def test_a_session_is_new_until_it_holds_an_episode(tmp_path):
    """``note_session`` says new for a session without a row and for a row of no
    episodes (a restored backup's), known otherwise; each call counts its episodes and
    widens the session's span."""
    day = datetime(2026, 11, 28, tzinfo=UTC)
    with hivemem.open(tmp_path / "m.db", embedder="none") as store:
        db = store._backend
        with db.atomic():
            assert db.note_session("s", "a", day.replace(hour=5), day.replace(hour=5), 2) is True
            assert db.note_session("s", "a", day.replace(hour=3), day.replace(hour=3), 1) is False
            assert db.note_session("s", "a", day.replace(hour=9), day.replace(hour=9), 4) is False
            db._write(
                "INSERT INTO sessions (scope, session_id, started_at, last_event_at) "
                "VALUES ('s', 'b', '2026-11-28T01:00:00Z', '2026-11-28T01:00:00Z')"
            )
            assert db.note_session("s", "b", day.replace(hour=6), day.replace(hour=6), 3) is True
            assert db.note_session("s", "b", day.replace(hour=7), day.replace(hour=7), 1) is False
    conn = sqlite3.connect(tmp_path / "m.db")
    try:
        rows = conn.execute(
            "SELECT session_id, episode_count, substr(started_at, 12, 2), "
            "substr(last_event_at, 12, 2) FROM sessions ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()
    assert rows == [("a", 7, "03", "09"), ("b", 4, "01", "07")]
