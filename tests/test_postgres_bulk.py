"""PostgreSQL's bulk vector load (``PgVectorIndex.bulk``): a flush of many queued chunks
into an empty vector table drops the HNSW index, stores the vectors by binary COPY and
builds the index once. It gives the incremental path's vectors and answers; a kill -9
between its steps leaves a store that ``doctor`` flags and ``doctor --repair`` or
``reindex`` fixes; while the index is missing no search scans every tenant."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime

import numpy as np
import psycopg
import pytest
from click.testing import CliRunner

import hivemem
from hivemem import Query, Settings
from hivemem.frontends.cli import main
from hivemem.lifecycle.copying import copy_store
from hivemem.store.postgres import vectors as pgvectors
from hivemem.store.postgres.scope_indexes import ScopeIndexes
from test_backends_postgres import _seed_vectors

WORDS = [
    *("heron", "lake", "deploy", "staging", "tea", "coffee", "running", "Lisbon", "orchid"),
    *("backup", "database", "Tuesday", "Frankfurt", "espresso", "Helm", "chart", "Grafana"),
    *("alert", "pager", "rota", "invoice", "budget", "roadmap"),
]
QUESTIONS = ["heron lake", "deploy staging database", "tea coffee espresso", "pager rota"]
QUIET = Settings(embed_in_background=False)


def _episodes(n: int, seed: int) -> list[dict[str, str]]:
    rng = np.random.default_rng(seed)
    return [
        {
            "content": " ".join(rng.choice(WORDS, size=8)) + f" note {i}",
            "session_id": f"s{i // 20}",
            "role": "user",
        }
        for i in range(n)
    ]


def _load(url: str, clock) -> None:
    """Two tenants' memories without an embedder: every chunk queued for its vector."""
    with hivemem.open(url, embedder="none", clock=clock) as store:
        store.scope("team-a").add_episodes(_episodes(240, 1))
        store.scope("team-b").add_episodes(_episodes(80, 2))


def _answers(store: hivemem.Store) -> list[list[tuple[str, float]]]:
    """The vector lane's answers (memory, similarity) to each question in each tenant
    (the lane itself: a hybrid search would also see the access counts the first
    searches bumped)."""
    indexer, now = store.indexer, datetime(2030, 1, 1, tzinfo=UTC)
    return [
        [
            (m.memory_id, round(m.similarity, 6))
            for m in store.vectors.search(
                [scope], indexer.embed_query(q), Query(text=q), 10, now, indexer.identity
            )
        ]
        for scope in ("team-a", "team-b")
        for q in QUESTIONS
    ]


def _vectors(url: str) -> dict[int, bytes]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT chunk_id, embedding::text FROM chunk_vectors").fetchall()
    return dict(rows)


def test_bulk_flush_stores_the_incremental_vectors_and_answers(pg_url, clock, monkeypatch):
    monkeypatch.setattr(pgvectors, "EXACT_MAX", 50)  # both tenants go through HNSW
    _load(pg_url, clock)
    monkeypatch.setattr(pgvectors, "BULK_MIN", 10**9)  # one by one into the index
    with hivemem.open(pg_url, embedder="hash", clock=clock, settings=QUIET) as store:
        assert store.flush() == 320
        assert store.vectors.last_build is None
        incremental, stored = _answers(store), _vectors(pg_url)
        monkeypatch.setattr(pgvectors, "BULK_MIN", 100)
        assert store.reindex(force=True) == 320  # the table emptied: the bulk path
        build = store.vectors.last_build
        assert build is not None and build["vectors"] == 320
        assert not store.vectors.index_missing()
        assert _vectors(pg_url) == stored
        assert _answers(store) == incremental
        assert all(incremental)
        # a table already holding vectors takes a small load one by one
        store.scope("team-a").add_episodes(_episodes(150, 3))
        store.vectors.last_build = None
        assert store.flush() == 150
        assert store.vectors.last_build is None


def test_bulk_copy_into_postgres_builds_the_index_once(tmp_path, pg_url, clock, monkeypatch):
    monkeypatch.setattr(pgvectors, "BULK_MIN", 100)
    src = tmp_path / "src.db"
    # The keyword-ties rule counts ties on a fixed page now (pipeline.tie_page: 13 ties,
    # factor 0.3 on both backends), but with the keyword lane down-weighted the order
    # rests on the vector lane's min-max, whose low end is each backend's weakest
    # candidate (SQLite re-scores a binary-KNN pool, pgvector its own plan): "pager
    # rota" then orders two hits differently. Off here, so the orders compared are the
    # copy's, not the two vector plans' weakest candidates.
    same = Settings(keyword_ties=0)
    with hivemem.open(src, embedder="hash", clock=clock, settings=same) as store:
        store.scope("team-a").add_episodes(_episodes(200, 4))
        store.flush()
        mem = store.scope("team-a")
        expected = [[r.memory.id for r in mem.search(q, limit=5)] for q in QUESTIONS]
    with (
        hivemem.open(src, embedder="hash", clock=clock, settings=same) as source,
        hivemem.open(pg_url, embedder="hash", clock=clock, settings=same) as dst,
    ):
        report = copy_store(source, dst)
        assert report.vectors == 200
        assert not dst.vectors.index_missing()
        found = [[r.memory.id for r in dst.scope("team-a").search(q, limit=5)] for q in QUESTIONS]
    assert found == expected


_SLOW_FLUSH = """
import sys, time
import hivemem
from hivemem import Settings
from hivemem.providers.embed import HashEmbedder
from hivemem.store.postgres import vectors
vectors.BULK_MIN = 10
fast = HashEmbedder.embed_batch
def slow(self, texts):
    time.sleep(0.1)
    return fast(self, texts)
HashEmbedder.embed_batch = slow
# a short claim: the killed process's claims expire quickly (a live node waits them out)
settings = Settings(embed_in_background=False, embed_batch_size=8, embed_claim_s=1)
with hivemem.open(sys.argv[1], embedder="hash", settings=settings) as store:
    store.flush()
"""


def _kill_mid_bulk(url: str) -> None:
    """A real process flushing in bulk, killed -9 once the index is dropped and some
    vectors are stored (between the steps)."""
    child = subprocess.Popen([sys.executable, "-c", _SLOW_FLUSH, url])
    try:
        deadline = time.monotonic() + 60
        with psycopg.connect(url, autocommit=True) as conn:
            while time.monotonic() < deadline:
                if conn.execute("SELECT to_regclass('chunk_vectors')").fetchone()[0]:
                    stored = conn.execute("SELECT COUNT(*) FROM chunk_vectors").fetchone()[0]
                    index = conn.execute("SELECT to_regclass('chunk_vectors_hnsw')").fetchone()
                    if stored >= 16 and index[0] is None:
                        break
                assert child.poll() is None, "the flush ended before it could be killed"
                time.sleep(0.05)
            else:
                pytest.fail("the bulk load never reached its COPY step")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=30)


def _doctor(url: str, *extra: str) -> dict:
    done = CliRunner().invoke(main, ["--db", url, "doctor", "--json", *extra])
    return json.loads(done.stdout)


@pytest.mark.parametrize("fix", ["doctor --repair", "reindex"])
def test_a_bulk_load_killed_between_its_steps_is_flagged_and_fixed(fix, pg_url, clock, monkeypatch):
    monkeypatch.setenv("HIVEMEM_EMBEDDER", "hash")
    monkeypatch.setattr(pgvectors, "EXACT_MAX", 10)  # the first 16 vectors make a big scope
    # The builds a search or the worker ask for in the background are held off, so
    # the fix below has the work to do (tests/test_postgres_scope_vectors.py has them).
    monkeypatch.setattr(ScopeIndexes, "want", lambda self, scope: None)
    _load(pg_url, clock)
    _kill_mid_bulk(pg_url)
    found = _doctor(pg_url)
    checks = {c["name"]: c for c in found["checks"]}
    assert not found["ok"] and not checks["indexes"]["ok"]
    assert "no HNSW index of its own" in checks["indexes"]["detail"]
    assert "doctor --repair" in checks["indexes"]["fix"]
    with hivemem.open(pg_url, embedder="hash", settings=QUIET) as store:
        assert store.vectors.index_missing()
        # searches go on meanwhile (exact scans of the scope)
        assert store.scope("team-a").search("heron lake", limit=5)
    if fix == "reindex":
        done = CliRunner().invoke(main, ["--db", pg_url, "reindex", "--json"])
        assert done.exit_code == 0, done.output
    else:
        repaired = _doctor(pg_url, "--repair")
        assert repaired["repair"]["vector_index_built"] is True
    with hivemem.open(pg_url, embedder="hash", settings=QUIET) as store:
        assert not store.vectors.index_missing()
        store.flush()  # what the killed flush left queued
        assert store.vectors.count() == 320
        assert store.vectors.pending_count() == 0
    assert _doctor(pg_url)["ok"]


def test_without_the_index_every_scope_is_scanned_exactly_through_its_btree(pg_url, monkeypatch):
    monkeypatch.setattr(pgvectors, "EXACT_MAX", 1000)
    with hivemem.open(pg_url, embedder="none") as store:
        # "big" is most of the table: the planner's own choice for it is a Seq Scan
        _seed_vectors(store, {"big": 3000, "small": 300, "other": 1500})
        index = store.vectors
        vector = np.full(64, 0.125, dtype=np.float32)
        now = datetime(2026, 1, 2, tzinfo=UTC)
        # The exact answer, by cosine distance in numpy (HNSW is approximate: comparing
        # with its answer made the test flaky).
        stored = store._backend._q(
            "SELECT chunk_id, embedding::text FROM chunk_vectors WHERE scope = 'big'"
        )
        ids = [r[0] for r in stored]
        matrix = np.array([json.loads(r[1]) for r in stored])
        cosine = matrix @ vector / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(vector))
        exact = [ids[i] for i in np.argsort(-cosine, kind="stable")[:10]]
        assert index.index_missing()  # rows written straight: no scope has its index
        monkeypatch.setattr(index.scope_indexes, "want", lambda scope: None)
        plans: list[bool] = []
        plan_sql = index.plan_sql
        monkeypatch.setattr(
            index, "plan_sql", lambda s, big, f: plans.append(big) or plan_sql(s, big, f)
        )
        for scope in ("big", "small"):
            found = index.search([scope], vector, Query(text="x"), 10, now, "test:64")
            assert len(found) == 10 and all(m.memory_id.startswith(scope) for m in found)
            if scope == "big":
                assert [m.chunk_id for m in found] == exact
        assert plans == [False, False]  # no HNSW to ask: the exact plan for both
        for scope in ("big", "small"):
            sql = plan_sql(scope, False, "m.scope = %(scope)s")
            with store._backend._connection() as conn, conn.transaction():
                conn.execute(pgvectors._EXACT_SETTINGS)
                rows = conn.execute(
                    "EXPLAIN " + sql,
                    {"q": str([0.1] * 64).replace(" ", ""), "scope": scope, "k": 64},
                ).fetchall()
            plan = "\n".join(r[0] for r in rows)
            assert "Seq Scan on chunk_vectors" not in plan, plan
            assert "chunk_vectors_scope" in plan, plan


def test_a_scopes_vector_count_stops_where_the_plan_choice_no_longer_needs_it(pg_url, monkeypatch):
    """Counting a scope of 1M vectors read its whole b-tree (~130 ms each 30 s); the
    plan needs to know only whether it is above EXACT_MAX and the KNN widening whether
    it is above _KNN_MAX."""
    monkeypatch.setattr(pgvectors, "EXACT_MAX", 1000)
    monkeypatch.setattr(pgvectors, "_KNN_MAX", 500)
    with hivemem.open(pg_url, embedder="none") as store:
        _seed_vectors(store, {"big": 3000, "small": 300})
        index = store.vectors
        assert index.scope_count("big") == 1001
        assert index.scope_count("small") == 300
        vector = np.full(64, 0.125, dtype=np.float32)
        now = datetime(2026, 1, 2, tzinfo=UTC)
        found = index.search(["big"], vector, Query(text="x"), 10, now, "test:64")
        assert len(found) == 10 and all(m.memory_id.startswith("big") for m in found)
