"""The PostgreSQL search's statements: a newest-first page that equals SQLite's, and
transaction-local settings (HNSW, asynchronous commit of access counts) that never leak
into the pooled connections (docs/postgres.md)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

import numpy as np
import pytest

import hivemem
from hivemem import Query
from hivemem.store.keyword_query import KeywordQuery
from hivemem.store.postgres import vectors as pgvectors
from test_backends_postgres import both  # noqa: F401 - the fixture


@pytest.mark.parametrize("fence_max", [0, 20_000], ids=["walk", "sorted-first"])
def test_newest_first_page_is_sqlites_and_skips_filtered_memories(
    both,  # noqa: F811
    fence_max,
    monkeypatch,
):
    """Both statements of a newest-first page: few matches are sorted before their
    memories are checked, many are walked newest first (``_FENCE_MAX``)."""
    from hivemem.store.postgres import keyword as pgkeyword

    monkeypatch.setattr(pgkeyword, "_FENCE_MAX", fence_max)
    now = datetime(2026, 1, 2, tzinfo=UTC)
    for store in both:
        mem = store.scope("team-a")
        for i in range(12):
            mem.save(f"database note {i}: the database of the week")
        newest = mem.list(limit=1)[0]
        mem.delete(newest.id)
    query = Query(text="database week")
    terms = KeywordQuery.any_of(["database", "week"], newest_first=True)
    lite, pg = (s.keyword.keyword_search(["team-a"], query, terms, 3, now) for s in both)
    assert len(pg) == 3
    assert "note 11" not in " ".join(m.text for m in pg)  # deleted: never on the page
    assert [m.text for m in pg] == [m.text for m in lite]
    assert [m.bm25 for m in pg] == pytest.approx([m.bm25 for m in lite], rel=1e-9)


def _settings(store: hivemem.Store, *names: str) -> list[tuple[str, ...]]:
    pool = store._backend._pool
    seen = []
    for _ in range(pool.get_stats()["pool_size"]):
        with pool.connection() as conn:
            # current_setting(…, true): NULL where pgvector's library is not loaded yet
            row = conn.execute(
                "SELECT " + ", ".join("current_setting(%s, true)" for _ in names), names
            ).fetchone()
            seen.append(tuple(row))
    return seen


@pytest.fixture
def durable_url(pg_url):
    """pg_url whose sessions commit synchronously (the test server's default is off)."""
    import psycopg

    with psycopg.connect(pg_url, autocommit=True) as conn:
        database = conn.info.dbname
        conn.execute(f"ALTER DATABASE {database} SET synchronous_commit = on")
    yield pg_url
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f"ALTER DATABASE {database} RESET synchronous_commit")


def test_access_counts_and_hnsw_settings_stay_local(durable_url, monkeypatch):
    monkeypatch.setattr(pgvectors, "EXACT_MAX", 1)  # every scope through HNSW
    settings = hivemem.Settings(access_counts="search")
    with hivemem.open(durable_url, embedder="hash", settings=settings) as store:
        mem = store.scope("a")
        saved = mem.save("the kettle is in the second cupboard")
        store.flush()
        for _ in range(3):
            hits = mem.search("where is the kettle")
            assert [h.memory.id for h in hits] == [saved.id]
            assert "vector" in hits[0].explain.lanes  # the HNSW path ran
        assert mem.get(saved.id).access_count == 3
        vector = np.full(store.indexer.embedder.dimension, 0.1, dtype=np.float32)
        model, now = store.indexer.identity, datetime.now(UTC)
        found = store.vectors.search(["a"], vector, Query(text="x"), 5, now, model)
        assert [m.memory_id for m in found] == [saved.id]
        for commit, ef, iterative in _settings(
            store, "synchronous_commit", "hnsw.ef_search", "hnsw.iterative_scan"
        ):
            assert commit == "on"
            assert (ef, iterative) in {("40", "off"), (None, None)}


def test_the_keyword_index_merges_its_pending_list_early(pg_url):
    """A search scans GIN's pending list: it is kept to 64 kB (migration 0013)."""
    with hivemem.open(pg_url, embedder="none") as store:
        [options] = store._backend._q(
            "SELECT reloptions FROM pg_class WHERE relname = 'chunks_terms'"
        )[0]
    assert "gin_pending_list_limit=64" in options


def test_the_vector_and_entity_lanes_read_beside_the_keyword_lane(both):  # noqa: F811
    """On PostgreSQL, outside a transaction, the vector and entity lanes' reads run on
    lane threads while the keyword lane runs; on SQLite, and inside a transaction, on
    the caller's thread. Same hits either way."""
    import threading

    seen: dict[str, set[str]] = {}
    results = []
    for store in both:
        backend = store._backend
        name = "pg" if "postgresql" in store.location else "sqlite"
        threads = seen.setdefault(name, set())
        search, lane = backend.vectors.search, backend.entities.lane

        def vectors(*a, _search=search, _threads=threads, **k):
            _threads.add(("vector", threading.current_thread().name.startswith("hivemem-lane")))
            return _search(*a, **k)

        def entities(*a, _lane=lane, _threads=threads, **k):
            _threads.add(("entity", threading.current_thread().name.startswith("hivemem-lane")))
            return _lane(*a, **k)

        backend.vectors.search, backend.entities.lane = vectors, entities
        mem = store.scope("team-a")
        hits = mem.search("what does Bob drink with Alice")
        results.append([h.memory.content for h in hits])
        if name == "pg":
            with store.atomic():  # a transaction's view: the caller's thread only
                assert backend.reads_in_parallel() is False
    assert seen["pg"] == {("vector", True), ("entity", True)}
    assert seen["sqlite"] == {("vector", False), ("entity", False)}
    assert results[0] == results[1] and results[0]


def test_the_keyword_statement_is_never_prepared_so_never_given_a_generic_plan(pg_store):
    """psycopg prepares a statement on its 5th run on a connection, and PostgreSQL may
    then switch to a generic plan, blind to how common the query's terms are (at 1M
    chunks: 2.9 s instead of 1 ms). The keyword statement is planned for its values every
    time: no pooled connection holds it prepared, however often it ran."""
    mem = pg_store.scope("team-a")
    for i in range(12):
        mem.save(f"database note {i}: the database of the week")
    now = datetime(2026, 1, 2, tzinfo=UTC)
    for newest_first in (False, True):
        terms = KeywordQuery.any_of(["database", "week"], newest_first=newest_first)
        for _ in range(12):
            found = pg_store.keyword.keyword_search(["team-a"], Query(text="x"), terms, 3, now)
            assert len(found) == 3
    pool = pg_store._backend._pool
    prepared = []
    for _ in range(pool.get_stats()["pool_size"]):
        with pool.connection() as conn:
            prepared += conn.execute(
                "SELECT statement FROM pg_prepared_statements WHERE statement LIKE %s",
                ["%ts_filter(setweight%"],
            ).fetchall()
    assert prepared == []


def test_a_searchs_pool_rows_and_their_vectors_are_one_statement(pg_url):
    """``candidate_rows``: the rows, the first chunk of those a lane gave none, and the
    chunks' vectors in one round trip (three before); a vector kept in memory is not
    sent again, and the answer is the reads' it replaces."""
    with hivemem.open(pg_url, embedder="hash") as store:
        mem = store.scope("a")
        long = " ".join(f"word{n}" for n in range(900))  # several chunks
        first, second = mem.save(long), mem.save("a short note about the harbour")
        store.flush()
    with hivemem.open(pg_url, embedder="hash") as store:  # nothing kept in memory yet
        backend = store._backend
        model = store.indexer.identity
        chunks = backend.memory_chunks([first.id, second.id])
        of_first = [c.chunk_id for c in chunks if c.memory_id == first.id]
        wanted = {second.id: None, first.id: of_first[1]}
        sent: list[str] = []
        real = backend._q

        def counted(sql, params=(), **kw):
            sent.append(sql)
            return real(sql, params, **kw)

        backend._q = counted
        got = backend.candidate_rows(["a"], wanted, model)
        assert len(sent) == 1
        backend._q = real
        vectors = backend.vectors.vectors(model, [c.chunk_id for c in chunks])
        second_first = next(c.chunk_id for c in chunks if c.memory_id == second.id)
        assert [m.id for m, _ in got] == [second.id, first.id]
        assert np.array_equal(got[0][1], vectors[second_first])
        assert np.array_equal(got[1][1], vectors[of_first[1]])
        backend._q = counted
        again = backend.candidate_rows(["a"], wanted, model)  # the vectors from memory
        assert [m for m, _ in again] == [m for m, _ in got]
        assert all(np.array_equal(a[1], b[1]) for a, b in zip(again, got, strict=True))


def test_a_batch_of_vectors_checks_the_model_and_table_in_one_statement(pg_url):
    """The embedding worker's ``upsert``: the recorded model and the vector table are
    read together (one round trip a batch, two before), and the batch is stored."""
    with hivemem.open(pg_url, embedder="hash") as store:
        backend = store._backend
        vectors = backend.vectors
        mem = store.scope("a")
        store.flush()
        sent: list[str] = []
        real_q, real_x, real_upsert = backend._q, backend._x, vectors.upsert
        inside = threading.local()  # the upsert's own thread's statements only

        def q(sql, params=(), **kw):
            if getattr(inside, "on", False):
                sent.append(sql)
            return real_q(sql, params, **kw)

        def x(sql, params=()):
            if getattr(inside, "on", False):
                sent.append(sql)
            return real_x(sql, params)

        def upsert(model, items):
            inside.on = True
            try:
                return real_upsert(model, items)
            finally:
                inside.on = False

        backend._q, backend._x, vectors.upsert = q, x, upsert
        saved = mem.save("the kettle is in the second cupboard")
        store.flush()
        backend._q, backend._x, vectors.upsert = real_q, real_x, real_upsert
        reads = [s for s in sent if "meta" in s or "to_regclass" in s]
        assert len(reads) == 1, sent
        assert mem.search("where is the kettle")[0].memory.id == saved.id
        assert vectors.pending_count(["a"]) == 0


def test_array_literals_are_read_back_as_the_values_they_were_made_of(pg_url):
    """``text_array`` / ``int_array``: one string per array parameter (psycopg dumps a
    list element by element in Python); every text comes back whole, NULL is None."""
    import psycopg

    from hivemem.store.postgres import int_array, text_array

    texts = ["a", 'b"c', "d\\e", None, "", "{x,y}", " sp ", "NULL", "é∑", '\\"', "a,b", "'"]
    with psycopg.connect(pg_url) as conn:
        row = conn.execute(
            "SELECT %s::text[], %s::bigint[], %s::text[]",
            [text_array(texts), int_array([1, None, -3, 2**40]), text_array([])],
        ).fetchone()
    assert row == (texts, [1, None, -3, 2**40], [])


def test_a_kinds_filter_probes_memories_by_id_whatever_the_statistics_say(pg_url):
    """The memory filter of a keyword statement (here a save's cross-references: the
    saved text's words, kinds without episodes) is a probe by id. Before migration 0025
    the planner could prove the duplicate index's ``kind <> 'episode'`` from the kinds
    filter; with statistics read while a scope held only episodes it took that index as
    empty and scanned every note of the scope for each chunk checked (19 ms instead of
    2 for the load bench's writes: its costliest statement)."""
    import psycopg

    from hivemem.types import Kind, Status

    with hivemem.open(pg_url, embedder="hash") as store:
        mem = store.scope("a")
        mem.add_episodes(
            [
                {"content": f"turn {n} of the talk", "session_id": "s", "role": "user"}
                for n in range(300)
            ]
        )
        with store._backend._pool.connection() as conn:
            conn.execute("ANALYZE memories")  # the statistics of a scope of episodes
        for n in range(60):
            mem.save(f"load client {n % 4} write {n} marker {n * 7919}")
        caught: list[tuple[str, list]] = []
        backend = store._backend
        timed = backend._timed
        backend._timed = lambda sql, values, limit: (
            caught.append((sql, list(values))) or timed(sql, values, limit)
        )
        query = Query(
            text="load client write marker",
            kinds=(Kind.FACT, Kind.NOTE, Kind.SUMMARY, Kind.REFLECTION),
            statuses=(Status.ACTIVE,),
        )
        terms = KeywordQuery.any_of(["load", "client", "write", "marker"])
        now = datetime(2026, 11, 28, tzinfo=UTC)
        assert len(backend.keyword_search(["a"], query, terms, 20, now)) == 20
        sql, values = caught[-1]
        with psycopg.connect(pg_url, autocommit=True) as conn:
            text = psycopg.ClientCursor(conn).mogrify(sql, values)
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + text))
    assert "memories_scope_hash" not in plan, plan
    assert "memories_pkey" in plan, plan


@pytest.mark.parametrize("big", [False, True], ids=["exact", "hnsw"])
def test_the_knn_probes_each_nearest_chunk_by_key(pg_url, big):
    """The KNN statement's rows: each nearest chunk and its memory probed by primary key,
    never a join that reads every chunk of the table to hash the nearest few (the
    planner's choice at a few thousand chunks, and under the exact plan's
    ``enable_seqscan = off`` a full scan of ``chunks_pkey``)."""
    import psycopg
    from pgvector.psycopg import register_vector

    with hivemem.open(pg_url, embedder="hash") as store:
        mem = store.scope("a")
        mem.add_episodes(
            [
                {"content": f"turn {n} of the talk", "session_id": "s", "role": "user"}
                for n in range(300)
            ]
        )
        store.flush()
        index = store._backend.vectors
        vector = np.zeros(index._dimension(), dtype=np.float32)
        vector[0] = 1.0
        sql = index.plan_sql("a", big, "m.scope = %(scope)s AND m.status = ANY(%(f0)s)")
        with psycopg.connect(pg_url, autocommit=True) as conn:
            register_vector(conn)
            conn.execute("ANALYZE")
            conn.execute("SET enable_seqscan = off")
            params = {"q": vector, "scope": "a", "k": 64, "f0": ["active"]}
            plan = "\n".join(r[0] for r in conn.execute("EXPLAIN " + sql, params))
    assert "Hash Join" not in plan, plan
    assert "Index Cond: (id = nn.chunk_id)" in plan, plan
