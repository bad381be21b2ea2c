"""Reads of the web inspector (``hivemem.inspect``): keyset pages of memories, counts by
kind/type/status/category, growth per day, entity lists, the entities of one memory and
the memories drawn from one. Read-only; every statement is filtered by scope like the
rest of the backend. Portable SQL, shared by both backends (PostgreSQL runs it through
its dialect view, ``postgres/portable.py``).

Pages are keyset pages on ``(created_at, id)``, newest first, so page 500 costs what
page 1 costs: the ``memories_scope_created`` index gives the order, no ``OFFSET``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import Any

from ..clock import from_text, to_text
from ..types import Entity, ListFilter, Memory
from .protocols import SessionInfo
from .rows import placeholders


class InspectionStatements:
    """The inspector's SQL (the backend's connection and lock; stateless)."""

    def __init__(self, backend: Any) -> None:
        self._db = backend

    def page(
        self,
        scopes: Sequence[str],
        flt: ListFilter,
        now: datetime,
        *,
        categories: Sequence[str] = (),
        before: tuple[str, str] | None = None,
        after: tuple[str, str] | None = None,
        stored_since: datetime | None = None,
        stored_until: datetime | None = None,
        limit: int = 50,
    ) -> list[Memory]:
        """Memories passing ``flt`` (and ``categories``, and a ``created_at`` range: a
        range of the index, unlike the event-time filters of ``flt``), newest first,
        strictly older than the keyset ``before`` = (created_at text, id) when given;
        or, with ``after``, the ``limit`` oldest of those strictly newer, still listed
        newest first (the page before)."""
        clause, params = self._db._scope_clause(scopes)
        where, extra = self._db._filter_sql(flt, now)
        if categories:
            where.append(f"m.category IN ({placeholders(categories)})")
            extra += list(categories)
        if stored_since is not None:
            where.append("m.created_at >= ?")
            extra.append(to_text(stored_since))
        if stored_until is not None:
            where.append("m.created_at < ?")
            extra.append(to_text(stored_until))
        if before is not None:
            # the first term is an index range, so the page streams from the index; an
            # OR of the two cases alone made SQLite read and sort every older row
            where.append("m.created_at <= ? AND (m.created_at < ? OR m.id < ?)")
            extra += [before[0], before[0], before[1]]
        order = "DESC"
        if after is not None:
            where.append("m.created_at >= ? AND (m.created_at > ? OR m.id > ?)")
            extra += [after[0], after[0], after[1]]
            order = "ASC"
        found = self._db._memories(
            " AND ".join([clause, *where]),
            [*params, *extra, limit],
            f"ORDER BY m.created_at {order}, m.id {order} LIMIT ?",
        )
        return found if order == "DESC" else found[::-1]

    def count(self, scopes: Sequence[str], flt: ListFilter, now: datetime) -> int:
        """How many memories pass ``flt``: the total beside a page of ``list``."""
        clause, params = self._db._scope_clause(scopes)
        where, extra = self._db._filter_sql(flt, now)
        if flt.key is not None:
            where.append("m.key = ?")
            extra.append(flt.key)
        filters = " AND ".join([clause, *where])
        rows = self._db._read(f"SELECT COUNT(*) FROM memories m WHERE {filters}", [*params, *extra])
        return int(rows[0][0])

    def counts(self, scopes: Sequence[str]) -> list[tuple[str, str, str, str, int]]:
        """(status, kind, type, category, count) over the scopes' memories."""
        clause, params = self._db._scope_clause(scopes)
        rows = self._db._read(
            f"SELECT m.status, m.kind, m.type, m.category, COUNT(*) FROM memories m "
            f"WHERE {clause} GROUP BY 1, 2, 3, 4",
            params,
        )
        return [(r[0], r[1], r[2], r[3], int(r[4])) for r in rows]

    def growth(self, scopes: Sequence[str]) -> list[tuple[str, int]]:
        """(day "YYYY-MM-DD", memories created that day), oldest first (the covering
        index ``(scope, status, created_at)`` answers it without the rows)."""
        clause, params = self._db._scope_clause(scopes)
        rows = self._db._read(
            f"SELECT substr(m.created_at, 1, 10), COUNT(*) FROM memories m WHERE {clause} "
            "GROUP BY 1 ORDER BY 1",
            params,
        )
        return [(r[0], int(r[1])) for r in rows]

    def entities(
        self, scopes: Sequence[str], prefix: str | None, limit: int, offset: int
    ) -> list[Entity]:
        """Entities of the scopes, most mentioned first; ``prefix`` filters on the
        canonical name. Aliases are gathered in one pass for the page (per entity they
        would scan the scope's aliases once each)."""
        where = f"e.scope IN ({placeholders(scopes)})"
        params: list[Any] = list(scopes)
        if prefix:
            where += " AND e.canonical >= ? AND e.canonical < ?"
            params += [prefix, prefix + "\U0010ffff"]
        found = self._db.entities._entities(
            f"{where} ORDER BY e.mention_count DESC, e.id LIMIT ? OFFSET ?",
            [*params, limit, offset],
            aliases=False,
        )
        return self._with_aliases(scopes, found)

    def _with_aliases(self, scopes: Sequence[str], found: list[Entity]) -> list[Entity]:
        if not found:
            return found
        ids = [e.id for e in found]
        names: dict[int, list[str]] = {}
        for entity_id, alias in self._db._read(
            f"SELECT entity_id, alias FROM entity_aliases WHERE scope IN ({placeholders(scopes)})"
            f" AND entity_id IN ({placeholders(ids)})",
            [*scopes, *ids],
        ):
            names.setdefault(entity_id, []).append(alias)
        return [
            replace(e, aliases=tuple(sorted(a for a in names.get(e.id, ()) if a != e.canonical)))
            for e in found
        ]

    def sessions(self, scope: str, limit: int, offset: int) -> list[SessionInfo]:
        """The scope's sessions, latest activity first."""
        rows = self._db._read(
            "SELECT scope, session_id, started_at, last_event_at, episode_count, "
            "consolidated_at FROM sessions WHERE scope = ? "
            "ORDER BY last_event_at DESC, session_id LIMIT ? OFFSET ?",
            [scope, limit, offset],
        )
        return [
            SessionInfo(r[0], r[1], from_text(r[2]), from_text(r[3]), r[4], from_text(r[5]))
            for r in rows
        ]

    def session(self, scope: str, session_id: str) -> SessionInfo | None:
        rows = self._db._read(
            "SELECT scope, session_id, started_at, last_event_at, episode_count, "
            "consolidated_at FROM sessions WHERE scope = ? AND session_id = ?",
            [scope, session_id],
        )
        r = rows[0] if rows else None
        return (
            SessionInfo(r[0], r[1], from_text(r[2]), from_text(r[3]), r[4], from_text(r[5]))
            if r
            else None
        )

    def entities_of(self, scopes: Sequence[str], memory_id: str) -> list[Entity]:
        """The entities a memory mentions (of the scopes), most mentioned first."""
        return self._db.entities._entities(
            f"e.scope IN ({placeholders(scopes)}) AND e.id IN "
            "(SELECT entity_id FROM memory_entities WHERE memory_id = ?) "
            "ORDER BY e.mention_count DESC, e.id",
            [*scopes, memory_id],
        )

    def drawn_from(self, scopes: Sequence[str], memory: Memory, limit: int = 50) -> list[Memory]:
        """Memories whose provenance (``source_ids``) names ``memory``: the facts drawn
        from an episode. Looked for in the episode's session when it has one (the
        ``memories_session`` index), else among the scopes' newest memories."""
        clause, params = self._db._scope_clause(scopes)
        where = f"{clause} AND m.id != ? AND m.source_ids LIKE ?"
        extra: list[Any] = [memory.id, f"%{json.dumps(memory.id)}%"]
        if memory.session_id is not None:
            where += " AND m.session_id = ?"
            extra.append(memory.session_id)
        else:
            where += " AND m.created_at >= ?"
            extra.append(to_text(memory.created_at))
        return self._db._memories(where, [*params, *extra, limit], "ORDER BY m.id LIMIT ?")
