"""Entities of the SQLite store: ``entities``, ``entity_aliases``, ``memory_entities``.

``link_mentions`` runs inside the write transaction of a memory (and in the migration
that backfills older rows): each mention resolves to an entity of the memory's scope by
canonical name and type first, then by alias (so ``@alice`` joins the person
``Alice``), else becomes a new entity; the entity's mention count grows by one per
memory, and the memory is linked to it. A handful of indexed statements per mention:
tens of microseconds on the write path.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...clock import to_text
from ...types import Entity, ListFilter, Query
from ..entity_rows import Describes, aliases_of_new, entity_rows
from ..rows import placeholders
from . import termcounts

if TYPE_CHECKING:  # pragma: no cover
    from ...providers.entities import Mention
    from .database import SQLiteDatabase

_ARMS = 64  # per-entity pages per statement (SQLite allows 500 arms of a compound select)


def link_mentions(
    conn: Any,
    scope: str,
    memory_id: str,
    mentions: Sequence[Mention],
    when: str,
    *,
    protection: bool = True,
    fresh: bool = False,
) -> None:
    """Inside a write: resolve or create each mention's entity and link the memory.
    ``protection=False`` is for migrations older than the ``protected`` column;
    ``fresh``: the memory was inserted by this write (``link_many``)."""
    link_many(conn, [(scope, memory_id, mentions, when)], protection=protection, fresh=fresh)


def link_many(
    conn: Any,
    items: Sequence[tuple[str, str, Sequence[Mention], str]],
    *,
    protection: bool = True,
    fresh: bool = False,
) -> None:
    """``link_mentions`` for many memories of one write, ``(scope, memory_id, mentions,
    when)`` each: a name the batch already resolved is not looked up again, and each
    entity's count and last sighting are updated once, by the links the batch made (a
    batch of turns names the same people again and again).

    The names are looked up by canonical name in one statement per scope (``_KNOWN``),
    not one per mention. ``fresh``: the memories were inserted by this write, so none
    is linked yet (a memory's links go with it, ``ON DELETE CASCADE``): its links are
    its distinct entities, inserted by one ``executemany`` instead of a statement per
    mention whose row count said whether the link was new."""
    by_alias = (
        "SELECT a.entity_id FROM entity_aliases a CROSS JOIN entities e "
        "ON e.id = a.entity_id WHERE a.scope = ? AND a.alias = ? "
        "AND (e.protected = 0 OR e.type = ?) ORDER BY a.entity_id LIMIT 1"
        if protection
        else "SELECT entity_id FROM entity_aliases WHERE scope = ? AND alias = ? "
        "AND ? IS NOT NULL ORDER BY entity_id LIMIT 1"
    )
    # Within the write the answer for a name cannot change: an entity found stays, one
    # created later has a higher id than any alias's ``ORDER BY entity_id`` found, and
    # the only entities the write creates are those of names it found no entity for.
    resolved = _known(conn, items)
    seen: dict[int, list[Any]] = {}  # entity id -> [new links, latest sighting]
    links: list[tuple[str, int]] = []
    for scope, memory_id, mentions, when in items:
        linked: set[int] = set()
        for mention in mentions:
            kind = mention.type.value
            entity = resolved.get((scope, mention.canonical, kind))
            if entity is None:
                # By alias; a protected entity takes mentions of its own type only
                # (it is never merged with a namesake of another type).
                row = conn.execute(by_alias, (scope, mention.canonical, kind)).fetchone()
                if row is None:  # new: its id is the rowid (``RETURNING`` cost ~12 µs)
                    row = (
                        conn.execute(
                            "INSERT INTO entities (scope, canonical, type, name, first_seen, "
                            "last_seen) VALUES (?, ?, ?, ?, ?, ?)",
                            (scope, mention.canonical, kind, mention.name, when, when),
                        ).lastrowid,
                    )
                    for alias in aliases_of_new(mention):
                        conn.execute(
                            "INSERT OR IGNORE INTO entity_aliases (scope, alias, entity_id) "
                            "VALUES (?, ?, ?)",
                            (scope, alias, row[0]),
                        )
                entity = resolved[(scope, mention.canonical, kind)] = row[0]
            if fresh:
                if entity in linked:
                    continue
                linked.add(entity)
                links.append((memory_id, entity))
            elif not conn.execute(
                "INSERT OR IGNORE INTO memory_entities (memory_id, entity_id) VALUES (?, ?)",
                (memory_id, entity),
            ).rowcount:
                continue
            tally = seen.get(entity)
            if tally is None:
                seen[entity] = [1, when]
            else:
                tally[0] += 1
                tally[1] = max(tally[1], when)
    if links:
        conn.executemany("INSERT INTO memory_entities (memory_id, entity_id) VALUES (?, ?)", links)
    if seen:
        conn.executemany(
            "UPDATE entities SET mention_count = mention_count + ?, "
            "last_seen = MAX(last_seen, ?) WHERE id = ?",
            [(count, latest, entity) for entity, (count, latest) in seen.items()],
        )


_KNOWN = 400  # names per statement (SQLite allows 32,766 variables since 3.32)


def _known(
    conn: Any, items: Sequence[tuple[str, str, Sequence[Mention], str]]
) -> dict[tuple[str, str, str], int]:
    """The entities the write's names already have, ``(scope, canonical, type) -> id``:
    one statement per scope (and ``_KNOWN`` names) on ``UNIQUE (scope, canonical,
    type)``; a canonical name known under another type only is left out."""
    wanted: dict[str, dict[str, None]] = {}
    pairs: set[tuple[str, str, str]] = set()
    for scope, _, mentions, _ in items:
        names = wanted.setdefault(scope, {})
        for mention in mentions:
            names[mention.canonical] = None
            pairs.add((scope, mention.canonical, mention.type.value))
    found: dict[tuple[str, str, str], int] = {}
    for scope, names in wanted.items():
        ordered = list(names)
        for start in range(0, len(ordered), _KNOWN):
            part = ordered[start : start + _KNOWN]
            rows = conn.execute(
                "SELECT canonical, type, id FROM entities WHERE scope = ? "
                f"AND canonical IN ({placeholders(part)})",
                [scope, *part],
            ).fetchall()
            for canonical, kind, entity in rows:
                if (scope, canonical, kind) in pairs:
                    found[(scope, canonical, kind)] = entity
    return found


def retype(conn: Any, entity_id: int, kind: str) -> bool:
    """Inside a write: give an unprotected entity a new type (a more accurate extractor
    placed it); False when it is protected or its scope has that name with that type."""
    row = conn.execute(
        "SELECT scope, canonical, protected FROM entities WHERE id = ?", (entity_id,)
    )
    found = row.fetchone()
    if found is None or found[2]:
        return False
    taken = conn.execute(
        "SELECT 1 FROM entities WHERE scope = ? AND canonical = ? AND type = ?",
        (found[0], found[1], kind),
    ).fetchone()
    if taken:
        return False
    conn.execute("UPDATE entities SET type = ? WHERE id = ?", (kind, entity_id))
    return True


class SQLiteEntityIndex(Describes):
    """Reads of the entity tables, and aliases (the backend's connection and lock)."""

    def __init__(self, backend: SQLiteDatabase) -> None:
        self._db = backend

    def _entities(self, where: str, params: Sequence[Any], aliases: bool = True) -> list[Entity]:
        # entity_aliases is keyed (scope, alias, entity_id): gathering one entity's aliases
        # scans its scope's aliases (~1 ms at 8k), so search asks for none.
        gather = (
            "(SELECT json_group_array(a.alias) FROM entity_aliases a "
            "WHERE a.scope = e.scope AND a.entity_id = e.id)"
            if aliases
            else "'[]'"
        )
        rows = self._db._read(
            "SELECT e.id, e.scope, e.name, e.canonical, e.type, e.mention_count, "
            f"e.first_seen, e.last_seen, {gather}, e.protected, e.summary "
            "FROM entities e WHERE " + where,
            params,
        )
        return entity_rows(rows)

    def lookup(
        self, scopes: Sequence[str], names: Sequence[str], *, aliases: bool = True
    ) -> list[Entity]:
        """Entities of the scopes whose canonical name or an alias is among ``names``."""
        if not names:
            return []
        unique = list(dict.fromkeys(names))[:200]
        return self._entities(
            "e.id IN (SELECT entity_id FROM entity_aliases "
            f"WHERE scope IN ({placeholders(scopes)}) AND alias IN ({placeholders(unique)}))",
            [*scopes, *unique],
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
        """(memory id, entity id) links of the given entities among memories that pass
        the scope and filters: per entity its newest ``limit`` memories (ids are time
        ordered, so the junction's index gives them without a sort), entity by entity
        in the order given. One statement for all of them (a ``UNION ALL`` of per-entity
        pages, ``_ARMS`` at most): a query naming three people used to cost three."""
        clause, params = self._db._scope_clause(scopes)
        where, extra = self._db._filter_sql(query, now) if query is not None else ([], [])
        filters = " AND ".join([clause, *where])
        page = (
            "SELECT * FROM (SELECT ? AS arm, me.entity_id, me.memory_id FROM memory_entities me "
            "CROSS JOIN memories m ON m.id = me.memory_id "
            f"WHERE me.entity_id = ? AND {filters} "
            "ORDER BY me.memory_id DESC LIMIT ?)"
        )
        ids = list(dict.fromkeys(entity_ids))
        out: list[tuple[str, int]] = []
        for start in range(0, len(ids), _ARMS):
            batch = ids[start : start + _ARMS]
            arms: list[Any] = []
            for arm, entity_id in enumerate(batch):
                arms += [arm, entity_id, *params, *extra, limit]
            rows = self._db._read(
                " UNION ALL ".join([page] * len(batch)) + " ORDER BY 1, 3 DESC", arms
            )
            out.extend((r[2], r[1]) for r in rows)
        return out

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
        statement: each entity's page is a correlated subquery of its row (its newest
        ``limit`` memories that pass, as ``linked`` reads them), gathered as JSON.

        ``alone``: the page when the names find one entity only (``limit`` else). Its
        memories then all score alike and the lane keeps its newest, so a page of what
        the lane keeps gives the same answer: a speaker's name found alone read 120
        memories (each a lookup of its row for the filters) to keep 30. Asked in the
        statement (the lookup counted once), so the page is still one read."""
        if not names:
            return [], []
        unique = list(dict.fromkeys(names))[:200]
        clause, params = self._db._scope_clause(scopes)
        where, extra = self._db._filter_sql(query, now)
        filters = " AND ".join([clause, *where])
        lookup = (
            f"SELECT entity_id FROM entity_aliases WHERE scope IN ({placeholders(scopes)}) "
            f"AND alias IN ({placeholders(unique)})"
        )
        page = "?"
        sizes: list[Any] = [limit]
        if alone is not None and alone < limit:
            page = (
                f"(SELECT CASE WHEN COUNT(DISTINCT entity_id) > 1 THEN ? ELSE ? END "
                f"FROM ({lookup}))"
            )
            sizes = [limit, alone, *scopes, *unique]
        rows = self._db._read(
            "SELECT e.id, e.scope, e.name, e.canonical, e.type, e.mention_count, "
            "e.first_seen, e.last_seen, '[]', e.protected, e.summary, "
            "(SELECT json_group_array(p.memory_id) FROM (SELECT me.memory_id "
            "FROM memory_entities me CROSS JOIN memories m ON m.id = me.memory_id "
            f"WHERE me.entity_id = e.id AND {filters} ORDER BY me.memory_id DESC LIMIT {page}) p) "
            f"FROM entities e WHERE e.id IN ({lookup})",
            [*params, *extra, *sizes, *scopes, *unique],
        )
        found = entity_rows([r[:-1] for r in rows])
        links = [
            (memory_id, entity.id)
            for entity, r in zip(found, rows, strict=True)
            for memory_id in sorted(json.loads(r[-1]), reverse=True)  # newest first
        ]
        return found, links

    def add_alias(self, scope: str, entity_id: int, alias: str) -> None:
        with self._db.atomic():
            self._db._write(
                "INSERT OR IGNORE INTO entity_aliases (scope, alias, entity_id) VALUES (?, ?, ?)",
                [scope, alias, entity_id],
            )

    def link(self, scope: str, memory_id: str, mentions: Sequence[Mention], when: datetime) -> None:
        """Link ``memory_id`` to the entities ``mentions`` name (made if new), in one write."""
        with self._db.atomic():
            link_mentions(self._db._conn, scope, memory_id, mentions, to_text(when))

    def total_memories(self, scopes: Sequence[str]) -> int:
        """The N of the entity lane's IDF: the chunks of ``scopes`` (about their
        memories; kept per scope by ``scope_chunks``, one row read). Never the whole
        store's: another tenant's writes must not move this scope's scores (issue 25)."""
        return termcounts.chunk_totals(self._db._read_memo, scopes)[0]


def stamp(when: datetime) -> str:
    return to_text(when)
