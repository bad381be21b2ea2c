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
visible scopes' (issue 25: no number or order of an answer may depend on what the caller
cannot read; SQLite's lane re-scores FTS5's whole-index BM25 the same way), cached and
re-read when the index has grown or shrunk by more than 1% (BM25 weights barely move in
between), and the n's are the ones ``term_stats`` just read. The coverage weights above
the protocol use the same per-scope statistics (``term_stats(terms, scopes)``, as
SQLite's counts read from its keyword index): a GIN count per new term and scope set,
cached like the rest (measured before at 10k: ~55 ms of a 150 ms search on a loaded
machine for a query of new terms; a per-scope vocabulary kept by a job would make it a
lookup).

The query. The lane passes a neutral ``KeywordQuery`` (``store/keyword_query.py``):
terms with a mode, or a caller's FTS5-syntax query parsed into a tree. ``to_tsquery``
compiles it: a phrase becomes its stems joined by ``<->`` (``:*`` on a prefix), AND / OR
/ NOT become ``&`` / ``|`` / ``& !``. NEAR and ``^`` (start of text) have no tsquery
form: they compile to the AND of their phrases, and the found chunks are checked by
FTS5's own matcher on their texts. Scores of prefix and NEAR queries read each phrase's
term frequency from its first lexeme, so they approximate FTS5's BM25 (plain terms and
phrases equal it).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

from psycopg.errors import QueryCanceled

from ... import text as textmod
from ...errors import InvalidInput
from ...types import Query
from .. import scratch
from ..fts5 import to_fts5
from ..keyword_query import (
    And,
    Empty,
    Expr,
    KeywordQuery,
    Near,
    Not,
    Or,
    Phrase,
    phrase_tokens,
)
from ..protocols import ChunkMatch, TermStats
from . import int_array, postings, text_array

if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Callable
    from contextlib import AbstractContextManager

    from ...types import ListFilter
    from .database import PostgresDatabase

R = TypeVar("R")

K1, B = 1.2, 0.75
# The keyword statement is never prepared (``_timed``): a custom plan every time.
_PREPARE: bool | None = False
_SIZE_TTL = 1.0  # seconds the index size read from the server is trusted (plus own writes)
_SCOPED_STATS_S = 60  # a scope's own counts are re-read at least this often (``_mark``)
_TEXTS_MAX = 20_000  # chunk texts kept for ``matched_terms`` (a chunk's text never changes)
# A newest-first query whose terms match at most this many chunks (the cached counts
# summed) sorts its matches before checking their memories (see keyword_search).
_FENCE_MAX = 20_000
_NEWEST_PAGE = 4  # newest-first search scores this many times the rows it returns
_VERIFY_PAGE = 8  # NEAR / ^ queries fetch this many times the rows, then verify them


# The longest lexeme kept whole, in UTF-8 bytes. PostgreSQL refuses a tsvector lexeme
# over 2,046 bytes, and a posting's b-tree entry holds the lexeme beside its scope (at
# most ~2.7 kB in all); SQLite's FTS5 indexes tokens of any length. A longer token (a
# base64 blob, a run of CJK characters without spaces, a long number) is indexed and
# searched by its first ``MAX_LEXEME_BYTES`` (whole characters), the same cut on both
# sides, so the text is stored whole and found by the token on both backends (two
# tokens that share their first kilobyte match each other). Migration 0022 cuts the
# lexemes of older stores the same way.
MAX_LEXEME_BYTES = 1024


def lexeme(token: str) -> str:
    """``token`` as the keyword index holds it: cut to ``MAX_LEXEME_BYTES``."""
    if len(token) * 4 <= MAX_LEXEME_BYTES:
        return token
    raw = token.encode("utf-8")
    if len(raw) <= MAX_LEXEME_BYTES:
        return token
    return raw[:MAX_LEXEME_BYTES].decode("utf-8", "ignore")  # never half a character


def tsvector_text(tokens: Sequence[str]) -> str:
    """The tsvector literal of ``tokens`` (positions from 1, capped at 16383)."""
    positions: dict[str, list[int]] = {}
    for i, token in enumerate(tokens, start=1):
        positions.setdefault(lexeme(token), []).append(min(i, 16383))
    return " ".join(f"{_quote(t)}:{','.join(map(str, p[:256]))}" for t, p in positions.items())


def _quote(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def _unquote(phrase: str) -> str | None:
    """The lexeme a tsquery phrase is when it is one quoted lexeme (``_quote``'s
    output), else None (a phrase of several, a prefix)."""
    if len(phrase) < 3 or phrase[0] != "'" or phrase[-1] != "'":
        return None
    lexeme = phrase[1:-1].replace("''", "'").replace("\\\\", "\\")
    return lexeme if _quote(lexeme) == phrase else None


def _phrase_lexemes(p: Phrase) -> list[tuple[str, bool]]:
    """The phrase's index tokens as lexemes (``lexeme``), each with whether it is a prefix."""
    return [(lexeme(t), prefix) for t, prefix in phrase_tokens(p)]


def to_tsquery(query: KeywordQuery) -> tuple[str, dict[str, str], bool] | None:
    """``query`` as (tsquery, its phrases -> each one's first lexeme, whether the
    matches must be verified by FTS5's matcher); None when it can match nothing."""
    tree = query.tree()
    if isinstance(tree, Empty):
        return None
    phrases: dict[str, str] = {}
    verify = [False]

    def phrase(p: Phrase) -> str:
        tokens = _phrase_lexemes(p)
        text = " <-> ".join(_quote(t) + (":*" if prefix else "") for t, prefix in tokens)
        phrases.setdefault(text, tokens[0][0])
        if p.initial:
            verify[0] = True
        return f"({text})"

    def walk(expr: Expr, negated: bool = False) -> str:
        if isinstance(expr, Phrase):
            return phrase(expr) if not negated else _bare(expr)
        if isinstance(expr, Near):
            verify[0] = verify[0] or not negated
            if negated:  # NOT NEAR(…): only what FTS5 drops; not expressible, so exact
                raise _NotExpressible
            return "(" + " & ".join(phrase(p) for p in expr.phrases) + ")"
        if isinstance(expr, And):
            return f"({walk(expr.left, negated)} & {walk(expr.right, negated)})"
        if isinstance(expr, Or):
            return f"({walk(expr.left, negated)} | {walk(expr.right, negated)})"
        if isinstance(expr, Not):
            return f"({walk(expr.left, negated)} & !{walk(expr.right, True)})"
        raise AssertionError(expr)  # Empty is simplified away

    try:
        return walk(tree), phrases, verify[0]
    except _NotExpressible:
        # A NEAR or ^ under NOT: search the left side alone and let FTS5's matcher
        # decide, over the wider page.
        return _without_negated_near(tree, phrases)


class _NotExpressible(Exception):
    pass


def _bare(p: Phrase) -> str:
    if p.initial:
        raise _NotExpressible
    return (
        "("
        + " <-> ".join(_quote(t) + (":*" if prefix else "") for t, prefix in _phrase_lexemes(p))
        + ")"
    )


def _without_negated_near(tree: Expr, phrases: dict[str, str]) -> tuple[str, dict[str, str], bool]:
    def strip(expr: Expr) -> Expr:
        if isinstance(expr, Not):
            return strip(expr.left)
        if isinstance(expr, (And, Or)):
            return type(expr)(strip(expr.left), strip(expr.right))
        return expr

    compiled = to_tsquery(KeywordQuery(expression=strip(tree)))
    assert compiled is not None
    return compiled[0], compiled[1], True


class KeywordMixin:
    """keyword_search, term_stats, matched_terms, memory_chunks and chunk writes, mixed
    into ``PostgresBackend``: the host's handle (``database.PostgresDatabase``) it uses
    is declared below for type checkers."""

    if TYPE_CHECKING:  # pragma: no cover - the host's methods, declared for type checkers

        def _q(self, sql: str, params: Any = (), *, prepare: bool | None = None) -> list[Any]: ...
        def _x(self, sql: str, params: Sequence[Any] = ()) -> Any: ...
        def atomic(self) -> AbstractContextManager[None]: ...
        def in_read_transaction(self, fn: Callable[[Any], R]) -> R: ...
        @staticmethod
        def _scope_clause(scopes: Sequence[str]) -> tuple[str, list[Any]]: ...
        def _filter_sql(
            self, flt: ListFilter | Query, now: datetime
        ) -> tuple[list[str], list[Any]]: ...

    def __init__(self) -> None:
        self._stats_lock = threading.Lock()
        self._doc_freq: dict[tuple[tuple[str, ...] | None, str], tuple[int, int]] = {}
        self._scope_stats: dict[tuple[str, ...], tuple[int, int, int]] = {}
        self._size_read: tuple[int, float] | None = None  # (MAX(chunks.id), when)
        self._size_added = 0  # chunks this process inserted since that read
        self._scope_added: dict[str, int] = {}  # chunks this process inserted, per scope
        self._texts: dict[int, str] = {}  # chunk id -> text (ids are never reused)

    def _remember_texts(self, rows: Sequence[tuple[int, str]]) -> None:
        with self._stats_lock:
            if len(self._texts) + len(rows) > _TEXTS_MAX:
                self._texts.clear()
            self._texts.update(rows)

    # ------------------------------------------------------------------ writes

    def insert_chunks(self, memory_id: str, scope: str, pieces: list[str]) -> None:
        """Inside a write: the memory's chunks, their terms, and their place in the
        vector queue (one statement)."""
        self.insert_chunks_of([(memory_id, scope, pieces)])

    def insert_chunks_of(self, memories: Sequence[tuple[str, str, list[str]]]) -> None:
        """Inside a write: the chunks of several memories ``(id, scope, pieces)``, their
        terms and their place in the vector queue, in one statement."""
        rows = [
            (memory_id, scope, seq, piece)
            for memory_id, scope, pieces in memories
            for seq, piece in enumerate(pieces)
        ]
        if not rows:
            return
        tokens = [scratch.tokens(r[3]) for r in rows]
        with self._stats_lock:
            self._size_added += len(rows)
            for row in rows:
                self._scope_added[row[1]] = self._scope_added.get(row[1], 0) + 1
        self._x(
            "WITH added AS (INSERT INTO chunks (memory_id, scope, seq, text, text_hash, "
            "length, terms) SELECT t.memory_id, t.scope, t.seq, t.text, t.hash, t.length, "
            "t.terms::tsvector FROM unnest(%s::text[], %s::text[], %s::int[], %s::text[], "
            "%s::text[], %s::int[], %s::text[]) WITH ORDINALITY "
            "AS t(memory_id, scope, seq, text, hash, length, terms, ord) ORDER BY t.ord "
            "RETURNING id) "
            "INSERT INTO vector_queue (chunk_id) SELECT id FROM added",
            [
                [r[0] for r in rows],
                [r[1] for r in rows],
                [r[2] for r in rows],
                [r[3] for r in rows],
                [textmod.content_hash(r[3]) for r in rows],
                [len(t) for t in tokens],
                [tsvector_text(t) for t in tokens],
            ],
        )

    def rebuild_chunks(self, memory_ids: Sequence[str], size: int, overlap: int) -> int:
        done = 0
        with self.atomic():
            for memory_id in memory_ids:
                row = self._q(
                    "SELECT content, supersede_reason, supersede_kind, scope FROM memories "
                    "WHERE id = %s",
                    [memory_id],
                )
                if not row:
                    continue
                self._x("DELETE FROM chunks WHERE memory_id = %s", [memory_id])
                # the supersede reason's chunk too, as the SQLite store and every write do
                pieces = textmod.chunk(row[0][0], size, overlap) + textmod.reason_chunk(
                    *row[0][1:3]
                )
                self.insert_chunks(memory_id, row[0][3], pieces)
                done += 1
        return done

    def rebuild_keyword_index(self) -> None:
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
        postings.rebuild(cast("PostgresDatabase", self))  # the host backend
        with self._stats_lock:
            self._doc_freq.clear()
            self._scope_stats.clear()

    # ------------------------------------------------------------------ statistics

    def _index_size(self) -> int:
        """The keyword index's size as its highest chunk id (the statistics' staleness
        check): read from the server at most every ``_SIZE_TTL`` seconds, plus the chunks
        this process wrote since. Other nodes' writes are seen within that second; the
        statistics are re-read only past 1% of change anyway."""
        now = time.monotonic()
        with self._stats_lock:
            read = self._size_read
            if read is not None and now - read[1] < _SIZE_TTL:
                return read[0] + self._size_added
        size = int(self._q("SELECT COALESCE(MAX(id), 0) FROM chunks")[0][0])
        with self._stats_lock:
            self._size_read, self._size_added = (size, now), 0
        return size

    def _fresh(self, cached: tuple[Any, ...] | None, size: int) -> bool:
        return cached is not None and abs(size - cached[-1]) <= max(50, size // 100)

    def _mark(self, scopes: tuple[str, ...] | None) -> int:
        """What a cached statistic of ``scopes`` is checked against (``_fresh``): for the
        whole index its size; for some scopes only what touches them — this process's
        writes into them, and the minute (a count of theirs is re-read at least once a
        minute, for other nodes' writes into them). Never the other scopes' writes: a
        count of scope B refreshed because scope A grew would let A watch B's answers
        change, and B watch A's writes (issue 25, item 12)."""
        if scopes is None:
            return self._index_size()
        with self._stats_lock:
            own = sum(self._scope_added.get(scope, 0) for scope in scopes)
        return own + int(time.monotonic() // _SCOPED_STATS_S) * 1_000_000_000

    def _freq(self, scopes: tuple[str, ...] | None, phrases: Sequence[str]) -> dict[str, int]:
        """Chunks holding each tsquery phrase, in ``scopes`` (None: every scope)."""
        return self._freqs([scopes], phrases)[0]

    def _freqs(
        self, scope_sets: Sequence[tuple[str, ...] | None], phrases: Sequence[str]
    ) -> list[dict[str, int]]:
        """``_freq`` for each of ``scope_sets``: the counts not cached yet are read in one
        statement for all of them (one GIN scan per phrase counts every scope set)."""
        outs: list[dict[str, int]] = [{} for _ in scope_sets]
        marks = [self._mark(scopes) for scopes in scope_sets]
        stale: list[str] = []
        with self._stats_lock:
            for phrase in dict.fromkeys(phrases):
                for out, scopes, size in zip(outs, scope_sets, marks, strict=True):
                    cached = self._doc_freq.get((scopes, phrase))
                    if self._fresh(cached, size):
                        out[phrase] = cached[0]  # type: ignore[index]
                    elif phrase not in stale:
                        stale.append(phrase)
        if not stale:
            return outs
        counts, params = [], []
        for scopes in scope_sets:
            if scopes is None:
                counts.append("COUNT(*)")
            else:
                counts.append("COUNT(*) FILTER (WHERE scope = ANY(%s))")
                params.append(list(scopes))
        lexemes = {p: lexeme for p in stale if (lexeme := _unquote(p)) is not None}
        rows: list[Any] = []
        if lexemes:
            # A lexeme's chunks are counted in the postings (an index-only range).
            found = self._q(
                f"SELECT lexeme, {', '.join(counts)} FROM keyword_postings "
                "WHERE lexeme = ANY(%s) GROUP BY lexeme",
                [*params, list(set(lexemes.values()))],
            )
            by_lexeme = {r[0]: r[1:] for r in found}
            zeros = (0,) * len(scope_sets)
            rows = [(p, *by_lexeme.get(lexeme, zeros)) for p, lexeme in lexemes.items()]
        others = [p for p in stale if p not in lexemes]
        if others:
            # A phrase or prefix: one GIN scan of the chunks gives every scope set's count.
            rows += self._q(
                f"SELECT p, n.* FROM unnest(%s::text[]) AS p CROSS JOIN LATERAL "
                f"(SELECT {', '.join(counts)} FROM chunks WHERE terms @@ p::tsquery) n",
                [others, *params],
            )
        with self._stats_lock:
            if len(self._doc_freq) > 50_000:
                self._doc_freq.clear()
            for phrase, *found in rows:
                for out, scopes, n, size in zip(outs, scope_sets, found, marks, strict=True):
                    if phrase not in out:  # a count still fresh in the cache stays
                        out[phrase] = int(n)
                        self._doc_freq[(scopes, phrase)] = (out[phrase], size)
        return outs

    def _scope_totals(self, scopes: tuple[str, ...] | None) -> tuple[int, float]:
        """(chunks, average length) of the scopes' keyword index (None: every scope)."""
        size = self._mark(scopes)
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

    def term_stats(self, terms: Sequence[str], scopes: Sequence[str] | None = None) -> TermStats:
        """Document frequencies (per term, the largest count among its stems), as the
        SQLite store gives them: with ``scopes``, the chunks of these scopes and the
        scopes' chunk total (scores never depend on other tenants); ``postings`` are the
        whole index's (for plan choices). The scoped counts are GIN counts restricted to
        the scopes, cached like the whole index's (re-read when the index has moved by
        more than 1%): the first query of a new term in a scope pays one count."""
        if not terms:
            return TermStats(0, {})
        size = self._index_size()
        stems = {t: [lexeme(s) for s in scratch.stems(t)] for t in terms}
        phrases = [_quote(s) for group in stems.values() for s in group]

        def per_term(freq: dict[str, int]) -> dict[str, int]:
            return {
                t: max((freq.get(_quote(s), 0) for s in group), default=0)
                for t, group in stems.items()
            }

        if scopes is None:
            everywhere = per_term(self._freq(None, phrases))
            return TermStats(size, everywhere, everywhere)
        key = tuple(sorted(set(scopes)))
        total, _ = self._scope_totals(key)
        # Both counts of a new term in one statement (the whole index's and the scopes').
        whole, scoped = self._freqs([None, key], phrases)
        everywhere = per_term(whole)
        return TermStats(total, per_term(scoped), everywhere)

    # ------------------------------------------------------------------ search

    def keyword_search(
        self,
        scopes: Sequence[str],
        query: Query,
        keywords: KeywordQuery,
        limit: int,
        now: datetime,
        *,
        time_limit_s: float | None = None,
    ) -> list[ChunkMatch]:
        """The ``limit`` best chunks by BM25 that ``keywords`` (compiled by ``to_tsquery``)
        finds and pass scope and filters, best first (ties: lower chunk id first); newest
        first among the matches when asked. ``time_limit_s`` (a caller's syntax) becomes
        the statement's ``statement_timeout``. NEAR and ``^`` have no exact tsquery: their
        chunks are found by the phrases alone, a wider page of them, and kept when FTS5's
        own matcher says they match (``scratch.filter``)."""
        compiled = to_tsquery(keywords)
        if compiled is None:
            return []
        tsquery, phrases, verify = compiled
        newest_first = keywords.newest_first
        wanted = limit * _VERIFY_PAGE if verify else limit
        # The statistics of the visible scopes only (issue 25: the whole index's let one
        # tenant's writes move another's scores and order); ``term_stats`` read the same
        # counts for this search, so they come from the cache.
        key = tuple(sorted(set(scopes)))
        total, avgdl = self._scope_totals(key)
        freq = self._freq(key, list(phrases))
        weight: dict[str, float] = {}
        for phrase, lexeme in phrases.items():
            n = freq.get(phrase, 0)
            # The cached total may lag a fresh count by up to 1% (50 chunks): never
            # fewer chunks than hold the term (a negative log argument otherwise).
            total = max(total, n)
            idf = math.log((total - n + 0.5) / (n + 0.5)) if total else 0.0
            weight[lexeme] = weight.get(lexeme, 0.0) + (idf if idf > 0 else 1e-6)
        clause, params = self._scope_clause(scopes)
        where, extra = self._filter_sql(query, now)
        filters = " AND ".join([clause, *where])
        lexemes = list(weight)
        # BM25 over the query's lexemes only: setweight marks them, ts_filter keeps them,
        # so the unnest reads a few lexemes per chunk instead of all of them.
        score = (
            "(SELECT COALESCE(SUM((%s::float8[])[array_position(%s::text[], u.lexeme)] "
            "* cardinality(u.positions) * %s / "
            "(cardinality(u.positions) + %s * (1 - %s + %s * (c.length + 1) / %s))), 0) "
            "FROM unnest(ts_filter(setweight(c.terms, 'A', %s::text[]), '{a}')) u)"
        )
        # SQLite's FTS5 counts each row's scope key token in its length (migration 0013,
        # store/sqlite/termcounts.py): +1 to every length, so both backends score alike.
        score_params = [list(weight.values()), lexemes, K1 + 1, K1, B, B, avgdl + 1, lexemes]
        # The memory filters are a subplan run on the chunks in rank order until
        # ``limit`` passed: a join would read (or hash) every matched chunk's memory.
        passes = "(SELECT TRUE FROM memories m WHERE m.id = {}.memory_id AND " + filters + ")"
        plain = (
            keywords.expression is None
            and keywords.mode == "any"
            and not verify
            and all(_unquote(p) == lexeme for p, lexeme in phrases.items())
        )
        if plain and not newest_first:
            # Plain terms: scored from the postings' index alone (tf and length are in
            # it), best first, and only the chunks read until ``limit`` passed. The
            # lexemes in bytewise order, as a tsvector holds them: each chunk's sum
            # adds its terms in the order the other plan does (the same float).
            order = sorted(weight)
            postings = (
                "SELECT p.chunk_id AS id, SUM(w.w * p.tf * %s / "
                "(p.tf + %s * (1 - %s + %s * (p.length + 1) / %s))) AS score "
                "FROM unnest(%s::text[], %s::float8[]) AS w(lexeme, w) "
                "JOIN keyword_postings p ON p.lexeme = w.lexeme AND p.scope = ANY(%s) "
                "GROUP BY p.chunk_id"
            )
            sql = (
                "SELECT c.id, c.memory_id, c.seq, c.text, s.score FROM ("
                f"{postings} ORDER BY score DESC, p.chunk_id OFFSET 0) s "
                f"JOIN chunks c ON c.id = s.id WHERE {passes.format('c')} "
                "ORDER BY s.score DESC, s.id LIMIT %s"
            )
            values = [
                K1 + 1,
                K1,
                B,
                B,
                avgdl + 1,
                order,
                [weight[lexeme] for lexeme in order],
                list(scopes),
                *params,
                *extra,
                wanted,
            ]
        elif newest_first:
            if sum(freq.values()) <= _FENCE_MAX:
                # Few matches: sort them by id first (a fence), then check the memory
                # filters in that order until the page is full. Without the fence the
                # planner checked every match's memory before sorting (at 1M chunks,
                # 6,700 matches of one term: 500 ms instead of ~20 ms).
                sql = (
                    f"SELECT c.id, c.memory_id, c.seq, c.text, {score} AS score FROM ("
                    "SELECT c.id FROM (SELECT c.id, c.memory_id FROM chunks c "
                    "WHERE c.terms @@ %s::tsquery AND c.scope = ANY(%s) ORDER BY c.id DESC "
                    f"OFFSET 0) c WHERE {passes.format('c')} LIMIT %s) n "
                    "JOIN chunks c ON c.id = n.id ORDER BY score DESC, c.id LIMIT %s"
                )
            else:
                # No fence: with common terms the planner walks the newest chunks
                # backwards and stops at the page (measured at 100k: 3 ms instead of
                # 39 ms for a bitmap scan of every match sorted by id).
                sql = (
                    f"SELECT c.id, c.memory_id, c.seq, c.text, {score} AS score FROM ("
                    "SELECT c.id FROM chunks c WHERE c.terms @@ %s::tsquery AND "
                    f"c.scope = ANY(%s) AND {passes.format('c')} ORDER BY c.id DESC LIMIT %s) n "
                    "JOIN chunks c ON c.id = n.id ORDER BY score DESC, c.id LIMIT %s"
                )
            values = [
                *score_params,
                tsquery,
                list(scopes),
                *params,
                *extra,
                wanted * _NEWEST_PAGE,
                wanted,
            ]
        else:
            sql = (
                "SELECT s.id, s.memory_id, s.seq, s.text, s.score FROM ("
                f"SELECT c.id, c.memory_id, c.seq, c.text, {score} AS score FROM chunks c "
                "WHERE c.terms @@ %s::tsquery AND c.scope = ANY(%s) "
                f"ORDER BY score DESC, c.id OFFSET 0) s WHERE {passes.format('s')} "
                "ORDER BY s.score DESC, s.id LIMIT %s"
            )
            values = [*score_params, tsquery, list(scopes), *params, *extra, wanted]
        rows = self._timed(sql, values, time_limit_s)
        self._remember_texts([(r[0], r[3]) for r in rows])
        if verify:
            kept = scratch.filter([(r[0], r[3]) for r in rows], to_fts5(keywords))
            rows = [r for r in rows if r[0] in kept][:limit]
        return [ChunkMatch(r[0], r[1], r[2], r[3], float(r[4])) for r in rows]

    def _timed(self, sql: str, values: Sequence[Any], time_limit_s: float | None) -> list[Any]:
        """Rows of ``sql``; past ``time_limit_s`` PostgreSQL cancels it and the caller's
        query is ``InvalidInput`` (as SQLite's progress handler makes it).

        Planned for its own values every time (``_PREPARE``): the plan depends on how
        common the query's terms are, which a generic plan cannot know. psycopg prepares
        a statement on its 5th run on a connection and PostgreSQL then switches to a
        generic plan when its estimate looks no worse; at 1M chunks that plan took
        2.9 s where the query's own took 1 ms (a bitmap scan of every match instead of
        walking the newest chunks)."""
        if time_limit_s is None:
            return self._q(sql, values, prepare=_PREPARE)

        def run(conn: Any) -> list[Any]:
            conn.execute(f"SET LOCAL statement_timeout = {max(1, int(time_limit_s * 1000))}")
            return conn.execute(sql, values, prepare=_PREPARE).fetchall()

        try:
            return self.in_read_transaction(run)
        except QueryCanceled:
            raise InvalidInput(
                "query",
                f"stopped after {time_limit_s:g} s: this FTS5 query costs too much "
                "(setting fts_time_limit_ms); use fewer words or fewer prefix* terms",
            ) from None

    def matched_terms(
        self,
        chunk_ids: Sequence[int],
        terms: Sequence[str],
        texts: Mapping[int, str] | None = None,
    ) -> dict[int, set[str]]:
        """Which of ``terms`` each chunk matches: FTS5's own matcher on the chunks' texts,
        so the coverage score above the protocol is the same on both backends
        (``scratch.held``, as SQLite's wide scopes: a one-token term by the stems of the
        text's words, the rest in the scratch index; 0.37 against 0.73 ms a search at
        2,000 memories, and no scratch lock for an ASCII text's words seen before)."""
        out: dict[int, set[str]] = {cid: set() for cid in chunk_ids}
        if not chunk_ids or not terms:
            return out
        # A chunk's text never changes (a re-chunked memory gets new chunk ids), so the
        # texts the lanes just read serve here without another round trip.
        given = texts or {}
        with self._stats_lock:
            known = [
                (cid, given[cid] if cid in given else self._texts[cid])
                for cid in chunk_ids
                if cid in given or cid in self._texts
            ]
        have = {cid for cid, _ in known}
        missing = [cid for cid in chunk_ids if cid not in have]
        if missing:
            read = self._q(
                "SELECT id, text FROM chunks WHERE id = ANY(%s::bigint[])", [int_array(missing)]
            )
            self._remember_texts(read)
            known += [(r[0], r[1]) for r in read]
        for cid, found in scratch.held(known, terms).items():
            out[cid] |= found
        return out

    def memory_chunks(self, memory_ids: Sequence[str]) -> list[ChunkMatch]:
        if not memory_ids:
            return []
        rows = self._q(
            "SELECT id, memory_id, seq, text FROM chunks WHERE memory_id = ANY(%s::text[]) "
            "ORDER BY memory_id, seq",
            [text_array(memory_ids)],
        )
        self._remember_texts([(r[0], r[3]) for r in rows])
        return [ChunkMatch(r[0], r[1], r[2], r[3], 0.0) for r in rows]
