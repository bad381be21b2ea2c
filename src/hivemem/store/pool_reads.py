"""The search's read of its pool (``Backend.pool_rows``), a protocol of its own beside
``protocols.py``'s: the best candidates after fusion, fusion's dialogue context of the
best hits, and the rows both need, in one read where the backend allows (SQLite: one
statement, ``store/sqlite/candidates.py``; PostgreSQL: ``session_neighbours``, then
``candidate_rows``)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any, Protocol

from ..clock import from_text
from ..types import Kind, Memory, MemoryType, Query, Status
from .rows import _KINDS, _STATUSES, _TYPES, COLUMNS, _json_list, _json_object, row_to_memory

PoolRow = tuple["Memory | RankRow", Any, int | None]  # a memory, a chunk's vector, its chunk
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
        each with the chunk its vector is of (None: the memory's first). A memory comes
        as a ``Memory`` or as its ``RankRow`` (the row read, no ``Memory`` built). A neighbour's
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


_AT = {name: i for i, name in enumerate(COLUMNS)}


class RankRow:
    """A memory of the search's pool as its row was read (``rows.COLUMNS``), with the
    fields ranking reads (``pipeline.adjustments``, the session and length priors,
    ``hitset``), the same values a ``Memory`` of the row would hold; ``memory()``
    builds that ``Memory`` for a returned hit.

    Why: a search reads ~60 rows for its pool and returns ``limit`` of them; a frozen
    ``Memory`` of 29 fields (its times parsed, its JSON decoded) cost ~15-30 µs a row,
    about 1 ms a search at 20,000 memories (``hivemem bench``'s rows stage)."""

    __slots__ = (
        "row", "id", "scope", "kind", "type", "content", "source", "status", "confidence",
        "access_count", "last_accessed", "event_time", "created_at", "session_id",
        "_queued",
    )  # fmt: skip

    def __init__(self, row: Sequence[Any], queued: tuple[int, datetime] | None = None) -> None:
        self.row = row
        self.id: str = row[_AT["id"]]
        self.scope: str = row[_AT["scope"]]
        kind, type_, status = row[_AT["kind"]], row[_AT["type"]], row[_AT["status"]]
        self.kind: Kind = _KINDS.get(kind) or Kind(kind)
        self.type: MemoryType = _TYPES.get(type_) or MemoryType(type_)
        self.content: str = row[_AT["content"]]
        self.source: str = row[_AT["source"]]
        self.status: Status = _STATUSES.get(status) or Status(status)
        self.confidence: float = row[_AT["confidence"]]
        self.access_count: int = row[_AT["access_count"]]
        self.last_accessed = from_text(row[_AT["last_accessed"]])
        self.event_time = from_text(row[_AT["event_time"]])
        self.created_at: datetime = from_text(row[_AT["created_at"]])
        self.session_id: str | None = row[_AT["session_id"]]
        self._queued = queued
        if queued is not None:  # the access counts not yet written (``AccessLog``)
            self.access_count += queued[0]
            self.last_accessed = queued[1]

    @property
    def attributes(self) -> Mapping[str, Any]:
        return _json_object(self.row[_AT["attributes"]])

    @property
    def source_ids(self) -> tuple[str, ...]:
        return _json_list(self.row[_AT["source_ids"]])

    def memory(self) -> Memory:
        """The ``Memory`` of the row, as ``get_many`` gives it (queued counts added)."""
        memory = row_to_memory(self.row)
        if self._queued is None:
            return memory
        count, when = self._queued
        return replace(memory, access_count=memory.access_count + count, last_accessed=when)
