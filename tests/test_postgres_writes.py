"""PostgreSQL writes in few round trips (``store/postgres/writes.py``): a batch of
``add_episodes`` is a handful of statements, not several per memory, and leaves exactly
the rows, chunks, entities, aliases, links and counts that one-by-one writes leave."""

from __future__ import annotations

import contextlib
import dataclasses

import psycopg
import pytest

import hivemem
from hivemem import Conflict

TURNS = [
    "Alice met Bob at Acme Corp in Lisbon on Monday",
    "Acme shipped the release and Alice approved it",  # alias of an entity new above
    "Carol joined Globex Inc last week",
    "Globex and Acme Corp signed the contract with Dave",
    "Bob and Carol visited Lisbon with Alice",
    "nothing to name here, only words about the weather",
    " ".join(f"word{i}" for i in range(700)),  # several chunks
]


def _items(prefix: str) -> list[dict[str, str]]:
    return [
        {"content": t, "session_id": f"{prefix}-s{i // 3}", "role": "user"}
        for i, t in enumerate(TURNS)
    ]


def _picture(store: hivemem.Store, scope: str) -> dict[str, list]:
    q = store._backend._q
    return {
        "memories": q(
            "SELECT content, session_id, category FROM memories WHERE scope = %s ORDER BY seq",
            [scope],
        ),
        "chunks": q(
            "SELECT m.content, c.seq, c.text, c.length, c.terms::text FROM chunks c "
            "JOIN memories m ON m.id = c.memory_id WHERE c.scope = %s ORDER BY c.id",
            [scope],
        ),
        "queued": q(
            "SELECT count(*) FROM vector_queue v JOIN chunks c ON c.id = v.chunk_id "
            "WHERE c.scope = %s",
            [scope],
        ),
        "entities": q(
            "SELECT canonical, type, name, mention_count FROM entities "
            "WHERE scope = %s ORDER BY id",
            [scope],
        ),
        "aliases": q(
            "SELECT a.alias, e.canonical FROM entity_aliases a JOIN entities e "
            "ON e.id = a.entity_id WHERE a.scope = %s ORDER BY 1, 2",
            [scope],
        ),
        "links": q(
            "SELECT m.content, e.canonical, e.type FROM memory_entities me "
            "JOIN memories m ON m.id = me.memory_id JOIN entities e ON e.id = me.entity_id "
            "WHERE m.scope = %s ORDER BY 1, 2, 3",
            [scope],
        ),
        "sessions": q(
            "SELECT session_id, episode_count FROM sessions WHERE scope = %s ORDER BY 1",
            [scope],
        ),
        "categories": q(
            "SELECT m.content, c.confidence FROM memory_categories c "
            "JOIN memories m ON m.id = c.memory_id WHERE m.scope = %s ORDER BY 1",
            [scope],
        ),
    }


def _renamed(picture: dict[str, list], old: str, new: str) -> dict[str, list]:
    return {
        k: [tuple(v.replace(old, new) if isinstance(v, str) else v for v in r) for r in rows]
        for k, rows in picture.items()
    }


def test_a_batch_leaves_what_one_by_one_writes_leave(pg_url, clock):
    with hivemem.open(pg_url, clock=clock, embedder="hash") as store:
        store.scope("one").add_episode(**_items("one")[0])  # an entity known beforehand
        store.scope("batch").add_episode(**_items("batch")[0])
        for item in _items("one")[1:]:
            store.scope("one").add_episode(**item)
        store.scope("batch").add_episodes(_items("batch")[1:])
        store.flush()  # the embedding worker's queue drained in both halves alike
        one, batch = _picture(store, "one"), _picture(store, "batch")
        # Times differ between the halves (the clock ticks per call): each entity's
        # first and last sighting are its linked memories' first and last creation.
        seen = store._backend._q(
            "SELECT e.canonical, e.first_seen = min(m.created_at), "
            "e.last_seen = max(m.created_at), e.mention_count = count(*) FROM entities e "
            "JOIN memory_entities me ON me.entity_id = e.id JOIN memories m "
            "ON m.id = me.memory_id WHERE e.scope = 'batch' GROUP BY e.id"
        )
    assert len(batch["chunks"]) > len(TURNS)  # the long turn has several chunks
    assert batch["entities"] and batch["aliases"] and batch["links"]
    assert ("acme", "acme corp") in batch["aliases"]
    assert _renamed(batch, "batch-s", "one-s") == one
    assert seen and all(row[1:] == (True, True, True) for row in seen), seen


def _counting(monkeypatch) -> list[str]:
    sent: list[str] = []
    execute = psycopg.Connection.execute
    executemany = psycopg.Cursor.executemany

    def counted(self, query, *args, **kwargs):
        sent.append(str(query))
        return execute(self, query, *args, **kwargs)

    def counted_many(self, query, params_seq, *args, **kwargs):
        params_seq = list(params_seq)
        sent.extend(str(query) for _ in params_seq)
        return executemany(self, query, params_seq, *args, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", counted)
    monkeypatch.setattr(psycopg.Cursor, "executemany", counted_many)
    return sent


def test_a_batch_of_200_turns_is_a_handful_of_statements(pg_url, clock, monkeypatch):
    with hivemem.open(pg_url, clock=clock, embedder="none") as store:
        mem = store.scope("a")
        items = [
            {
                "content": f"Turn {i}: Alice told Bob about project Zephyr{i % 7} in Oslo",
                "session_id": f"s{i // 20}",
                "role": "user",
            }
            for i in range(200)
        ]
        sent = _counting(monkeypatch)
        mem.add_episodes(items)
        monkeypatch.undo()
        writes = [s for s in sent if not s.lstrip().upper().startswith("SELECT 1")]
        # Rows, chunks and the mention lookup in one pipeline; new entities (Zephyr0-6,
        # Alice, Bob, Oslo: ~3 statements each); links; categories; 10 sessions.
        assert len(writes) <= 60, writes
        assert len(mem.list(limit=500)) == 200


def test_a_refused_row_fails_the_whole_batch_naming_the_first(pg_url, clock):
    with hivemem.open(pg_url, clock=clock, embedder="none") as store:
        mem = store.scope("a")
        a, b = mem.add_episodes(
            [
                {"content": "first", "session_id": "s1", "role": "user"},
                {"content": "second", "session_id": "s1", "role": "user"},
            ]
        )
        fresh = dataclasses.replace(a, id="m-fresh", content="fresh")
        items = [(m, [m.content], ()) for m in (fresh, b, a)]
        refused = f"a memory with id {b.id} already exists"
        with pytest.raises(Conflict, match=refused), store.atomic():
            store.memories.insert_many(items)
        assert [m.content for m in mem.list(limit=10)] == ["second", "first"]
        assert store._backend._q("SELECT count(*) FROM chunks")[0][0] == 2


def _round_trips(monkeypatch) -> list[str]:
    """What one write sends: each statement outside a pipeline, and each pipeline, is
    one round trip (BEGIN and COMMIT aside)."""
    trips: list[str] = []
    execute = psycopg.Connection.execute
    pipeline = psycopg.Connection.pipeline

    def counted(self, query, *args, **kwargs):
        if self._pipeline is None:
            trips.append(str(query)[:60])
        return execute(self, query, *args, **kwargs)

    @contextlib.contextmanager
    def counted_pipeline(self):
        outer = self._pipeline is None
        with pipeline(self) as p:
            yield p
        if outer:
            trips.append("pipeline")

    monkeypatch.setattr(psycopg.Connection, "execute", counted)
    monkeypatch.setattr(psycopg.Connection, "pipeline", counted_pipeline)
    return trips


def test_one_turn_is_two_round_trips_and_leaves_the_same_rows(pg_url, clock, monkeypatch):
    """An ``add_episode`` whose entities exist: the row, chunks and mention lookup in
    one pipeline; the mention links, categories and session count (whose results only
    the last is read) in a second (four round trips before)."""
    with hivemem.open(pg_url, clock=clock, embedder="none") as store:
        mem = store.scope("a")
        mem.add_episode("Alice flew to Oslo with Bob", "s1", "user")
        trips = _round_trips(monkeypatch)
        second = mem.add_episode("Bob and Alice liked Oslo", "s1", "user")
        monkeypatch.undo()
        assert trips == ["pipeline", "pipeline"], trips
        q = store._backend._q
        assert q("SELECT episode_count FROM sessions WHERE scope = 'a'") == [(2,)]
        assert q("SELECT canonical, mention_count FROM entities WHERE scope = 'a' ORDER BY 1") == [
            ("alice", 2),
            ("bob", 2),
            ("oslo", 2),
        ]
        assert q("SELECT COUNT(*) FROM memory_entities WHERE memory_id = %s", [second.id]) == [(3,)]
        assert q("SELECT COUNT(*) FROM memory_categories WHERE memory_id = %s", [second.id]) == [
            (1,)
        ]


def test_a_deferred_statement_that_fails_fails_its_transaction(pg_url, clock):
    """A deferred write's error is raised inside the transaction (at the next statement
    or before the commit), which then rolls back as a whole."""
    with hivemem.open(pg_url, clock=clock, embedder="none") as store:
        backend = store._backend
        with pytest.raises(psycopg.errors.UndefinedTable), backend.atomic():
            backend._x("INSERT INTO meta (key, value) VALUES ('k', 'v')")
            backend._defer("INSERT INTO no_such_table VALUES (1)")
        assert backend._q("SELECT COUNT(*) FROM meta WHERE key = 'k'") == [(0,)]
        with pytest.raises(psycopg.errors.UndefinedTable), backend.atomic():
            backend._defer("INSERT INTO meta (key, value) VALUES ('k', 'v')")
            backend._defer("INSERT INTO no_such_table VALUES (1)")
            backend._x("INSERT INTO meta (key, value) VALUES ('k2', 'v')")
        assert backend._q("SELECT COUNT(*) FROM meta WHERE key LIKE 'k%%'") == [(0,)]


def test_a_statement_deferred_in_a_rolled_back_savepoint_is_never_sent(pg_url, clock):
    with hivemem.open(pg_url, clock=clock, embedder="none") as store:
        backend = store._backend
        with backend.atomic():
            backend._defer("INSERT INTO meta (key, value) VALUES ('kept', 'v')")
            with contextlib.suppress(RuntimeError), backend.atomic():
                backend._defer("INSERT INTO meta (key, value) VALUES ('gone', 'v')")
                raise RuntimeError("the caller gives this savepoint up")
        assert backend._q("SELECT key FROM meta WHERE key IN ('kept', 'gone')") == [("kept",)]


def test_an_episode_takes_no_entry_in_the_key_supersede_and_duplicate_indexes(pg_url, clock):
    """Migrations 0024 (SQLite's twin) and 0025: those three indexes hold only the rows their
    queries can find, and the queries still use them, with a generic plan too."""
    with hivemem.open(pg_url, clock=clock, embedder="hash") as store:
        mem = store.scope("a")
        mem.add_episodes(
            [{"content": f"turn {n}", "session_id": "s", "role": "user"} for n in range(50)]
        )
        keyed = mem.save("the deploy window is Friday", key="deploy-window")
        mem.save("the deploy window is Monday", key="deploy-window", supersede_reason="moved")
        note = mem.save("a keyless note")
        q = store._backend._q
        predicates = dict(
            q(
                "SELECT indexrelid::regclass::text, pg_get_expr(indpred, indrelid) FROM pg_index "
                "WHERE indrelid = 'memories'::regclass AND indpred IS NOT NULL"
            )
        )
        assert predicates["memories_scope_key"] == "(key IS NOT NULL)"
        assert predicates["memories_supersedes"] == "(supersedes_id IS NOT NULL)"
        assert predicates["memories_scope_hash"] == "((kind <> 'episode'::text) AND (key IS NULL))"
        with store._backend._pool.connection() as conn:
            conn.execute("ANALYZE memories")
            entries = {
                name: conn.execute(
                    "SELECT count(*) FROM memories WHERE " + where  # the index's own rows
                ).fetchone()[0]
                for name, where in predicates.items()
            }
            assert entries["memories_scope_key"] == 2  # the two keyed versions alone
            assert entries["memories_supersedes"] == 1
            assert (
                entries["memories_scope_hash"] == 1
            )  # the keyless note: no episode (0025: no keyed save)
            conn.execute("SET enable_seqscan = off")
            conn.execute("SET plan_cache_mode = force_generic_plan")
            for sql, params, index in (
                (
                    "SELECT id FROM memories m WHERE m.scope = ANY(%s) AND m.key = %s",
                    [["a"], "deploy-window"],
                    "memories_scope_key",
                ),
                (
                    "SELECT id FROM memories m WHERE m.scope = ANY(%s) AND m.supersedes_id = %s",
                    [["a"], keyed.id],
                    "memories_supersedes",
                ),
                (
                    "SELECT id FROM memories m WHERE m.scope = %s AND m.content_hash = %s "
                    "AND m.kind = %s AND m.key IS NULL AND m.kind <> 'episode'",
                    ["a", note.content_hash, "fact"],
                    "memories_scope_hash",
                ),
            ):
                plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params, prepare=True))
                assert index in plan, plan
        # and the rules they serve still hold
        assert mem.get("deploy-window").content == "the deploy window is Monday"
        assert mem.save("a keyless note").id == note.id  # the duplicate found


def test_a_big_batch_refreshes_the_statistics_searches_plan_from(pg_url, clock):
    """A batch of ``ANALYZE_MIN_ROWS`` memories or more, a tenth of the table or more,
    analyzes the searched tables in its own transaction: a search right after a big
    load is planned from the new rows, not from an empty table's statistics (autovacuum
    comes a minute or more later). A small batch, or a small one beside a big table,
    leaves it to autovacuum."""
    from hivemem.store.postgres import writes

    def analyzed(store):
        return dict(
            store._backend._q(
                "SELECT relname, analyze_count FROM pg_stat_user_tables "
                "WHERE relname IN ('memories', 'chunks', 'keyword_postings')"
            )
        )

    turns = [
        {"content": f"turn {n} about the harbour", "session_id": "s", "role": "user"}
        for n in range(writes.ANALYZE_MIN_ROWS)
    ]
    with hivemem.open(pg_url, clock=clock, embedder="hash") as store:
        mem = store.scope("a")
        before = analyzed(store)
        mem.add_episodes(turns[:20])  # small: no ANALYZE
        assert analyzed(store) == before
        mem.add_episodes(turns)
        after = analyzed(store)
        assert all(after[table] == before.get(table, 0) + 1 for table in after), (before, after)
        assert (
            store._backend._q("SELECT reltuples FROM pg_class WHERE oid = 'memories'::regclass")[0][
                0
            ]
            == len(turns) + 20
        )  # the batch's own rows counted, before its commit
