"""Entities of the PostgreSQL store (the rules of ``hivemem.store.sqlite.entities``).

``link_mentions`` runs inside the write of a memory: each mention resolves to an entity
of the memory's scope by canonical name and type, then by alias, else a new entity
(``ON CONFLICT`` makes two nodes creating one entity agree on one row). Mentions are
handled in a fixed order so that two writers touching the same entities lock their rows
in the same order and never deadlock.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...clock import to_text
from ...types import Entity, ListFilter, Query
from ..entity_rows import Describes, aliases_of_new, entity_rows
from . import text_array

if TYPE_CHECKING:  # pragma: no cover
    from ...providers.entities import Mention
    from .database import PostgresDatabase


def link_mentions(
    db: PostgresDatabase, scope: str, memory_id: str, mentions: Sequence[Mention], when: str
) -> None:
    """Three statements for the usual case (every entity known): resolve all mentions,
    then link them and count the new links in one. A mention not resolved at first
    (a new entity, or one another mention here names by alias) takes the step-by-step
    path, in order, so it sees the entities created before it in this call."""
    ordered = sorted(mentions, key=lambda m: (m.canonical, m.type.value))
    if not ordered:
        return
    found = db._x(
        "SELECT (SELECT e.id FROM entities e WHERE e.scope = %s AND e.canonical = m.c "
        "AND e.type = m.t), (SELECT a.entity_id FROM entity_aliases a JOIN entities e "
        "ON e.id = a.entity_id WHERE a.scope = %s AND a.alias = m.c "
        "AND (e.protected = 0 OR e.type = m.t) ORDER BY a.entity_id LIMIT 1) "
        "FROM unnest(%s::text[], %s::text[]) WITH ORDINALITY AS m(c, t, n) ORDER BY m.n",
        [scope, scope, [m.canonical for m in ordered], [m.type.value for m in ordered]],
    ).fetchall()
    ids: list[int] = []
    for mention, (by_name, by_alias) in zip(ordered, found, strict=True):
        entity_id = by_name if by_name is not None else by_alias
        if entity_id is None:
            entity_id = _resolve_one(db, scope, mention, when)
        if entity_id not in ids:
            ids.append(entity_id)
    # Rows are locked in the mentions' order (as one by one before), so two writers
    # touching the same entities never wait for each other in a cycle.
    db._x(
        "WITH linked AS (INSERT INTO memory_entities (memory_id, entity_id) "
        "SELECT %s, unnest(%s::bigint[]) ON CONFLICT DO NOTHING RETURNING entity_id), "
        "locked AS (SELECT e.id FROM entities e WHERE e.id IN (SELECT entity_id FROM linked) "
        "ORDER BY array_position(%s::bigint[], e.id) FOR NO KEY UPDATE) "
        "UPDATE entities e SET mention_count = mention_count + 1, "
        "last_seen = GREATEST(last_seen, %s) FROM locked WHERE e.id = locked.id",
        [memory_id, ids, ids, when],
    )


def _resolve_one(db: PostgresDatabase, scope: str, mention: Mention, when: str) -> int:
    """The entity of one mention by canonical name and type, then by alias (a protected
    entity takes mentions of its own type only: it is never merged with a namesake of
    another type, as on SQLite), else a new one with its aliases (``ON CONFLICT`` makes
    two nodes creating one entity agree on one row)."""
    kind = mention.type.value
    row = db._x(
        "SELECT id FROM entities WHERE scope = %s AND canonical = %s AND type = %s",
        [scope, mention.canonical, kind],
    ).fetchone()
    if row is None:
        row = db._x(
            "SELECT a.entity_id FROM entity_aliases a JOIN entities e "
            "ON e.id = a.entity_id WHERE a.scope = %s AND a.alias = %s "
            "AND (e.protected = 0 OR e.type = %s) ORDER BY a.entity_id LIMIT 1",
            [scope, mention.canonical, kind],
        ).fetchone()
    if row is None:
        row = db._x(
            "INSERT INTO entities (scope, canonical, type, name, first_seen, last_seen) "
            "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (scope, canonical, type) "
            "DO UPDATE SET scope = excluded.scope RETURNING id",
            [scope, mention.canonical, kind, mention.name, when, when],
        ).fetchone()
        for alias in aliases_of_new(mention):  # "acme corp" is also "acme"
            db._x(
                "INSERT INTO entity_aliases (scope, alias, entity_id) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [scope, alias, row[0]],
            )
    return int(row[0])


class PgEntityIndex(Describes):
    """Reads of the entity tables, and aliases."""

    def __init__(self, backend: PostgresDatabase) -> None:
        self._db = backend
        self.added = 0  # memories this process inserted (counted by the writes; unread)

    def _entities(self, where: str, params: Sequence[Any], aliases: bool = True) -> list[Entity]:
        gather = (
            "(SELECT COALESCE(json_agg(a.alias), '[]'::json)::text FROM entity_aliases a "
            "WHERE a.scope = e.scope AND a.entity_id = e.id)"
            if aliases
            else "'[]'"
        )
        order = "" if "ORDER BY" in where else " ORDER BY e.id"  # the caller's order
        rows = self._db._q(
            "SELECT e.id, e.scope, e.name, e.canonical, e.type, e.mention_count, "
            f"e.first_seen, e.last_seen, {gather}, e.protected, e.summary "
            f"FROM entities e WHERE {where}{order}",
            params,
        )
        return entity_rows(rows)

    def lookup(
        self, scopes: Sequence[str], names: Sequence[str], *, aliases: bool = True
    ) -> list[Entity]:
        if not names:
            return []
        unique = list(dict.fromkeys(names))[:200]
        return self._entities(
            "e.id IN (SELECT entity_id FROM entity_aliases "
            "WHERE scope = ANY(%s) AND alias = ANY(%s))",
            [list(scopes), unique],
            aliases,
        )

    def linked(
        self,
        scopes: Sequence[str],
        entity_ids: Sequence[int],
        query: Query | ListFilter | None,
        now: datetime,
        limit: int,
    ) -> list[tuple[str, int]]:
        clause, params = self._db._scope_clause(scopes)
        where, extra = self._db._filter_sql(query, now) if query is not None else ([], [])
        filters = " AND ".join([clause, *where])
        ids = list(dict.fromkeys(entity_ids))
        if not ids:
            return []
        # One statement for every entity (each its own LIMIT), in the order given.
        rows = self._db._q(
            "SELECT l.memory_id, e.id FROM unnest(%s::bigint[]) WITH ORDINALITY AS e(id, n) "
            "CROSS JOIN LATERAL (SELECT me.memory_id FROM memory_entities me "
            "JOIN memories m ON m.id = me.memory_id "
            f"WHERE me.entity_id = e.id AND {filters} "
            "ORDER BY me.memory_id DESC LIMIT %s) l ORDER BY e.n, l.memory_id DESC",
            [ids, *params, *extra, limit],
        )
        return [(r[0], r[1]) for r in rows]

    def lane(
        self,
        scopes: Sequence[str],
        names: Sequence[str],
        query: Query,
        now: datetime,
        limit: int,
        alone: int | None = None,
    ) -> tuple[list[Entity], list[tuple[str, int]]]:
        """``lookup`` (without aliases) and ``linked`` of the entities found, in one
        statement (SQLite's twin; two round trips before): each entity's page is an
        ``ARRAY`` of its newest ``limit`` memories that pass, as ``linked`` reads them,
        beside its row (``alone`` where one entity only is found, as SQLite's). Run
        beside the keyword lane (``reads_in_parallel``)."""
        if not names:
            return [], []
        unique = list(dict.fromkeys(names))[:200]
        clause, params = self._db._scope_clause(scopes)
        where, extra = self._db._filter_sql(query, now)
        filters = " AND ".join([clause, *where])
        lookup = (
            "SELECT entity_id FROM entity_aliases WHERE scope = ANY(%s) AND alias = ANY(%s::text[])"
        )
        page = "%s"
        sizes: list[Any] = [limit]
        if alone is not None and alone < limit:
            page = (
                f"(SELECT CASE WHEN COUNT(DISTINCT entity_id) > 1 THEN %s ELSE %s END "
                f"FROM ({lookup}) f)"
            )
            sizes = [limit, alone, list(scopes), text_array(unique)]
        rows = self._db._q(
            "SELECT e.id, e.scope, e.name, e.canonical, e.type, e.mention_count, "
            "e.first_seen, e.last_seen, '[]', e.protected, e.summary, "
            "ARRAY(SELECT me.memory_id FROM memory_entities me "
            "JOIN memories m ON m.id = me.memory_id "
            f"WHERE me.entity_id = e.id AND {filters} ORDER BY me.memory_id DESC LIMIT {page}) "
            f"FROM entities e WHERE e.id IN ({lookup}) ORDER BY e.id",
            [*params, *extra, *sizes, list(scopes), text_array(unique)],
        )
        found = entity_rows([r[:-1] for r in rows])
        links = [(m, entity.id) for entity, r in zip(found, rows, strict=True) for m in r[-1]]
        return found, links

    def link(self, scope: str, memory_id: str, mentions: Sequence[Mention], when: datetime) -> None:
        with self._db.atomic():
            link_mentions(self._db, scope, memory_id, mentions, to_text(when))

    def add_alias(self, scope: str, entity_id: int, alias: str) -> None:
        with self._db.atomic():
            self._db._x(
                "INSERT INTO entity_aliases (scope, alias, entity_id) VALUES (%s, %s, %s) "
                "ON CONFLICT DO NOTHING",
                [scope, alias, entity_id],
            )

    # The SQLite store's: portable SQL through ``_read``/``_write`` (migration 0014 gave
    # this schema the ``protected`` and ``summary`` columns).

    def total_memories(self, scopes: Sequence[str]) -> int:
        """The N of the entity lane's IDF: the chunks of ``scopes`` (about their
        memories), the keyword lane's cached count of the same scopes. Never the whole
        store's: another tenant's writes must not move this scope's scores (issue 25)."""
        db = self._db
        return db._scope_totals(tuple(sorted(set(scopes))))[0]
