"""Dialogue neighbours of a search's anchors (``Backend.session_neighbours``, SQLite).

A search asks twice: the keyword lane for its matches (the window over a turn's
neighbours), then fusion for its best hits (dialogue context), and the best hits are
mostly keyword matches already. The pairs of each anchor are kept for the version of the
file they were read under (``PairMemo``; inside a search's read view the version costs no
statement), per scope list and filters, so the second ask reads only the anchors the
first did not: often none, one statement a search fewer. The statement (``pairs_sql``)
is shared with the keyword lane's window (``keyword_scope.py``), which asks the same
pairs with the joining neighbours' chunks in one statement.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...types import Query
from ..rows import placeholders
from .database import sqlite_driver

if TYPE_CHECKING:  # pragma: no cover
    from .database import SQLiteDatabase

# A CTE hint (SQLite 3.35+; the stdlib driver's system SQLite may be older).
ONCE = "MATERIALIZED " if sqlite_driver.sqlite_version_info >= (3, 35) else ""
_MEMO_MAX = 20_000  # anchors kept for one version of the file
Sides = list[tuple[str, bool]]


@dataclass(slots=True)
class PairMemo:
    """Each anchor's neighbours, per (scopes, filters), for one version of the file.

    Kept as tuples, given back as lists: a tuple of strings and booleans leaves the
    garbage collector's lists once a collection has seen it, a list never does, and the
    memo holds up to ``_MEMO_MAX`` anchors while nothing is written (in a read-heavy
    process every full collection walked one list per anchor read: at limit 50 over
    long scopes 5,000 more tracked objects per 100 searches, and a full collection
    every ~100 searches of ~20 ms)."""

    version: Any = None
    sides: dict[tuple[Any, ...], dict[str, tuple[tuple[str, bool], ...]]] = field(
        default_factory=dict
    )
    lock: threading.Lock = field(default_factory=threading.Lock)
    size: int = 0


def read(
    db: SQLiteDatabase,
    memo: PairMemo,
    version: Any,
    scopes: Sequence[str],
    memory_ids: Sequence[str],
    query: Query,
    now: datetime,
) -> dict[str, Sides]:
    """For each episode among ``memory_ids``: the episodes written just before and just
    after it in its session (insertion order) that pass the filters, as (id, whether it
    comes after); in anchor id order (the statement's). ``version``: the file's, under
    which pairs are kept (None: read, keep nothing, as inside a write transaction)."""
    if not memory_ids:
        return {}
    ask = Asked.of(db, scopes, query, now)
    known, todo = kept(memo, version, ask, memory_ids)
    if todo:
        found = _statement(db, todo, ask.filters, ask.params)
        known.update(keep(memo, version, ask, todo, found))
    return in_order(known)


@dataclass(frozen=True, slots=True)
class Asked:
    """The filters neighbours must pass (scope and query, over ``memories m``), and the
    memo's key for them."""

    filters: str
    params: list[Any]
    key: tuple[Any, ...]

    @classmethod
    def of(cls, db: SQLiteDatabase, scopes: Sequence[str], query: Query, now: datetime) -> Asked:
        clause, params = db._scope_clause(scopes)
        where, extra = db._filter_sql(query, now)
        key = (tuple(scopes), tuple(where), tuple(extra))
        return cls(" AND ".join([clause, *where]), [*params, *extra], key)


def kept(
    memo: PairMemo, version: Any, ask: Asked, memory_ids: Sequence[str]
) -> tuple[dict[str, Sides], list[str]]:
    """The anchors' pairs kept under ``version`` (None: none), and the anchors to read."""
    ids = list(dict.fromkeys(memory_ids))
    known: dict[str, Sides] = {}
    if version is not None:
        with memo.lock:
            if memo.version != version or memo.size > _MEMO_MAX:
                memo.version, memo.sides, memo.size = version, {}, 0
            kept = memo.sides.get(ask.key, {})
            known = {i: list(kept[i]) for i in ids if i in kept}
    return known, [i for i in ids if i not in known]


def keep(
    memo: PairMemo, version: Any, ask: Asked, todo: Sequence[str], found: dict[str, Sides]
) -> dict[str, Sides]:
    """``found`` (the pairs read for ``todo``) for every anchor of ``todo``, kept under
    ``version`` (None: not kept)."""
    read_now = {i: found.get(i, []) for i in todo}
    if version is not None:
        with memo.lock:
            if memo.version == version:
                memo.sides.setdefault(ask.key, {}).update(
                    (i, tuple(pairs)) for i, pairs in read_now.items()
                )
                memo.size += len(read_now)
    return read_now


def in_order(known: dict[str, Sides]) -> dict[str, Sides]:
    """The anchors with a neighbour, in anchor id order (``read``'s answer)."""
    return {anchor: known[anchor] for anchor in sorted(known) if known[anchor]}


def _statement(
    db: SQLiteDatabase, ids: list[str], filters: str, params: list[Any]
) -> dict[str, Sides]:
    # One statement: the pairs, and which neighbours pass the scope and filters
    # (``passing``'s rule, as a set the pairs are looked up in).
    rows = db._read(
        pairs_sql(ids, filters)
        + "SELECT anchor, before, before IN ok, after, after IN ok FROM pairs",
        [*ids, *params],
    )
    return sides(rows)


_SIDE = (
    "(SELECT n.id FROM memories n WHERE n.scope = a.scope"
    " AND n.session_id = a.session_id AND n.kind = 'episode'"
    " AND n.seq {op} a.seq ORDER BY n.seq {order} LIMIT 1)"
)


def pairs_sql(ids: Sequence[str], filters: str) -> str:
    """``WITH pairs (anchor, before, after), ok (id)``: each episode among ``ids`` with
    its session's episodes just before and after it, and which of those pass
    ``filters`` (over ``memories m``). Parameters: the ids, then the filters'. Each CTE
    is evaluated once (inlined, the pairs' subqueries ran twice: 0.85 ms vs 0.33 at
    20k)."""
    return (
        f"WITH pairs (anchor, before, after) AS {ONCE}(SELECT a.id, "
        f"{_SIDE.format(op='<', order='DESC')}, {_SIDE.format(op='>', order='ASC')} "
        f"FROM memories a WHERE a.id IN ({placeholders(ids)}) AND a.kind = 'episode' "
        "AND a.session_id IS NOT NULL), "
        f"ok (id) AS {ONCE}(SELECT m.id FROM memories m WHERE m.id IN "
        f"(SELECT before FROM pairs UNION SELECT after FROM pairs) AND {filters}) "
    )


def sides(rows: Sequence[Sequence[Any]]) -> dict[str, list[tuple[str, bool]]]:
    """Rows of (anchor, before, before passes, after, after passes) as each anchor's
    passing neighbours, (id, whether it comes after)."""
    out: dict[str, list[tuple[str, bool]]] = {}
    for anchor, before, before_ok, after, after_ok in rows:
        found = [
            (n, later)
            for n, later, ok in ((before, False, before_ok), (after, True, after_ok))
            if n is not None and ok
        ]
        if found:
            out[anchor] = found
    return out
