"""SQL of the maintenance jobs (``hivemem.lifecycle.maintenance``) for the SQLite store:
what SQLite says its own way (``INSERT OR REPLACE``, ``json_set``, FTS5's ``MATCH``);
the statements both backends share are ``store/maintenance_rows.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...clock import from_text, to_text
from ...types import Kind, Memory
from ..fts5 import to_fts5
from ..keyword_query import KeywordQuery
from ..maintenance_rows import DecayRow, MaintenanceStatements
from ..rows import SELECT, placeholders, row_to_memory
from .crossrefs import SQLiteCrossRefs
from .entities import link_mentions, retype

if TYPE_CHECKING:  # pragma: no cover
    from ...providers.entities import Mention


class SQLiteMaintenance(SQLiteCrossRefs, MaintenanceStatements):
    """Reads and writes of the maintenance jobs (the backend's connection and lock)."""

    _SET_STATE = "json_set(attributes, '$.consolidation', json(?))"

    def _memories(self, where: str, params: Sequence[Any], tail: str = "") -> list[Memory]:
        return self._db._memories(where, params, tail)

    def mark(self, job: str, memory_ids: Sequence[str], when: datetime) -> None:
        """Inside a write: ``job`` has seen these memories."""
        self._db._conn.executemany(
            "INSERT OR REPLACE INTO memory_jobs (job, memory_id, done_at) VALUES (?, ?, ?)",
            [(job, mid, to_text(when)) for mid in memory_ids],
        )

    def matching(
        self, scope: str, query: KeywordQuery, kinds: Sequence[Kind | str], limit: int
    ) -> list[Memory]:
        """Active memories of these kinds whose chunks match ``query``, best BM25 first,
        in one statement (the filters run before ranking: dedup asks for facts among
        many more matching episodes)."""
        match = to_fts5(query)
        if not match:
            return []
        rows = self._db._read(
            f"SELECT {SELECT} FROM chunks_fts "
            "CROSS JOIN chunks c ON c.id = chunks_fts.rowid "
            "CROSS JOIN memories m ON m.id = c.memory_id "
            "WHERE chunks_fts MATCH ? AND m.scope = ? AND m.status = 'active' "
            f"AND m.kind IN ({placeholders(kinds)}) ORDER BY bm25(chunks_fts), c.id LIMIT ?",
            [match, scope, *(str(k) for k in kinds), 2 * limit],
        )
        found = {r[0]: r for r in rows}  # a memory once, at its best chunk (dicts keep order)
        return [row_to_memory(r) for r in list(found.values())[:limit]]

    def link_entities(
        self, scope: str, memory_id: str, mentions: Sequence[Mention], when: datetime
    ) -> None:
        """Inside a write: link a memory of ``scope`` to these mentions' entities."""
        if self._db._read("SELECT 1 FROM memories WHERE scope = ? AND id = ?", [scope, memory_id]):
            link_mentions(self._db._conn, scope, memory_id, mentions, to_text(when))

    def retype_guessed(self, scope: str, key: str, kind: str) -> int:
        """Inside a write: entities of ``scope`` named ``key`` whose type was the regex's
        guess (``person``/``other``) take ``kind`` (unless protected); returns how many."""
        rows = self._db._read(
            "SELECT id FROM entities WHERE scope = ? AND canonical = ? "
            "AND type IN ('person', 'other') AND type != ? AND protected = 0",
            [scope, key, kind],
        )
        return sum(retype(self._db._conn, r[0], kind) for r in rows)

    def categories(self, scopes: Sequence[str], memory_ids: Sequence[str]) -> dict[str, float]:
        """How sure the categorizer was of each memory's category (known ones only)."""
        if not memory_ids:
            return {}
        clause, params = self._db._scope_clause(scopes)
        ids = list(memory_ids)
        return dict(
            self._db._read(
                "SELECT c.memory_id, c.confidence FROM memory_categories c "
                f"JOIN memories m ON m.id = c.memory_id WHERE {clause} "
                f"AND c.memory_id IN ({placeholders(ids)})",
                [*params, *ids],
            )
        )

    def note_categories(self, items: Sequence[tuple[str, float]]) -> None:
        """Inside the write that just inserted these memories: their categorizer's
        confidence (the write path: one statement, no lookups). An upsert, not ``INSERT
        OR REPLACE``: with foreign keys on, REPLACE cost five times the insert (22 µs
        against 4.5 a row), most of a write's time beyond its row."""
        self._db._conn.executemany(
            "INSERT INTO memory_categories (memory_id, confidence) VALUES (?, ?) "
            "ON CONFLICT (memory_id) DO UPDATE SET confidence = excluded.confidence",
            list(items),
        )

    def decaying(
        self, scope: str, kinds: Sequence[Kind | str], after: str, limit: int
    ) -> list[DecayRow]:
        """Active, unprotected memories (decay_rate > 0, no protected entity linked) with
        their decay state, by id."""
        rows = self._db._read(
            f"SELECT {SELECT}, d.base, d.anchor, d.applied FROM memories m "
            "LEFT JOIN decay_state d ON d.memory_id = m.id "
            f"WHERE m.scope = ? AND m.status = 'active' AND m.decay_rate > 0 AND m.id > ? "
            f"AND m.kind IN ({placeholders(kinds)}) AND NOT EXISTS (SELECT 1 FROM "
            "memory_entities me CROSS JOIN entities e ON e.id = me.entity_id "
            "WHERE me.memory_id = m.id AND e.protected = 1) ORDER BY m.id LIMIT ?",
            [scope, after, *(str(k) for k in kinds), limit],
        )
        return [DecayRow(row_to_memory(r[:-3]), r[-3], from_text(r[-2]), r[-1]) for r in rows]
