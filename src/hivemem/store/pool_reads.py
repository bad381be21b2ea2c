"""The search's read of its pool (``Backend.pool_rows``), a protocol of its own beside
``protocols.py``'s: the best candidates after fusion, fusion's dialogue context of the
best hits, and the rows both need, in one read where the backend allows (SQLite: one
statement, ``store/sqlite/candidates.py``; PostgreSQL: ``session_neighbours``, then
``candidate_rows``)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from ..types import Memory, Query

PoolRow = tuple[Memory, Any, int | None]  # a memory, a chunk's vector, the chunk it is of
Neighbours = dict[str, list[tuple[str, bool]]]  # ``session_neighbours``' answer


class PoolReads(Protocol):
    def pool_rows(
        self,
        scopes: Sequence[str],
        wanted: Mapping[str, int | None],
        model: str | None,
        anchors: Sequence[str],
        chunk_of: Callable[[str], int | None],
        keep: Callable[[Neighbours], Collection[str]],
        query: Query,
        now: datetime,
        have: Collection[str] = (),
    ) -> list[PoolRow]:
        """``session_neighbours`` of ``anchors``, then ``candidate_rows`` of ``wanted``
        and of those neighbours that ``keep`` names (given the neighbours; in no order),
        each with the chunk its vector is of (None: the memory's first). A neighbour's
        chunk is ``chunk_of``'s where the backend asks it, else its first: where that is
        not the candidate's own, the caller reads the vector again. ``have``: memories
        whose chunk's vector the caller holds (none is read for them)."""
        ...


def in_two_reads(
    backend: Any,
    scopes: Sequence[str],
    wanted: Mapping[str, int | None],
    model: str | None,
    anchors: Sequence[str],
    chunk_of: Callable[[str], int | None],
    keep: Callable[[Neighbours], Collection[str]],
    query: Query,
    now: datetime,
    have: Collection[str] = (),
) -> list[PoolRow]:
    """``pool_rows`` for a backend without the one statement, as its method
    (``pool_rows = in_two_reads``): ``session_neighbours``, then ``candidate_rows`` of
    the memories ``keep`` wants (PostgreSQL's; vectors are read for ``have`` too)."""
    sides = backend.session_neighbours(scopes, anchors, query, now) if anchors else {}
    asked = dict(wanted)
    for pairs in sides.values():
        for neighbour, _ in pairs:
            asked.setdefault(neighbour, chunk_of(neighbour))
    kept = keep(sides)
    rows = backend.candidate_rows(scopes, {k: v for k, v in asked.items() if k in kept}, model)
    return [(m, v, asked[m.id]) for m, v in rows]
