"""The explicit insertion order (``seq``, migration 0014): session neighbours, the
consolidation cursor and the order sessions were first seen follow it on both backends,
never an implicit rowid (which VACUUM may renumber and PostgreSQL does not have). Since
0026 SQLite's ``seq`` is the table's INTEGER PRIMARY KEY, which VACUUM keeps."""

from __future__ import annotations

import hivemem
from hivemem.types import Query


def _turns(mem, session="s1", n=4):
    return [
        mem.add_episode(f"turn {i} of {session}", session_id=session, role="user") for i in range(n)
    ]


def test_neighbours_and_the_cursor_follow_seq_not_rowid(db_path, clock):
    with hivemem.open(db_path, clock=clock, embedder="none") as store:
        mem, other = store.scope("team-a"), store.scope("team-b")
        turns, gaps = [], []
        for i in range(4):
            turns.append(mem.add_episode(f"turn {i} of s1", session_id="s1", role="user"))
            gaps.append(other.add_episode(f"filler {i}", session_id="x", role="user"))
        backend = store._backend
        with backend.atomic():
            for gap in gaps:
                backend._write("DELETE FROM memories WHERE id = ?", [gap.id])
        numbered = backend._read("SELECT id, seq FROM memories ORDER BY seq", [])
        # VACUUM renumbers the rowids of a table without an INTEGER PRIMARY KEY; seq
        # is that key since 0026 (SQLite keeps it), so the gaps stay where they were.
        with backend._lock:
            backend._conn.execute("VACUUM")
        assert backend._read("SELECT id, seq FROM memories ORDER BY seq", []) == numbered
        assert [s for _, s in numbered] == [1, 3, 5, 7]
        later = mem.add_episode("turn 4 of s1", session_id="s1", role="user")
        now = clock()
        sides = backend.session_neighbours(["team-a"], [turns[1].id], Query(text="x"), now)
        assert sides == {turns[1].id: [(turns[0].id, False), (turns[2].id, True)]}
        episodes = backend.maintenance.episodes("team-a", "s1", 0, 10)
        assert [m.id for _, m in episodes] == [*(t.id for t in turns), later.id]
        cursor = episodes[1][0]
        assert [m.id for _, m in backend.maintenance.episodes("team-a", "s1", cursor, 10)] == [
            *(t.id for t in turns[2:]),
            later.id,
        ]


def test_sessions_are_ordered_by_first_sight(any_store):
    mem = any_store.scope("team-a")
    _turns(mem, "b-first", 1)
    _turns(mem, "a-second", 1)
    backend = any_store._backend
    with backend.atomic():
        opened = backend.maintenance.open_sessions("team-a", ["a-second"])
    assert [s.session_id for s in opened] == ["b-first"]
    assert backend.maintenance.open_sessions("team-a", ["b-first"]) == []


def test_every_insert_takes_the_next_seq(any_store):
    mem = any_store.scope("team-a")
    first = _turns(mem, "s", 3)
    rows = any_store._backend._read("SELECT id, seq FROM memories ORDER BY seq", [])
    assert [r[0] for r in rows] == [m.id for m in first]
    seqs = [r[1] for r in rows]
    assert seqs == sorted(set(seqs))
