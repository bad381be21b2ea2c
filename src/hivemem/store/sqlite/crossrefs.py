"""Related memories of the ``crossrefs`` maintenance job (``cross_refs``, migration
``0007_maintenance``), scoped like every statement of the backend."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...types import Memory
from ..rows import placeholders

if TYPE_CHECKING:  # pragma: no cover
    from .database import SQLiteStore


class SQLiteCrossRefs:
    """Reads and writes of ``cross_refs`` (the backend's connection and lock)."""

    _db: SQLiteStore

    def set_related(self, scope: str, memory_id: str, related: Sequence[tuple[str, float]]) -> None:
        """Inside a write: replace the related memories of one memory of ``scope``."""
        if not self._db._read(
            "SELECT 1 FROM memories WHERE scope = ? AND id = ?", [scope, memory_id]
        ):
            return
        self._db._write("DELETE FROM cross_refs WHERE memory_id = ?", [memory_id])
        self._db._conn.executemany(
            "INSERT OR REPLACE INTO cross_refs (memory_id, related_id, score) VALUES (?, ?, ?)",
            [(memory_id, other, score) for other, score in related],
        )

    def related(
        self, scopes: Sequence[str], memory_id: str, limit: int
    ) -> list[tuple[Memory, float]]:
        """Active memories related to ``memory_id`` either way, best first."""
        clause, params = self._db._scope_clause(scopes)
        rows = self._db._read(
            "SELECT other, MAX(score) FROM ("
            "SELECT related_id AS other, score FROM cross_refs WHERE memory_id = ? "
            "UNION ALL SELECT memory_id AS other, score FROM cross_refs WHERE related_id = ?) "
            "GROUP BY other",
            [memory_id, memory_id],
        )
        scores = dict(rows)
        if not scores:
            return []
        ids = list(scores)
        found = self._db._memories(
            f"{clause} AND m.status = 'active' AND m.id IN ({placeholders(ids)})",
            [*params, *ids],
        )
        found.sort(key=lambda m: (-scores[m.id], m.id))
        return [(m, scores[m.id]) for m in found[:limit]]
