"""The keyword index's postings on PostgreSQL (``keyword_postings``, migration 0018,
``store/postgres/postings.py``): after every kind of write its rows are exactly the
postings the chunks' terms make, each term's count equals a GIN count of the chunks, and
the keyword lane's answers are the other plan's (and SQLite's) to the last bit."""

from __future__ import annotations

import io
from datetime import UTC, datetime

import pytest

import hivemem
from hivemem import Query, Settings
from hivemem.evaluation import doctor
from hivemem.lifecycle.backup import TABLES
from hivemem.lifecycle.portability import export_jsonl, import_jsonl
from hivemem.store.keyword_query import KeywordQuery
from hivemem.store.postgres import keyword as pgkeyword

TEXTS = [
    "The heron nests by the river every spring",
    "Herons and egrets fish in the shallow river",
    "Alice's notes: the river rose two metres in March",
    "Bob counts herons; Carol counts egrets",
    "A quiet week: no herons, only ducks",
    " ".join(f"filler{i % 40} heron" for i in range(600)),  # several chunks
]
DERIVED = (
    "SELECT u.lexeme, c.scope, c.id, cardinality(u.positions), c.length "
    "FROM chunks c, unnest(c.terms) u"
)


def _rows(store: hivemem.Store) -> tuple[list, list]:
    q = store._backend._q
    have = q("SELECT lexeme, scope, chunk_id, tf, length FROM keyword_postings ORDER BY 1, 2, 3")
    want = q(f"SELECT * FROM ({DERIVED}) d ORDER BY 1, 2, 3")
    return [tuple(r) for r in have], [tuple(r) for r in want]


def _agree(store: hivemem.Store) -> None:
    """The postings are the chunks', and each lexeme's count per scope is a GIN count."""
    have, want = _rows(store)
    assert have == want
    q = store._backend._q
    counted = q(
        "SELECT l.lexeme, s.scope, (SELECT COUNT(*) FROM chunks c WHERE c.scope = s.scope "
        "AND c.terms @@ quote_literal(l.lexeme)::tsquery) FROM (SELECT DISTINCT "
        "unnest(tsvector_to_array(terms)) AS lexeme FROM chunks) l, "
        "(SELECT DISTINCT scope FROM chunks) s"
    )
    postings = {
        (r[0], r[1]): r[2]
        for r in q("SELECT lexeme, scope, COUNT(*) FROM keyword_postings GROUP BY 1, 2")
    }
    for lexeme, scope, n in counted:
        assert postings.get((lexeme, scope), 0) == n, (lexeme, scope)
    assert store.health.health()["fts_ok"] is True


def test_postings_follow_every_write(pg_store):
    a, b = pg_store.scope("team-a"), pg_store.scope("team-b")
    saved = [a.save(t) for t in TEXTS]
    b.add_episodes([{"content": t, "session_id": "s1", "role": "user"} for t in TEXTS[:3]])
    _agree(pg_store)
    a.save("the heron moved upstream", key="heron-home")
    a.save("the heron moved downstream to the lake", key="heron-home", supersede_reason="it moved")
    a.correct(saved[0].id, "The heron nests by the lake every spring", reason="moved")
    a.delete(saved[1].id)  # soft: chunks stay searchable for history
    _agree(pg_store)
    a.purge(saved[2].id)
    _agree(pg_store)
    backend = pg_store._backend
    backend.rebuild_chunks([saved[3].id], 4, 1)  # re-chunked in smaller pieces
    _agree(pg_store)
    backend.rebuild_keyword_index()
    _agree(pg_store)
    b.purge_all()
    _agree(pg_store)
    assert not backend._q("SELECT 1 FROM keyword_postings WHERE scope = 'team-b'")


def test_import_and_a_truncate_keep_the_postings(pg_url, clock):
    store = hivemem.open(pg_url, clock=clock, embedder="none")
    mem = store.scope("team-a")
    for text in TEXTS:
        mem.save(text)
    out = io.StringIO()
    export_jsonl(store, out)
    mem.purge_all()
    _agree(store)
    import_jsonl(store, io.StringIO(out.getvalue()), scope="team-c")
    _agree(store)
    q = store._backend._q
    assert q("SELECT COUNT(*) FROM keyword_postings WHERE scope = 'team-c'")[0][0] > 0
    q("TRUNCATE chunks CASCADE")
    assert q("SELECT COUNT(*) FROM keyword_postings")[0][0] == 0
    store.close()


def test_doctor_finds_damaged_postings_and_repair_rebuilds_them(pg_store):
    mem = pg_store.scope("team-a")
    for text in TEXTS:
        mem.save(text)
    q = pg_store._backend._q
    q("DELETE FROM keyword_postings WHERE lexeme = 'heron'")
    q("UPDATE keyword_postings SET tf = tf + 1 WHERE lexeme = 'river'")
    check = {c.name: c for c in doctor.diagnose(pg_store).checks}["keyword_index"]
    assert not check.ok and "keyword postings differ" in check.detail
    assert "doctor --repair" in check.fix
    report = doctor.repair(pg_store)
    assert report.index_rebuilt
    _agree(pg_store)
    assert {c.name: c for c in doctor.diagnose(pg_store).checks}["keyword_index"].ok


def test_every_table_of_the_server_is_listed_for_export(pg_store):
    names = {
        r[0]
        for r in pg_store._backend._q(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"
        )
    }
    assert sorted(names - set(TABLES)) == []


@pytest.fixture
def both(tmp_path, pg_url):
    # No keyword reads between the writes (tests/test_backends_postgres.py's ``both``):
    # a save's cross-references would fill PostgreSQL's statistics cache early.
    settings = Settings(track_access=False, crossrefs_on_save=False)
    start = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    stores = [
        hivemem.open(loc, clock=lambda: start, embedder="none", settings=settings)
        for loc in (tmp_path / "m.db", pg_url)
    ]
    for store in stores:
        for scope, texts in (("team-a", TEXTS), ("team-b", TEXTS[:3] + ["ducks only"])):
            mem = store.scope(scope)
            for text in texts:
                mem.save(text)
    yield stores
    for store in stores:
        store.close()


QUERIES = [["heron"], ["heron", "river"], ["egrets", "ducks", "spring", "nothing"], ["filler3"]]


def test_plain_terms_score_from_the_postings_as_the_chunks_plan_and_sqlite(both, monkeypatch):
    """The postings plan gives the chunks, order and BM25 of the GIN plan bit for bit,
    and SQLite's within 1e-9."""
    lite, pg = both
    now = datetime(2026, 1, 2, tzinfo=UTC)
    for scopes in (["team-a"], ["team-b"], ["team-a", "team-b"]):
        for terms in QUERIES:
            query, kq = Query(text=" ".join(terms)), KeywordQuery.any_of(terms)
            fast = pg.keyword.keyword_search(scopes, query, kq, 20, now)
            with monkeypatch.context() as m:
                m.setattr(pgkeyword, "_unquote", lambda phrase: None)  # the GIN plan
                slow = pg.keyword.keyword_search(scopes, query, kq, 20, now)
            other = lite.keyword.keyword_search(scopes, query, kq, 20, now)
            assert [(c.chunk_id, c.bm25) for c in fast] == [(c.chunk_id, c.bm25) for c in slow]
            assert [c.text for c in fast] == [c.text for c in other], (scopes, terms)
            assert [c.bm25 for c in fast] == pytest.approx([c.bm25 for c in other], rel=1e-9)
            a, b = lite.keyword.term_stats(terms, scopes), pg.keyword.term_stats(terms, scopes)
            assert (b.total_chunks, dict(b.doc_freq)) == (a.total_chunks, dict(a.doc_freq))


def test_the_postings_plan_reads_no_chunk_it_does_not_return(pg_store):
    """Scored from the index: the plan touches ``chunks`` only for the page."""
    mem = pg_store.scope("team-a")
    for i in range(300):
        mem.save(f"heron sighting number {i} by the river")
    pg_store._backend._q("ANALYZE")
    now = datetime(2027, 1, 1, tzinfo=UTC)
    captured: list[tuple[str, list]] = []
    backend = pg_store._backend
    original = backend._q

    def spy(sql, params=(), **options):
        captured.append((sql, list(params)))
        return original(sql, params, **options)

    backend._q = spy
    try:
        pg_store.keyword.keyword_search(
            ["team-a"], Query(text="heron"), KeywordQuery.any_of(["heron"]), 5, now
        )
    finally:
        backend._q = original
    sql, params = next((s, p) for s, p in captured if "keyword_postings p" in s)
    plan = original("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)[0][0][0]["Plan"]

    def loops(node, name):
        own = (
            node.get("Actual Loops", 0) * node.get("Actual Rows", 0)
            if (node.get("Relation Name") == name)
            else 0
        )
        return own + sum(loops(child, name) for child in node.get("Plans", []))

    assert loops(plan, "chunks") <= 5
