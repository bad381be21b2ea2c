"""The statement of the episodes beside others in their session (``session_neighbours``),
shared by the backend's method and the keyword lane's window (``keyword_scope.py``), which
asks the same pairs with the joining neighbours' chunks in one statement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..rows import placeholders
from .database import sqlite_driver

# A CTE hint (SQLite 3.35+; the stdlib driver's system SQLite may be older).
ONCE = "MATERIALIZED " if sqlite_driver.sqlite_version_info >= (3, 35) else ""

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
