"""A scope's vector answer on PostgreSQL depends on its own rows only (issue #25).

Found on main: big scopes were searched through one HNSW index over every tenant's
vectors, filtered after the graph walk, so which of a scope's true neighbours came back
depended on what other tenants stored: another tenant writing near-duplicates of a
scope's vectors changed that scope's top 10 (a quality fault, and a side channel). Now
a big scope has an HNSW index of its own (``store/postgres/scope_indexes.py``), and is
searched exactly until it is built.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime

import numpy as np
import pytest

import hivemem
from hivemem import Query
from hivemem.store.postgres import vectors as pgvectors
from hivemem.store.postgres.scope_indexes import index_name

DIM = 64
NOW = datetime(2026, 1, 2, tzinfo=UTC)


def insert(backend, scope: str, vectors: np.ndarray) -> None:
    """``vectors`` as memories of ``scope`` (one chunk each), straight into the tables."""
    n = len(vectors)
    with backend.atomic():
        backend._x(
            "INSERT INTO memories (id, scope, kind, type, content, content_hash, source, "
            "status, valid_from, created_at, updated_at) SELECT %s || i, %s, 'fact', "
            "'context', 'row ' || i, md5(%s || i), 'test', 'active', "
            "'2026-01-01T00:00:00.000000Z', '2026-01-01T00:00:00.000000Z', "
            "'2026-01-01T00:00:00.000000Z' FROM generate_series(1, %s) i",
            [scope + "-", scope, scope, n],
        )
        backend._x(
            "INSERT INTO chunks (memory_id, scope, seq, text, text_hash, length, terms) "
            "SELECT id, scope, 0, content, content_hash, 2, ''::tsvector FROM memories "
            "WHERE scope = %s",
            [scope],
        )
        ids = [
            r[0]
            for r in backend._x(
                "SELECT id FROM chunks WHERE scope = %s ORDER BY id", [scope]
            ).fetchall()
        ]
        with backend._writer().cursor() as cur:
            cur.executemany(
                "INSERT INTO chunk_vectors (chunk_id, scope, embedding) VALUES (%s, %s, %s)",
                [(i, scope, v) for i, v in zip(ids, vectors, strict=True)],
            )
    backend._q("ANALYZE chunk_vectors")


def answers(index, queries) -> list[list[tuple[str, float]]]:
    """Scope a's top 10 for each query (a pool of 10: 20 rows asked of the index, where
    main's walk over every scope's graph answered differently for 16 of 40 random
    queries once b wrote its near-duplicates)."""
    return [
        [
            (m.memory_id, round(m.similarity, 6))
            for m in index.search(["a"], q, Query(text="x"), 10, NOW, f"test:{DIM}", pool=10)
        ]
        for q in queries
    ]


def test_a_scopes_top_10_does_not_change_when_another_scope_writes_near_duplicates(
    pg_url, monkeypatch
):
    monkeypatch.setattr(pgvectors, "EXACT_MAX", 500)  # scope a (2,000) is big
    rng = np.random.default_rng(25)
    own = rng.standard_normal((2000, DIM)).astype(np.float32)
    queries = rng.standard_normal((40, DIM)).astype(np.float32)
    with hivemem.open(pg_url, embedder="none") as store:
        backend, index = store._backend, store.vectors
        index.bind(f"test:{DIM}", DIM)
        insert(backend, "a", own)
        index.build_index()
        assert not index.index_missing()
        before = answers(index, queries)
        assert all(len(a) == 10 for a in before)
        # Another tenant: 6 near-duplicates of each of a's vectors.
        copies = np.repeat(own, 6, axis=0)
        insert(backend, "b", copies + 0.02 * rng.standard_normal(copies.shape).astype(np.float32))
        index.build_index()
        assert answers(index, queries) == before


def test_a_big_scope_is_exact_until_its_own_index_is_built_then_uses_it(pg_url, monkeypatch):
    monkeypatch.setattr(pgvectors, "EXACT_MAX", 300)
    rng = np.random.default_rng(7)
    with hivemem.open(pg_url, embedder="none") as store:
        backend, index = store._backend, store.vectors
        index.bind(f"test:{DIM}", DIM)
        insert(backend, "a", rng.standard_normal((600, DIM)).astype(np.float32))
        insert(backend, "b", rng.standard_normal((400, DIM)).astype(np.float32))
        insert(backend, "c", rng.standard_normal((100, DIM)).astype(np.float32))
        assert index.index_missing()  # doctor's finding: a and b have none yet
        queries = rng.standard_normal((5, DIM)).astype(np.float32)
        exact = answers(index, queries)  # exact, and asks for a's index in the background
        index.scope_indexes.wait(60)
        assert index.scope_indexes.has("a")
        assert answers(index, queries) == exact  # HNSW over a's 600 rows finds the same
        index.build_index()  # b's too (doctor --repair); c is small: exact, no index
        assert not index.index_missing()
        assert set(index.scope_indexes.valid()) == {index_name("a"), index_name("b")}
        with backend._connection() as conn:
            plan = "\n".join(
                r[0]
                for r in conn.execute(
                    "EXPLAIN " + index.plan_sql("a", True, "m.scope = %(scope)s"),
                    {"q": queries[0], "scope": "a", "k": 64},
                )
            )
        # a's own graph, or (the planner's choice at 600 rows) a's rows by the b-tree:
        # never b's index, never a scan of every tenant
        assert index_name("b") not in plan and "Seq Scan on chunk_vectors" not in plan, plan
        assert index_name("a") in plan or "chunk_vectors_scope" in plan, plan


@pytest.mark.parametrize("scope", ["it's", "naïve \\ scope", "x" * 200])
def test_any_scope_name_gets_an_index_the_planner_uses(pg_url, monkeypatch, scope):
    monkeypatch.setattr(pgvectors, "EXACT_MAX", 20)
    rng = np.random.default_rng(3)
    with hivemem.open(pg_url, embedder="none") as store:
        backend, index = store._backend, store.vectors
        index.bind(f"test:{DIM}", DIM)
        insert(backend, scope, rng.standard_normal((50, DIM)).astype(np.float32))
        assert index.build_index() and not index.index_missing()
        found = index.search(
            [scope], rng.standard_normal(DIM), Query(text="x"), 5, NOW, f"test:{DIM}"
        )
        assert len(found) == 5 and all(m.memory_id.startswith(scope + "-") for m in found)


def test_a_reindex_waits_for_a_background_build_instead_of_deadlocking(pg_url, monkeypatch, caplog):
    """Found at merge (``test_postgres_bulk`` failed 2 runs of 3): a re-index (or a bulk
    load's index drop) while a scope's ``CREATE INDEX CONCURRENTLY`` ran was a deadlock
    PostgreSQL broke by aborting one side: the build waits for every older transaction,
    the re-index's ``DROP`` waited for the build. Now the re-index stops this node's
    builder first and takes the build lock by polling (``ScopeIndexes.quiet``)."""
    monkeypatch.setattr(pgvectors, "EXACT_MAX", 500)
    rng = np.random.default_rng(11)
    with hivemem.open(pg_url, embedder="none") as store:
        backend, index = store._backend, store.vectors
        index.bind(f"test:{DIM}", DIM)
        insert(backend, "a", rng.standard_normal((8000, DIM)).astype(np.float32))
        caplog.set_level("WARNING", logger="hivemem.store.postgres")
        index.scope_indexes.want("a")
        for _ in range(400):  # until the build is under way
            if backend._q("SELECT COUNT(*) FROM pg_stat_progress_create_index")[0][0]:
                break
            time.sleep(0.01)
        else:
            pytest.fail("the background build never started")
        index.reset(f"test:{DIM}", DIM)  # on main: TryAgain (deadlock), or the build's
        assert not [r for r in caplog.records if "failed" in r.getMessage()]
        assert index.scope_indexes.valid() == {}  # the table was made anew, empty
