"""The two plans of ``SQLiteBackend.keyword_search`` (see its docstring): a mixin of the
backend, kept apart so the data-access module stays under 800 lines. It issues SQL
through the backend's own ``_read`` and so belongs to the one data-access layer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import text as textmod
from ...types import Query
from ..keyword_query import And, Empty, Expr, KeywordQuery, Near, Not, Or, Phrase
from ..protocols import ChunkMatch
from ..rows import placeholders

_RANK_PAGE_MAX = 4096  # widest FTS-only page before keyword_search filters in one statement
_NEWEST_PAGE = 4  # newest-first keyword search reads this many times the rows it returns


def to_fts5(query: KeywordQuery) -> str:
    """``query`` as an FTS5 ``MATCH`` string ("" when it can match nothing). Every
    phrase is quoted, every operator explicit and parenthesised, so the string means
    exactly the tree (and for a caller's syntax, what SQLite read from it)."""
    if query.expression is None:
        if query.mode == "any":  # the lane's own query: the OR of the quoted terms
            return textmod.fts_or_query(list(query.terms))
        joiner = " AND " if query.mode == "all" else " + "
        return joiner.join(textmod.fts_quote(t) for t in query.terms)
    return _fts5(query.expression)


def _fts5(expr: Expr) -> str:
    if isinstance(expr, Empty):
        return ""
    if isinstance(expr, Phrase):
        pieces = " + ".join(
            textmod.fts_quote(p.text) + (" *" if p.prefix else "") for p in expr.pieces
        )
        return ("^ " if expr.initial else "") + pieces
    if isinstance(expr, Near):
        return f"NEAR({' '.join(_fts5(p) for p in expr.phrases)}, {expr.distance})"
    op = {And: "AND", Or: "OR", Not: "NOT"}[type(expr)]
    return f"({_fts5(expr.left)} {op} {_fts5(expr.right)})"  # type: ignore[union-attr]


class KeywordPlans:
    """``_keyword_plans`` and its first plan, ``_rank_then_filter``."""

    _read: Any

    def _keyword_plans(
        self,
        query: Query,
        match: str,
        filters: str,
        filter_params: list[Any],
        limit: int,
        newest_first: bool,
    ) -> list[ChunkMatch]:
        """The two plans of ``keyword_search`` (see there)."""
        found = None
        if not (query.sessions or query.tags):
            found = self._rank_then_filter(match, filters, filter_params, limit, newest_first)
        if found is None:
            # Newest first: FTS5 walks the doclists by rowid and scores only the rows
            # it returns; ordered by score, it must score every match first.
            order = "c.id DESC" if newest_first else "score DESC, c.id"
            rows = self._read(
                "SELECT c.id, c.memory_id, c.seq, c.text, -bm25(chunks_fts) AS score "
                "FROM chunks_fts CROSS JOIN chunks c ON c.id = chunks_fts.rowid "
                "CROSS JOIN memories m ON m.id = c.memory_id "
                f"WHERE chunks_fts MATCH ? AND {filters} "
                f"ORDER BY {order} LIMIT ?",
                [match, *filter_params, limit * (_NEWEST_PAGE if newest_first else 1)],
                raw=True,
            )
            rows.sort(key=lambda r: (-r[4], r[0]))
            found = [ChunkMatch(r[0], r[1], r[2], r[3], r[4]) for r in rows[:limit]]
        return found

    def _rank_then_filter(
        self,
        match: str,
        filters: str,
        filter_params: Sequence[Any],
        limit: int,
        newest_first: bool = False,
    ) -> list[ChunkMatch] | None:
        """The first plan of ``keyword_search``; ``None`` when the filters keep so few of
        the best-ranked chunks that the one-statement plan is the cheaper way."""
        page = limit * (_NEWEST_PAGE if newest_first else 1)
        order = "rowid DESC" if newest_first else "score DESC, rowid"
        while True:
            ranked = self._read(
                "SELECT rowid, -bm25(chunks_fts) AS score FROM chunks_fts "
                f"WHERE chunks_fts MATCH ? ORDER BY {order} LIMIT ?",
                [match, page],
                raw=True,
            )
            ranked.sort(key=lambda r: (-r[1], r[0]))
            if not ranked:
                return []
            ids = [r[0] for r in ranked]
            rows = self._read(
                "SELECT c.id, c.memory_id, c.seq, c.text FROM chunks c "
                "CROSS JOIN memories m ON m.id = c.memory_id "
                f"WHERE c.id IN ({placeholders(ids)}) AND {filters}",
                [*ids, *filter_params],
            )
            passed = {r[0]: r for r in rows}
            if len(passed) >= limit or len(ranked) < page:  # enough, or every match seen
                out = []
                for chunk_id, score in ranked:
                    row = passed.get(chunk_id)
                    if row is not None:
                        out.append(ChunkMatch(row[0], row[1], row[2], row[3], score))
                        if len(out) == limit:
                            break
                return out
            # Trigger: filters dropped too many. Why: a wider page is one more ranking
            # pass. Outcome: widen to what the observed pass rate needs, or give up.
            needed = page * 2 * limit // max(1, len(passed)) if passed else _RANK_PAGE_MAX + 1
            if needed > _RANK_PAGE_MAX:
                return None
            page = max(page * 4, needed)
