"""The neutral keyword query (store/keyword_query.py): a caller's FTS5 syntax is parsed
as FTS5 parses it, SQLite's compiled form means exactly what the caller wrote, and
PostgreSQL's tsquery finds the same memories."""

from __future__ import annotations

import itertools

import pytest

import hivemem
from hivemem.errors import InvalidInput
from hivemem.store import keyword_query as kq
from hivemem.store.fts5 import to_fts5
from hivemem.store.scratch import TOKENIZE, sqlite_driver
from test_hostile_search import FTS_FRAGMENTS, WORDS, hostile_queries

DOCS = [
    "deploy on tuesday never",
    "friday deploy postgres",
    "osprey in march",
    "postgres vault",
    "The text column holds NEAR and NOT AND OR as plain words.",
    "Café in 東京: naïve Straße résumé 🐝 emoji note",
    "deploy friday never holiday on tuesday",
    "text near deploy and the vault",
]


@pytest.fixture(scope="module")
def fts5():
    conn = sqlite_driver.connect(":memory:")
    conn.execute(f"CREATE VIRTUAL TABLE f USING fts5 (text, tokenize = '{TOKENIZE}')")
    conn.executemany("INSERT INTO f (text) VALUES (?)", [(d,) for d in DOCS])

    def match(query: str) -> list[tuple[int, float]] | str:
        try:
            rows = conn.execute(
                "SELECT rowid, bm25(f) FROM f WHERE f MATCH ? ORDER BY rowid", (query,)
            ).fetchall()
        except sqlite_driver.Error:
            return "error"
        return [(r[0], round(r[1], 9)) for r in rows]

    return match


def _queries() -> list[str]:
    pairs = itertools.chain(
        itertools.product(FTS_FRAGMENTS, WORDS), itertools.product(WORDS, FTS_FRAGMENTS)
    )
    out = [*hostile_queries(), *(f"{a} {b}" for a, b in pairs)]
    out += [
        "NEAR(deploy friday, 3) OR vault",
        "^friday deploy",
        "text:(deploy OR osprey) NOT vault",
        "deploy + tuesday*",
        "postgre*",
        '"deploy friday"*',
        "a OR b c AND d NOT e",
        "deploy NOT 🐝",
        "🐝 deploy",
        "deploy AND 🐝",
        "(deploy) friday",
        "- {text} : (deploy)",
    ]
    return [q for q in out if _encodable(q)]


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:  # refused before any parser (arguments.storable)
        return False
    return True


def test_the_parser_accepts_and_refuses_what_fts5_does(fts5):
    checked = 0
    for query in _queries():
        try:
            kq.parse(query)
            ours = "ok"
        except InvalidInput as exc:
            assert exc.field == "query"
            ours = "error"
        theirs = "error" if fts5(query) == "error" else "ok"
        assert ours == theirs, query
        checked += 1
    assert checked > 900


def test_the_compiled_fts5_query_finds_the_same_rows_with_the_same_bm25(fts5):
    compared = 0
    for query in _queries():
        try:
            parsed = kq.parse(query)
        except InvalidInput:
            continue
        compiled = to_fts5(parsed)  # "" when nothing can match: no statement is run
        assert (fts5(compiled) if compiled else []) == fts5(query), (query, compiled)
        compared += 1
    assert compared > 700


def test_terms_and_modes_compile_to_fts5():
    assert to_fts5(kq.KeywordQuery.any_of(["deploy", 'say "hi"'])) == ('"deploy" OR "say ""hi"""')
    assert to_fts5(kq.KeywordQuery(("a", "b"), "all")) == '"a" AND "b"'
    assert to_fts5(kq.KeywordQuery(("a", "b"), "phrase")) == '"a" + "b"'
    assert to_fts5(kq.KeywordQuery(expression=kq.Empty())) == ""


def test_a_phrase_without_index_tokens_is_dropped_as_fts5_drops_it():
    assert kq.parse("🐝 deploy").expression == kq.Phrase((kq.Piece("deploy"),))
    assert isinstance(kq.parse("deploy AND 🐝").expression, kq.Empty)
    assert kq.parse("deploy OR 🐝").expression == kq.Phrase((kq.Piece("deploy"),))


SYNTAX = [
    '"deploy on tuesday"',
    "deploy AND tuesday",
    "deploy NOT holiday",
    "postgr*",
    "NEAR(never holiday, 10)",
    "NEAR(deploy holiday, 1)",
    "^friday",
    "^deploy NOT tuesday",
    "deploy NOT NEAR(never holiday, 2)",
    "text:vault OR {text}: osprey",
    "- text : deploy",
    "(deploy OR osprey) AND NOT_A_WORD",
]


def test_fts_syntax_finds_the_same_memories_on_both_backends(tmp_path, pg_url, clock):
    found = []
    for location in (tmp_path / "m.db", pg_url):
        with hivemem.open(location, clock=clock, embedder="none") as store:
            mem = store.scope("a")
            for i, text in enumerate(DOCS):
                mem.save(text, key=f"k{i}")
            mem.save("friday notes about the osprey", key="late")
            found.append(
                {q: sorted(h.memory.key for h in mem.search(q, fts_syntax=True)) for q in SYNTAX}
            )
    lite, pg = found
    assert pg == lite
    assert lite["NEAR(never holiday, 10)"] == ["k6"]
    assert lite["^friday"] == ["k1", "late"]
    assert lite["deploy NOT NEAR(never holiday, 2)"] == ["k0", "k1", "k7"]
