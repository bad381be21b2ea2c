"""Tokens longer than PostgreSQL's lexeme limit (issue #25, item 9): a tsvector lexeme
may hold 2,046 bytes, SQLite's FTS5 any length. The PostgreSQL store indexes a long
token by its first ``MAX_LEXEME_BYTES`` (``keyword.lexeme``) and keeps the text whole;
a search cuts its tokens the same way. Migration 0022 cuts the lexemes an older store
holds. (Both backends on the same texts: ``tests/reliability/test_same_texts.py``.)"""

from __future__ import annotations

import base64
import hashlib

import pytest

import hivemem
from hivemem.evaluation.doctor import diagnose
from hivemem.store.postgres import keyword as pgkeyword
from hivemem.store.postgres import migrations, postings

# a 4 kB base64 blob with no "+" or "/" in it: one token
RAW = base64.b64encode(b"".join(hashlib.sha256(bytes([i])).digest() for i in range(100))).decode()
BLOB = "".join(c for c in RAW if c.isalnum())[:4000]
CJK = "".join(chr(0x4E00 + (i * 7) % 2000) for i in range(700))  # no spaces: one token
DIGITS = "".join(str(i % 10) for i in range(3000))


def test_lexeme_cuts_whole_characters_within_the_limit():
    cap = pgkeyword.MAX_LEXEME_BYTES
    assert pgkeyword.lexeme("heron") == "heron"
    assert pgkeyword.lexeme("a" * 3000) == "a" * cap
    cut = pgkeyword.lexeme(CJK.lower())
    assert len(cut.encode()) <= cap and CJK.lower().startswith(cut) and len(cut) == cap // 3
    emoji = "\U0001f600" * 400
    assert pgkeyword.lexeme(emoji) == "\U0001f600" * (cap // 4)


@pytest.mark.parametrize(
    ("name", "token"),
    [("base64", BLOB), ("cjk", CJK), ("digits", DIGITS), ("a", "a" * 3000)],
    ids=["base64", "cjk", "digits", "a"],
)
def test_a_token_over_the_lexeme_limit_is_stored_whole_and_found(pg_store, name, token):
    assert len(token.encode()) > 2046
    mem = pg_store.scope("team-a")
    text = f"the {name} blob follows: {token} (end of the heron note)"
    saved = mem.save(text)
    assert mem.get(saved.id).content == text
    assert mem.search(token)[0].memory.id == saved.id
    assert [h.memory.id for h in mem.search(token, fts_syntax=True)] == [saved.id]
    assert mem.search("heron")[0].memory.id == saved.id
    assert mem.search("a" * 3000, fts_syntax=True) is not None  # no StoreError


def test_migration_0022_cuts_the_long_lexemes_an_older_store_holds(pg_url):
    token = "b" * 1500  # fitted the old limit (2,046 bytes): stored whole before 0022
    with hivemem.open(pg_url, embedder="none") as store:
        mem = store.scope("team-a")
        saved = mem.save(f"older note {token} with a heron")
        short = mem.save("a short heron note")
        db = store._backend
        old = " ".join(
            f"'{lexeme}':{','.join(map(str, positions))}"
            for lexeme, positions in db._q(
                "SELECT u.lexeme, u.positions FROM chunks c, unnest(c.terms) u "
                "WHERE c.memory_id = %s",
                [saved.id],
            )
            if lexeme != pgkeyword.lexeme(token)
        )
        # the chunk as the code before 0022 wrote it: the whole token as one lexeme
        with db.atomic():
            db._x(
                "UPDATE chunks SET terms = %s::tsvector WHERE memory_id = %s",
                [f"{old} '{token}':3", saved.id],
            )
            db._x("DELETE FROM migrations WHERE name = '0022_long_lexemes'")
        assert [
            r[0] for r in db._q("SELECT lexeme FROM keyword_postings WHERE lexeme = %s", [token])
        ]
        assert mem.search(token, fts_syntax=True) == []  # the cut query misses the old lexeme
    with hivemem.open(pg_url, embedder="none") as store:  # 0022 again, as on an old store
        db = store._backend
        assert "0022_long_lexemes" in store.health.schema_version()
        # re-applied after 0023: doctor judges the set, not the order (found in CI, where
        # the next test's doctor said "reopen the store to apply migrations", missing [])
        schema = next(c for c in diagnose(store).checks if c.name == "schema")
        assert schema.ok, schema.detail
        longest = db._q("SELECT max(octet_length(lexeme)) FROM keyword_postings")[0][0]
        assert longest == pgkeyword.MAX_LEXEME_BYTES
        assert postings.check(db) is None  # the postings followed the chunks
        mem = store.scope("team-a")
        assert [h.memory.id for h in mem.search(token, fts_syntax=True)] == [saved.id]
        assert {h.memory.id for h in mem.search("heron")} == {saved.id, short.id}
        terms = db._q("SELECT terms::text FROM chunks WHERE memory_id = %s", [saved.id])[0][0]
        assert f"'{'b' * 1024}':3" in terms and "'heron':" in terms
    assert "0022_long_lexemes" in migrations.known_names()
