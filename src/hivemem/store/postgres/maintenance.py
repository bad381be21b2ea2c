"""The maintenance jobs' SQL on the PostgreSQL store (``hivemem.lifecycle.maintenance``).

Most statements are portable SQL shared with SQLite (``store/maintenance_rows.py``,
with the run log of ``store/runlog.py``) and run unchanged through the backend's
``?``-accepting ``_read``/``_write``: this class adds the backend's own hooks, where
SQLite says things its own way: ``executemany`` and ``INSERT OR REPLACE`` (here one
``unnest`` statement with ``ON CONFLICT``), ``json_set`` (``jsonb_set``), ``CROSS JOIN …
ON`` (a plain join), FTS5's ``MATCH`` (a tsquery), and the scope clause, which is
written with PostgreSQL's placeholders. The order of insertion is ``seq`` on both
backends (migration ``0014``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ...clock import from_text, to_text
from ...types import Kind, Memory, Query, Status
from ..keyword_query import KeywordQuery
from ..maintenance_rows import DecayRow, MaintenanceStatements
from ..rows import SELECT, row_to_memory
from . import qmark
from .entities import link_mentions

if TYPE_CHECKING:  # pragma: no cover
    from ...providers.entities import Mention
    from .database import PostgresDatabase


class PgMaintenance(MaintenanceStatements):
    """Reads and writes of the maintenance jobs on PostgreSQL (see the module docstring)."""

    _db: PostgresDatabase

    def __init__(self, backend: PostgresDatabase) -> None:
        super().__init__(backend)

    def _memories(self, where: str, params: Sequence[Any], tail: str = "") -> list[Memory]:
        """The inherited statements' memory reads (written with ``?``)."""
        return self._db._memories(qmark(where), params, qmark(tail))

    # ``attributes.consolidation`` set to a JSON parameter (SQLite: ``json_set``)
    _SET_STATE = "jsonb_set(attributes::jsonb, '{consolidation}', ?::jsonb)::text"

    def mark(self, job: str, memory_ids: Sequence[str], when: datetime) -> None:
        if not memory_ids:
            return
        self._db._x(
            "INSERT INTO memory_jobs (job, memory_id, done_at) "
            "SELECT %s, t.id, %s FROM unnest(%s::text[]) AS t(id) "
            "ON CONFLICT (job, memory_id) DO UPDATE SET done_at = excluded.done_at",
            [job, to_text(when), list(dict.fromkeys(memory_ids))],
        )

    def matching(
        self, scope: str, query: KeywordQuery, kinds: Sequence[Kind | str], limit: int
    ) -> list[Memory]:
        """Active memories of these kinds whose chunks match ``query``, best BM25 first:
        the keyword lane's statement with the same filters as SQLite's one statement
        (scope, active, kinds; expiry not checked)."""
        filters = Query(
            text="",
            limit=limit,
            kinds=tuple(Kind(str(k)) for k in kinds),
            statuses=(Status.ACTIVE,),
            include_expired=True,
        )
        found = self._db.keyword_search([scope], filters, query, 2 * limit, datetime.now(UTC))
        ids = list(dict.fromkeys(m.memory_id for m in found))[:limit]
        by_id = {m.id: m for m in self._db.get_many([scope], ids)}
        return [by_id[i] for i in ids if i in by_id]

    def link_entities(
        self, scope: str, memory_id: str, mentions: Sequence[Mention], when: datetime
    ) -> None:
        if self._db._read("SELECT 1 FROM memories WHERE scope = ? AND id = ?", [scope, memory_id]):
            link_mentions(self._db, scope, memory_id, mentions, to_text(when))

    def retype_guessed(self, scope: str, key: str, kind: str) -> int:
        rows = self._db._read(
            "SELECT id FROM entities e WHERE scope = ? AND canonical = ? "
            "AND type IN ('person', 'other') AND type != ? AND protected = 0 "
            "AND NOT EXISTS (SELECT 1 FROM entities o WHERE o.scope = e.scope "
            "AND o.canonical = e.canonical AND o.type = ?) ORDER BY id",
            [scope, key, kind, kind],
        )
        done = 0
        for (entity_id,) in rows[:1]:  # a second one would take the same (scope, name, type)
            self._db._write("UPDATE entities SET type = ? WHERE id = ?", [kind, entity_id])
            done += 1
        return done

    def categories(self, scopes: Sequence[str], memory_ids: Sequence[str]) -> dict[str, float]:
        if not memory_ids:
            return {}
        return dict(
            self._db._q(
                "SELECT c.memory_id, c.confidence FROM memory_categories c "
                "JOIN memories m ON m.id = c.memory_id "
                "WHERE m.scope = ANY(%s) AND c.memory_id = ANY(%s)",
                [list(scopes), list(memory_ids)],
            )
        )

    def note_categories(self, items: Sequence[tuple[str, float]]) -> None:
        if not items:
            return
        self._db._defer(
            "INSERT INTO memory_categories (memory_id, confidence) "
            "SELECT * FROM unnest(%s::text[], %s::float8[]) "
            "ON CONFLICT (memory_id) DO UPDATE SET confidence = excluded.confidence",
            [[i[0] for i in items], [float(i[1]) for i in items]],
        )

    def decaying(
        self, scope: str, kinds: Sequence[Kind | str], after: str, limit: int
    ) -> list[DecayRow]:
        rows = self._db._q(
            f"SELECT {SELECT}, d.base, d.anchor, d.applied FROM memories m "
            "LEFT JOIN decay_state d ON d.memory_id = m.id "
            "WHERE m.scope = %s AND m.status = 'active' AND m.decay_rate > 0 AND m.id > %s "
            "AND m.kind = ANY(%s) AND NOT EXISTS (SELECT 1 FROM "
            "memory_entities me JOIN entities e ON e.id = me.entity_id "
            "WHERE me.memory_id = m.id AND e.protected = 1) ORDER BY m.id LIMIT %s",
            [scope, after, [str(k) for k in kinds], limit],
        )
        return [DecayRow(row_to_memory(r[:-3]), r[-3], from_text(r[-2]), r[-1]) for r in rows]

    # ------------------------------------------------------------------ cross-refs

    def set_related(self, scope: str, memory_id: str, related: Sequence[tuple[str, float]]) -> None:
        if not self._db._read(
            "SELECT 1 FROM memories WHERE scope = ? AND id = ?", [scope, memory_id]
        ):
            return
        self._db._write("DELETE FROM cross_refs WHERE memory_id = ?", [memory_id])
        if related:
            best: dict[str, float] = {}
            for other, score in related:  # INSERT OR REPLACE: the last one given wins
                best[other] = float(score)
            self._db._x(
                "INSERT INTO cross_refs (memory_id, related_id, score) "
                "SELECT %s, t.other, t.score FROM unnest(%s::text[], %s::float8[]) "
                "AS t(other, score)",
                [memory_id, list(best), list(best.values())],
            )

    def related(
        self, scopes: Sequence[str], memory_id: str, limit: int
    ) -> list[tuple[Memory, float]]:
        rows = self._db._q(
            "SELECT other, MAX(score) FROM ("
            "SELECT related_id AS other, score FROM cross_refs WHERE memory_id = %s "
            "UNION ALL SELECT memory_id AS other, score FROM cross_refs WHERE related_id = %s) r "
            "GROUP BY other",
            [memory_id, memory_id],
        )
        scores = dict(rows)
        if not scores:
            return []
        found = self._db._memories(
            "m.scope = ANY(%s) AND m.status = 'active' AND m.id = ANY(%s)",
            [list(scopes), list(scores)],
        )
        found.sort(key=lambda m: (-scores[m.id], m.id))
        return [(m, scores[m.id]) for m in found[:limit]]
