"""Keyword statistics per scope, read from the keyword index itself.

The keyword lane weighs query terms by IDF. Counted over the whole keyword index, one
tenant's writes would move another tenant's scores (and let a scope-bound token probe
what others store), so the counts are those of the visible scopes.

The scope is inside the keyword index (migration ``0013_scope_in_keyword_index``):
every chunk carries its scope's *scope key* (``scope_key``: one token, a hash of the
scope name, never a word of any text) in a second column of ``chunks_fts``. So:

- a MATCH can be confined to the visible scopes (``scope_filter``): FTS5 then walks and
  scores only their rows, not every tenant's (the long-memory case: a scope of 500
  turns in a file of 10,000);
- a term's document frequency in the visible scopes is one ``count(*)`` of
  ``scope_key : (…) AND text : "word"``, read when a search needs it and cached;
- ``scope_chunks`` (scope key, chunks), kept by triggers on ``chunks``, gives the
  visible scopes' chunk total, and whether they hold the whole index (then the whole
  index's own counts, ``chunks_vocab``, are theirs).

Nothing is counted on the write path but one row per write in ``scope_chunks`` (the
counts per scope and term of migration 0012 cost ~19 extra pages a write).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..rows import placeholders

Connection = Any
Read = Callable[[str, Sequence[Any]], list[Any]]  # rows of one statement
Still = Callable[[Any], bool]  # may rows read now be kept under this version (``_still``)

# The FTS5 schema since 0013: text and the scope key, over ``chunks`` (external content).
FTS_SCHEMA = (
    """CREATE VIRTUAL TABLE chunks_fts USING fts5 (
        text, scope_key, content = 'chunks', content_rowid = 'id',
        tokenize = 'porter unicode61 remove_diacritics 2'
    )""",
    "CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab (chunks_fts, 'row')",
    """CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
        INSERT INTO chunks_fts (rowid, text, scope_key)
            VALUES (new.id, new.text, new.scope_key);
        INSERT INTO scope_chunks (scope_key, chunks) VALUES (new.scope_key, 1)
            ON CONFLICT (scope_key) DO UPDATE SET chunks = chunks + 1;
    END""",
    """CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
        INSERT INTO chunks_fts (chunks_fts, rowid, text, scope_key)
            VALUES ('delete', old.id, old.text, old.scope_key);
        UPDATE scope_chunks SET chunks = chunks - 1 WHERE scope_key = old.scope_key;
    END""",
)

# bm25 weights of (text, scope_key): the scope key finds rows, it never scores them.
BM25 = "bm25(chunks_fts, 1.0, 0.0)"

_WORD = re.compile(r"[^\W_]+")


def scope_key(scope: str) -> str:
    """The index token of ``scope``: ``hms`` + 20 hex digits of its sha256 + ``0``
    (letters and digits only, so the tokenizer keeps it whole, and ending in a digit,
    so the porter stemmer leaves it alone)."""
    return "hms" + hashlib.sha256(scope.encode()).hexdigest()[:20] + "0"


KEY_SHAPE = re.compile(r"hms[0-9a-f]{20}0")  # every token ``scope_key`` makes


def scope_filter(scopes: Sequence[str]) -> str:
    """An FTS5 expression matching the chunks of ``scopes`` (to AND with a query)."""
    return "scope_key : (" + " OR ".join(f'"{scope_key(s)}"' for s in scopes) + ")"


def chunk_totals(read: Read, scopes: Sequence[str]) -> tuple[int, int]:
    """(chunks of ``scopes``, chunks of every scope); ``read(sql, params)`` gives rows."""
    keys = [scope_key(s) for s in scopes]
    rows = read("SELECT scope_key, chunks FROM scope_chunks LIMIT 65", [])
    if len(rows) > 64:  # many tenants: read just the visible ones, and the total
        total = read("SELECT COALESCE(SUM(chunks), 0) FROM scope_chunks", [])[0][0]
        rows = read(
            f"SELECT scope_key, chunks FROM scope_chunks WHERE scope_key IN ({placeholders(keys)})",
            keys,
        )
        return sum(n for _, n in rows), int(total)
    wanted = set(keys)
    return sum(n for k, n in rows if k in wanted), sum(n for _, n in rows)


def idf(scoped: int, n: int) -> float:
    """BM25's idf of a term held by ``n`` of ``scoped`` chunks, at least 1e-6 (FTS5's). The
    totals are kept reads and ``n`` a fresh one: with the read pool off (no snapshot) a
    commit of another process between them can count more holders than chunks, never a
    negative log argument (as PostgreSQL's ``keyword_search``)."""
    scoped = max(scoped, n)
    return max(math.log((scoped - n + 0.5) / (n + 0.5)), 1e-6)


def confines(read: Read, scopes: Sequence[str]) -> bool:
    """Whether a MATCH for ``scopes`` is confined to them: when they hold at most half of
    the index (an unconfined MATCH walks and scores every tenant's rows; confined, the
    scope keys' own postings are walked too, which only pays when they are few)."""
    scoped, everything = chunk_totals(read, scopes)
    return scoped * 2 <= everything


def count(read: Read, scopes: Sequence[str], word: str) -> int:
    """Chunks of ``scopes`` holding ``word`` (an index word: letters and digits), as the
    index says (the quoted word is tokenized and stemmed by FTS5 itself)."""
    match = f'{scope_filter(scopes)} AND text : "{word}"'
    return int(read("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", [match])[0][0])


SMALL = 20_000  # scope chunks x terms up to which Postings reads the rows themselves


class Postings:
    """The chunks of a few small scopes that match a term, read from the keyword index
    and kept until the file changes (``version``: the connection's data_version and its
    own commits). One read per term and search serves both the term's document
    frequency (how many) and which found chunks hold it (``matched_in_index``): for a
    scope of 500 kilobyte-long turns, ~0.1 ms a term, where counting and tokenizing
    the found chunks' texts again cost ~4 ms a search."""

    def __init__(self) -> None:
        self._version: Any = None
        self._rows: dict[tuple[tuple[str, ...], str], frozenset[int]] = {}

    def rows(
        self, read: Read, version: Any, keys: Sequence[str], term: str, still: Still
    ) -> frozenset[int]:
        """Chunks of the scopes with these keys whose text matches ``term`` quoted; kept
        only where ``still(version)`` says no commit came before the read did."""
        if version != self._version or len(self._rows) > 4096:
            self._rows.clear()
            self._version = version
        at = (tuple(sorted(set(keys))), term)
        found = self._rows.get(at)
        if found is None:
            where = "scope_key : (" + " OR ".join(f'"{key}"' for key in at[0]) + ")"
            phrase = '"' + term.replace('"', '""') + '"'
            found = frozenset(
                r[0]
                for r in read(
                    "SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ?",
                    [f"{where} AND text : {phrase}"],
                )
            )
            if still(version):
                self._rows[at] = found
        return found

    def matched(
        self,
        read: Read,
        version: Any,
        chunk_ids: Sequence[int],
        terms: Sequence[str],
        still: Still,
    ) -> dict[int, set[str]] | None:
        """Which of ``terms`` each chunk matches (the quoted term's FTS5 phrase match),
        from the rows of the chunks' scopes that match each term; ``None`` when those
        scopes hold more chunks than ``SMALL`` allows for this many terms."""
        ids = list(dict.fromkeys(chunk_ids))
        rows = read(f"SELECT id, scope_key FROM chunks WHERE id IN ({placeholders(ids)})", ids)
        keys = sorted({key for _, key in rows})
        if not keys:
            return {}
        held = read(
            f"SELECT COALESCE(SUM(chunks), 0) FROM scope_chunks WHERE scope_key IN "
            f"({placeholders(keys)})",
            keys,
        )[0][0]
        if held * len(terms) > SMALL:
            return None
        out: dict[int, set[str]] = {}
        for term in terms:
            holding = self.rows(read, version, keys, term, still)
            for chunk_id, _ in rows:
                if chunk_id in holding:
                    out.setdefault(chunk_id, set()).add(term)
        return out


def words_of(term: str, stems: Sequence[str]) -> list[str] | None:
    """The words of ``term`` whose stems are ``stems`` (one word per stem, in order), or
    None when the term does not split that way (then its stems are matched as they
    are)."""
    words = _WORD.findall(term.lower())
    return words if len(words) == len(stems) else None


def per_term(stems: Mapping[str, Sequence[str]], counts: Mapping[str, int]) -> dict[str, int]:
    """A query term's count is its most frequent stem's."""
    return {
        term: max((counts.get(s, 0) for s in group), default=0) for term, group in stems.items()
    }


def migrate(conn: Connection) -> None:
    """Migration 0013: the scope key on every chunk and in the keyword index, the chunk
    counts per scope, and the per-term counts of 0012 gone."""
    for sql in (
        "DROP TRIGGER IF EXISTS scope_terms_memory_bd",
        "DROP TRIGGER IF EXISTS scope_terms_chunk_ad",
        "DROP TABLE IF EXISTS scope_terms",
        "DROP TABLE IF EXISTS scope_terms_gone",
        "DROP TRIGGER chunks_ai",
        "DROP TRIGGER chunks_ad",
        "DROP TABLE chunks_vocab",
        "DROP TABLE chunks_fts",
        "ALTER TABLE chunks ADD COLUMN scope_key TEXT NOT NULL DEFAULT ''",
        """CREATE TABLE scope_chunks (
            scope_key TEXT PRIMARY KEY,
            chunks INTEGER NOT NULL
        ) WITHOUT ROWID""",
    ):
        conn.execute(sql)
    for (scope,) in conn.execute("SELECT DISTINCT scope FROM memories").fetchall():
        conn.execute(
            "UPDATE chunks SET scope_key = ? "
            "WHERE memory_id IN (SELECT id FROM memories WHERE scope = ?)",
            (scope_key(scope), scope),
        )
    for sql in FTS_SCHEMA:
        conn.execute(sql)
    conn.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')")
    conn.execute(
        "INSERT INTO scope_chunks (scope_key, chunks) "
        "SELECT scope_key, COUNT(*) FROM chunks GROUP BY scope_key"
    )
