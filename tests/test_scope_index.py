"""The scope inside the keyword index (migration 0013, ``store/sqlite/termcounts.py``).

SQLite-only: these read the file's own tables. A file written on the previous schema
(0012, per-term counts per scope) is upgraded on open; per-scope document frequencies
come from the index and follow writes and purges; a MATCH confined to a small scope
finds and scores exactly what the unconfined one does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import hivemem
from hivemem import text as textmod
from hivemem.store.sqlite import migrations, termcounts
from hivemem.store.sqlite.backend import sqlite_driver

NOW = "2025-03-01T09:00:00.000000Z"

# Migration 0012 as it was released: per-term counts kept by the write path.
OLD_0012 = (
    "CREATE TABLE scope_terms (scope TEXT NOT NULL, term TEXT NOT NULL, doc INTEGER NOT NULL, "
    "PRIMARY KEY (scope, term)) WITHOUT ROWID",
    "CREATE TABLE scope_terms_gone (id INTEGER PRIMARY KEY, scope TEXT NOT NULL, "
    "text TEXT NOT NULL)",
    "CREATE TRIGGER scope_terms_memory_bd BEFORE DELETE ON memories BEGIN "
    "INSERT INTO scope_terms_gone (scope, text) SELECT old.scope, c.text FROM chunks c "
    "WHERE c.memory_id = old.id; END",
    "CREATE TRIGGER scope_terms_chunk_ad AFTER DELETE ON chunks BEGIN "
    "INSERT INTO scope_terms_gone (scope, text) SELECT m.scope, old.text FROM memories m "
    "WHERE m.id = old.memory_id; END",
)

TEXTS = {
    "team-a": ["the heron nests by the quarry", "heron and otter at the quarry lake"],
    "team-b": [f"otter sighting {i} near the weir" for i in range(6)] + ["a lone heron"],
}


def _previous_schema_file(path: Path) -> None:
    """A file as the previous release left it: every migration up to 0012, its
    per-term tables, memories and their chunks written with that schema."""
    conn = sqlite_driver.connect(str(path), isolation_level=None)
    try:
        migrations.apply(conn, NOW, upto="0012_scope_terms")
        conn.execute("BEGIN")
        for sql in OLD_0012:
            conn.execute(sql)
        n = 0
        for scope, texts in TEXTS.items():
            for text in texts:
                n += 1
                memory_id = f"00000000-0000-7000-8000-{n:012d}"
                conn.execute(
                    "INSERT INTO memories (id, scope, kind, type, content, content_hash, "
                    "source, status, valid_from, created_at, updated_at) VALUES "
                    "(?, ?, 'fact', 'context', ?, ?, 'manual', 'active', ?, ?, ?)",
                    (memory_id, scope, text, textmod.content_hash(text), NOW, NOW, NOW),
                )
                conn.execute(
                    "INSERT INTO chunks (memory_id, seq, text, text_hash) VALUES (?, 0, ?, ?)",
                    (memory_id, text, textmod.content_hash(text)),
                )
        conn.execute("COMMIT")
    finally:
        conn.close()


def _rows(store: hivemem.Store, sql: str) -> list[tuple]:
    return store._backend._read(sql)


def test_a_file_on_the_previous_schema_gets_the_scope_into_its_keyword_index(tmp_path):
    path = tmp_path / "previous.db"
    _previous_schema_file(path)
    with hivemem.open(path, embedder="none") as store:
        assert store._backend.schema_version() == migrations.known_names()
        tables = {r[0] for r in _rows(store, "SELECT name FROM sqlite_master")}
        assert "scope_terms" not in tables and "scope_terms_gone" not in tables
        keys = dict(
            _rows(
                store,
                "SELECT m.scope, c.scope_key FROM chunks c JOIN memories m ON m.id = c.memory_id",
            )
        )
        assert keys == {s: termcounts.scope_key(s) for s in TEXTS}
        assert dict(_rows(store, "SELECT scope_key, chunks FROM scope_chunks")) == {
            termcounts.scope_key(s): len(t) for s, t in TEXTS.items()
        }
        assert store._backend.health()["fts_ok"] is True
        a, b = store.scope("team-a"), store.scope("team-b")
        assert {h.memory.content for h in a.search("otter")} == {TEXTS["team-a"][1]}
        assert len(b.search("otter", limit=20)) == 6
        stats = store._backend.term_stats(["heron", "otter"], ["team-a"])
        assert (stats.total_chunks, dict(stats.doc_freq)) == (2, {"heron": 2, "otter": 1})
        # The upgraded file takes new writes into the index with their scope key.
        a.save("a kingfisher over the quarry")
        assert [h.memory.content for h in a.search("kingfisher")] == [
            "a kingfisher over the quarry"
        ]
        assert b.search("kingfisher") == []


def test_per_scope_frequencies_follow_writes_and_purges_of_that_scope_only(tmp_path):
    with hivemem.open(tmp_path / "m.db", embedder="none") as store:
        a, b = store.scope("a"), store.scope("b")
        for text in TEXTS["team-a"]:
            a.save(text)
        for text in TEXTS["team-b"]:
            b.save(text)
        before = store._backend.term_stats(["heron", "otter"], ["a"])
        assert (before.total_chunks, dict(before.doc_freq)) == (2, {"heron": 2, "otter": 1})
        for i in range(30):  # another scope's writes never move a's counts
            b.save(f"heron number {i} at the weir")
        after = store._backend.term_stats(["heron", "otter"], ["a"])
        assert (after.total_chunks, dict(after.doc_freq)) == (2, {"heron": 2, "otter": 1})
        both = store._backend.term_stats(["heron"], ["a", "b"])
        assert (both.total_chunks, dict(both.doc_freq)) == (39, {"heron": 33})
        heron_only = next(h.memory for h in a.search("nests"))
        a.purge(heron_only.id, vacuum=False)
        gone = store._backend.term_stats(["heron", "otter"], ["a"])
        assert (gone.total_chunks, dict(gone.doc_freq)) == (1, {"heron": 1, "otter": 1})


def test_a_match_confined_to_a_small_scope_finds_and_scores_what_an_unconfined_one_does(
    tmp_path, monkeypatch
):
    # No access tracking: both searches must meet the same rows. No read pool: the trace
    # below watches the one connection every statement then goes through.
    settings = hivemem.Settings(track_access=False, read_connections=0)
    with hivemem.open(tmp_path / "m.db", embedder="none", settings=settings) as store:
        # keyword_search's plans, not the small scope's one statement (keyword_scope.py)
        monkeypatch.setattr(store._backend, "keyword_scope", lambda *args: None)
        small, big = store.scope("small"), store.scope("big")
        for i in range(5):
            small.save(f"otter {i} and heron by the quarry {'lake ' * i}")
        for i in range(40):
            big.save(f"otter {i} swims past the heron colony")
        matches: list[str] = []
        store._backend._conn.set_trace_callback(
            lambda sql: matches.append(sql) if "bm25" in sql else None
        )

        def run() -> list[tuple[str, float, dict]]:
            return [
                (h.memory.id, h.score, h.explain.to_dict())
                for h in small.search("otter heron quarry")
            ]

        confined = run()
        assert confined and any("scope_key" in sql for sql in matches)
        matches.clear()
        monkeypatch.setattr(termcounts, "confines", lambda read, scopes: False)
        unconfined = run()
        assert matches and not any("scope_key" in sql for sql in matches)
        assert confined == unconfined


@pytest.mark.parametrize("scope", ["team-a", "Team A", "ü/ß", "x" * 200])
def test_a_scope_key_is_one_index_token(scope):
    from hivemem.store import scratch

    key = termcounts.scope_key(scope)
    assert scratch.stems(key) == (key,)


# Texts and query terms whose quoted FTS5 phrases test the tokenizer's edges: hyphens,
# numbers, diacritics, stems, apostrophes and the ``_`` separator (PostgreSQL's test too).
PHRASE_TEXTS = [
    "Send the e-mail about version 3.5 to Zoë",
    "don't forget: the running runners ran",
    "emails, e mail and mail_box",
    "Naïve café owners were running late",
]
PHRASE_TERMS = [
    "e-mail",
    "3.5",
    "zoe",
    "don't",
    "run",
    "runners",
    "mail",
    "naive",
    "cafe",
    "_",
    "box",
]


def test_matched_terms_asked_of_the_index_agree_with_the_scratch_tokenizer(tmp_path):
    from hivemem.store import scratch

    texts, terms = PHRASE_TEXTS, PHRASE_TERMS
    with hivemem.open(tmp_path / "m.db", embedder="none") as store:
        small = store.scope("small")
        for text in texts:
            small.save(text)
        chunks = store._backend._read("SELECT id, text FROM chunks")
        ids = [r[0] for r in chunks]
        from_index = termcounts.Postings().matched(
            store._backend._read, 0, ids, terms, lambda _: True
        )
        assert from_index is not None  # a small scope: the index answers
        expected = {cid: held for cid, held in scratch.matches(chunks, terms).items() if held}
        assert from_index == expected
        assert store._backend.matched_terms(ids, terms) == scratch.matches(chunks, terms)


@pytest.mark.parametrize("syntax", ["deploy billing e-mail", '"deploy billing" OR runn*'])
def test_the_scoped_bm25_is_fts5s_formula_on_the_scopes_statistics(tmp_path, syntax):
    """Issue 25: where the visible scopes do not hold the whole index, the chunks FTS5
    found are scored again over the scopes' statistics (``scoped_bm25.py``). Given the
    whole index's statistics instead, the same code must give FTS5's own bm25."""
    import math
    import random
    from datetime import UTC, datetime

    from hivemem import Query
    from hivemem.store.keyword_query import KeywordQuery, parse, phrase_tokens, phrases_of
    from hivemem.store.sqlite.scoped_bm25 import ScopeStats

    words = ["deploy", "billing", "rollback", "e-mail", "postgres", "running", "runners"]
    rng = random.Random(3)
    with hivemem.open(tmp_path / "m.db", embedder="none") as store:
        mem = store.scope("b")
        for i in range(60):
            mem.save(" ".join(rng.choice(words) for _ in range(rng.randint(2, 30))) + f" n{i}")
        backend = store._backend
        keywords = parse(syntax) if '"' in syntax else KeywordQuery.any_of(syntax.split())
        found = backend.keyword_search(
            ["b"], Query(text="x", limit=50), keywords, 50, datetime.now(UTC)
        )
        assert len(found) > 20
        total, everything = termcounts.chunk_totals(backend._read_raw, ["b"])
        assert total == everything  # one scope: FTS5's numbers are the scope's
        keys = (termcounts.scope_key("b"),)
        phrases = [p for p in phrases_of(keywords.tree()) if phrase_tokens(p)]
        with backend._cache_lock():
            hits = [
                backend._hits(
                    backend._read_raw, ["b"], keys, p, (total, total + 1), backend._version()
                )
                for p in phrases
            ]
            average = backend._average_length(backend._read_raw, keys, total)
        stats = ScopeStats(
            total,
            average,
            tuple(tuple(phrase_tokens(p)) for p in phrases),
            tuple(max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6) for n in hits),
            sum(hits),
        )
        again = {m.chunk_id: m.bm25 for m in backend._scoped_bm25(backend._read_raw, stats, found)}
        assert all(abs(again[m.chunk_id] - m.bm25) < 1e-9 for m in found)


def test_term_counts_equal_the_tokenizers_own_counts():
    """``scratch.term_counts`` reads only the words that can stem to a query term (their
    first two letters, or a letter outside ASCII): it must count what tokenizing the
    whole text counts, for every term of the texts."""
    from collections import Counter

    from hivemem.evaluation.bench import DEFAULT_SEED, CorpusGenerator
    from hivemem.evaluation.bench_long import long_turns
    from hivemem.store import scratch

    texts = [t["content"] for t in long_turns(CorpusGenerator(DEFAULT_SEED), 40, 600, "t")]
    texts += [
        "The bay, the BAYS and baying; sensibility, sensible, nobility, hopping, hoped.",
        "Café crème, naïve Zoë, ÉCOLE, école_primaire and e-mail/e_mail; don't 3.5 v2",
        "flies, skies, ties, dying, lying, conflated, troubled, rational, relational",
        "Ünïcödé wörds, straße, İstanbul, ﬁle, Ⅻ, ２０２６, ＡＢＣ, x_y_z, CamelCase",
    ]
    rows = list(enumerate(texts, start=1))
    whole = {i: Counter(scratch.tokens(text)) for i, text in rows}
    terms = sorted({t for counts in whole.values() for t in counts})
    counted = scratch.term_counts(rows, terms)
    for i, _ in rows:
        assert counted[i] == dict(whole[i]), (i, set(counted[i].items()) ^ set(whole[i].items()))
