"""The keyword lane of the PostgreSQL store: ``tsvector`` + GIN, scored like FTS5.

Same tokens. A chunk's ``terms`` tsvector is built from the tokens SQLite's FTS5 index
would make of it (``store.scratch.tokens``: unicode61, diacritics removed, porter
stems), with positions, and a query term becomes the same stems (a phrase ``a <-> b``
when a term makes several). PostgreSQL's own dictionaries are not used, so a query
matches the same chunks on both backends.

Same score. ``ts_rank`` is not BM25, so the score is computed in SQL with FTS5's formula
(k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)), at least 1e-6), over the
matched chunks only: term frequencies are the lexemes' position counts, the document
length is ``chunks.length``. The statistics (N, average length, each term's n) are the
whole index's, as FTS5's, so scores equal SQLite's; they are cached and re-read when the
index has grown or shrunk by more than 1% (BM25 weights barely move in between), and
the n's are the ones ``term_stats`` just read. Per-scope statistics (``_freq`` and
``_scope_totals`` take scopes) cost a count per new term and scope: measured at 10k,
~55 ms of a 150 ms search on a loaded machine, so they wait for a cheaper source (a
per-scope vocabulary kept by a job, not by the write path).

The query. Above the protocol the lane still speaks FTS5 (``search.py`` passes the OR
of quoted terms that ``text.fts_or_query`` builds); that form is read back into terms
here. Any other FTS5 syntax (``fts_syntax=True`` from a user) is not supported yet and
says so.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ... import text as textmod
from ...types import Query
from .. import scratch
from ..protocols import ChunkMatch, TermStats

if TYPE_CHECKING:  # pragma: no cover
    from .backend import PostgresBackend

K1, B = 1.2, 0.75
_NEWEST_PAGE = 4  # newest-first search scores this many times the rows it returns
_QUOTED = re.compile(r'\s*"((?:[^"]|"")*)"\s*')


def tsvector_text(tokens: Sequence[str]) -> str:
    """The tsvector literal of ``tokens`` (positions from 1, capped at 16383)."""
    positions: dict[str, list[int]] = {}
    for i, token in enumerate(tokens, start=1):
        positions.setdefault(token, []).append(min(i, 16383))
    return " ".join(f"{_quote(t)}:{','.join(map(str, p[:256]))}" for t, p in positions.items())


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def parse_or_query(text: str) -> list[str] | None:
    """The terms of ``"a" OR "b" …`` (``text.fts_or_query``), or None for other syntax."""
    terms: list[str] = []
    pos = 0
    while pos < len(text):
        found = _QUOTED.match(text, pos)
        if not found:
            return None
        terms.append(found.group(1).replace('""', '"'))
        pos = found.end()
        if pos < len(text):
            if not text.startswith("OR", pos):
                return None
            pos += 2
    return terms


def _phrase(stems: Sequence[str]) -> str:
    return " <-> ".join(_quote(s) for s in stems)


class KeywordMixin:
    """keyword_search, term_stats, matched_terms, memory_chunks and chunk writes."""

    def __init__(self) -> None:
        self._stats_lock = threading.Lock()
        self._doc_freq: dict[tuple[tuple[str, ...] | None, str], tuple[int, int]] = {}
        self._scope_stats: dict[tuple[str, ...], tuple[int, int, int]] = {}

    # ------------------------------------------------------------------ writes

    def insert_chunks(self: PostgresBackend, memory_id: str, scope: str, pieces: list[str]) -> None:
        """Inside a write: the memory's chunks, their terms, and their place in the
        vector queue (one statement)."""
        if not pieces:
            return
        tokens = [scratch.tokens(p) for p in pieces]
        self._x(
            "WITH added AS (INSERT INTO chunks (memory_id, scope, seq, text, text_hash, "
            "length, terms) SELECT %s, %s, t.seq, t.text, t.hash, t.length, t.terms::tsvector "
            "FROM unnest(%s::int[], %s::text[], %s::text[], %s::int[], %s::text[]) "
            "AS t(seq, text, hash, length, terms) RETURNING id) "
            "INSERT INTO vector_queue (chunk_id) SELECT id FROM added",
            [
                memory_id,
                scope,
                list(range(len(pieces))),
                pieces,
                [textmod.content_hash(p) for p in pieces],
                [len(t) for t in tokens],
                [tsvector_text(t) for t in tokens],
            ],
        )

    def rebuild_chunks(
        self: PostgresBackend, memory_ids: Sequence[str], size: int, overlap: int
    ) -> int:
        done = 0
        with self.atomic():
            for memory_id in memory_ids:
                row = self._q("SELECT content, scope FROM memories WHERE id = %s", [memory_id])
                if not row:
                    continue
                self._x("DELETE FROM chunks WHERE memory_id = %s", [memory_id])
                self.insert_chunks(memory_id, row[0][1], textmod.chunk(row[0][0], size, overlap))
                done += 1
        return done

    def rebuild_keyword_index(self: PostgresBackend) -> None:
        """Re-derive every chunk's terms and length from its text."""
        last = 0
        while True:
            rows = self._q(
                "SELECT id, text FROM chunks WHERE id > %s ORDER BY id LIMIT 1000", [last]
            )
            if not rows:
                break
            tokens = [scratch.tokens(r[1]) for r in rows]
            with self.atomic():
                self._x(
                    "UPDATE chunks c SET terms = t.terms::tsvector, length = t.length FROM "
                    "unnest(%s::bigint[], %s::text[], %s::int[]) AS t(id, terms, length) "
                    "WHERE c.id = t.id",
                    [
                        [r[0] for r in rows],
                        [tsvector_text(t) for t in tokens],
                        [len(t) for t in tokens],
                    ],
                )
            last = rows[-1][0]
        with self._stats_lock:
            self._doc_freq.clear()
            self._scope_stats.clear()

    # ------------------------------------------------------------------ statistics

    def _index_size(self: PostgresBackend) -> int:
        return int(self._q("SELECT COALESCE(MAX(id), 0) FROM chunks")[0][0])

    def _fresh(self, cached: tuple[Any, ...] | None, size: int) -> bool:
        return cached is not None and abs(size - cached[-1]) <= max(50, size // 100)

    def _freq(
        self: PostgresBackend, scopes: tuple[str, ...] | None, phrases: Sequence[str], size: int
    ) -> dict[str, int]:
        """Chunks holding each tsquery phrase, in ``scopes`` (None: every scope)."""
        out: dict[str, int] = {}
        stale = []
        with self._stats_lock:
            for phrase in dict.fromkeys(phrases):
                cached = self._doc_freq.get((scopes, phrase))
                if self._fresh(cached, size):
                    out[phrase] = cached[0]  # type: ignore[index]
                else:
                    stale.append(phrase)
        for phrase in stale:
            if scopes is None:
                n = self._q("SELECT COUNT(*) FROM chunks WHERE terms @@ %s::tsquery", [phrase])
            else:
                n = self._q(
                    "SELECT COUNT(*) FROM chunks WHERE terms @@ %s::tsquery AND scope = ANY(%s)",
                    [phrase, list(scopes)],
                )
            out[phrase] = int(n[0][0])
            with self._stats_lock:
                if len(self._doc_freq) > 50_000:
                    self._doc_freq.clear()
                self._doc_freq[(scopes, phrase)] = (out[phrase], size)
        return out

    def _scope_totals(
        self: PostgresBackend, scopes: tuple[str, ...] | None, size: int
    ) -> tuple[int, float]:
        """(chunks, average length) of the scopes' keyword index (None: every scope)."""
        with self._stats_lock:
            cached = self._scope_stats.get(scopes)  # type: ignore[arg-type]
        if not self._fresh(cached, size):
            where, params = ("scope = ANY(%s)", [list(scopes)]) if scopes else ("TRUE", [])
            row = self._q(
                f"SELECT COUNT(*), COALESCE(SUM(length), 0) FROM chunks WHERE {where}", params
            )[0]
            cached = (int(row[0]), int(row[1]), size)
            with self._stats_lock:
                self._scope_stats[scopes] = cached  # type: ignore[index]
        count, tokens, _ = cached  # type: ignore[misc]
        return count, (tokens / count if count else 1.0)

    def term_stats(
        self: PostgresBackend, terms: Sequence[str], scopes: Sequence[str] | None = None
    ) -> TermStats:
        """Document frequencies over every scope: per term, the largest count among its
        stems. ``scopes`` is not used yet: per-scope statistics (as SQLite keeps them,
        ``store/termcounts.py``) are a gap of this backend (docs/postgres.md)."""
        if not terms:
            return TermStats(0, {})
        size = self._index_size()
        stems = {t: scratch.stems(t) for t in terms}
        freq = self._freq(None, [_quote(s) for group in stems.values() for s in group], size)
        doc_freq = {
            t: max((freq.get(_quote(s), 0) for s in group), default=0) for t, group in stems.items()
        }
        return TermStats(size, doc_freq)

    # ------------------------------------------------------------------ search

    def keyword_search(
        self: PostgresBackend,
        scopes: Sequence[str],
        query: Query,
        terms: Sequence[str],
        limit: int,
        now: datetime,
        *,
        newest_first: bool = False,
        time_limit_s: float | None = None,
    ) -> list[ChunkMatch]:
        """The ``limit`` best chunks by BM25 that pass scope and filters, best first
        (ties: lower chunk id first); newest first among the matches when asked.
        ``time_limit_s`` guards a caller's FTS5 syntax on SQLite; the statements here
        are HiveMem's own (an OR of terms), so it is not needed."""
        from . import NotOnPostgres

        if query.fts_syntax:
            wanted = parse_or_query(query.text)
            if wanted is None:
                raise NotOnPostgres("FTS5 query syntax (fts_syntax=True)")
        else:
            wanted = list(terms)
        phrases: dict[str, str] = {}  # phrase -> its first lexeme (where tf is read)
        for term in wanted:
            stems = scratch.stems(term)
            if stems:
                phrases.setdefault(_phrase(stems), stems[0])
        if not phrases:
            return []
        size = self._index_size()
        total, avgdl = self._scope_totals(None, size)
        freq = self._freq(None, list(phrases), size)
        weight: dict[str, float] = {}
        for phrase, lexeme in phrases.items():
            n = freq.get(phrase, 0)
            idf = math.log((total - n + 0.5) / (n + 0.5)) if total else 0.0
            weight[lexeme] = weight.get(lexeme, 0.0) + (idf if idf > 0 else 1e-6)
        tsquery = " | ".join(f"({p})" for p in phrases)
        clause, params = self._scope_clause(scopes)
        where, extra = self._filter_sql(query, now)
        filters = " AND ".join([clause, *where])
        score = (
            "(SELECT COALESCE(SUM(w.idf * cardinality(u.positions) * %s / "
            "(cardinality(u.positions) + %s * (1 - %s + %s * (c.length + 1) / %s))), 0) "
            "FROM unnest(c.terms) u JOIN unnest(%s::text[], %s::float8[]) AS w(lexeme, idf) "
            "ON w.lexeme = u.lexeme)"
        )
        # SQLite's FTS5 counts each row's scope key token in its length (migration 0013,
        # store/sqlite/termcounts.py): +1 to every length, so both backends score alike.
        score_params = [K1 + 1, K1, B, B, avgdl + 1, list(weight), list(weight.values())]
        if newest_first:
            sql = (
                f"SELECT c.id, c.memory_id, c.seq, c.text, {score} AS score FROM ("
                "SELECT c.id FROM chunks c JOIN memories m ON m.id = c.memory_id "
                f"WHERE c.terms @@ %s::tsquery AND c.scope = ANY(%s) AND {filters} "
                "ORDER BY c.id DESC LIMIT %s) n JOIN chunks c ON c.id = n.id "
                "ORDER BY score DESC, c.id LIMIT %s"
            )
            values = [
                *score_params,
                tsquery,
                list(scopes),
                *params,
                *extra,
                limit * _NEWEST_PAGE,
                limit,
            ]
        else:
            sql = (
                f"SELECT c.id, c.memory_id, c.seq, c.text, {score} AS score "
                "FROM chunks c JOIN memories m ON m.id = c.memory_id "
                f"WHERE c.terms @@ %s::tsquery AND c.scope = ANY(%s) AND {filters} "
                "ORDER BY score DESC, c.id LIMIT %s"
            )
            values = [*score_params, tsquery, list(scopes), *params, *extra, limit]
        rows = self._q(sql, values)
        return [ChunkMatch(r[0], r[1], r[2], r[3], float(r[4])) for r in rows]

    def matched_terms(
        self: PostgresBackend, chunk_ids: Sequence[int], terms: Sequence[str]
    ) -> dict[int, set[str]]:
        """Which of ``terms`` each chunk matches: FTS5's own matcher on the chunks' texts,
        so the coverage score above the protocol is the same on both backends."""
        out: dict[int, set[str]] = {cid: set() for cid in chunk_ids}
        if not chunk_ids or not terms:
            return out
        texts = self._q("SELECT id, text FROM chunks WHERE id = ANY(%s)", [list(chunk_ids)])
        for cid, found in scratch.matches([(r[0], r[1]) for r in texts], terms).items():
            out[cid] |= found
        return out

    def memory_chunks(self: PostgresBackend, memory_ids: Sequence[str]) -> list[ChunkMatch]:
        if not memory_ids:
            return []
        rows = self._q(
            "SELECT id, memory_id, seq, text FROM chunks WHERE memory_id = ANY(%s) "
            "ORDER BY memory_id, seq",
            [list(memory_ids)],
        )
        return [ChunkMatch(r[0], r[1], r[2], r[3], 0.0) for r in rows]
