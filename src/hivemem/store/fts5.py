"""A neutral ``KeywordQuery`` written as an FTS5 ``MATCH`` string. SQLite's keyword lane
searches with it; PostgreSQL's checks NEAR groups and ``^`` anchors (which tsquery cannot
say) with it on FTS5's private in-memory table (``scratch.py``)."""

from __future__ import annotations

from .. import text as textmod
from .keyword_query import And, Empty, Expr, KeywordQuery, Near, Not, Or, Phrase


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
    return f"({_fts5(expr.left)} {op} {_fts5(expr.right)})"
