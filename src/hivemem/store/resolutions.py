"""Entity resolution on both backends: the ``resolve`` job's reads, its verdicts (table
``entity_resolutions``: SQLite migration 0016, PostgreSQL 0015) and the merge of two
entities into one. The SQL is written once, with ``?`` placeholders, in the dialect both
stores speak (``ON CONFLICT``, ``CASE``), through the backend's ``_read``/``_write``.

A merge moves every memory link and alias of the absorbed entity to the kept one, adds
the absorbed canonical name as an alias (so later mentions under that name, on the write
path, reach the kept entity by the alias lookup of ``link_mentions``), recounts the kept
entity's mentions and deletes the absorbed entity, in one transaction.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, NamedTuple

from ..clock import to_text


class EntityRow(NamedTuple):
    id: int
    canonical: str
    type: str
    name: str
    mentions: int
    protected: bool


class Resolutions:
    def __init__(self, backend: Any) -> None:
        self._db = backend

    def entities(self, scope: str, types: tuple[str, ...]) -> list[EntityRow]:
        marks = ", ".join("?" for _ in types)
        rows = self._db._read(
            "SELECT id, canonical, type, name, mention_count, protected FROM entities "
            f"WHERE scope = ? AND type IN ({marks}) ORDER BY id",
            [scope, *types],
        )
        return [EntityRow(r[0], r[1], r[2], r[3], r[4], bool(r[5])) for r in rows]

    def judged(self, scope: str) -> set[tuple[int, int]]:
        rows = self._db._read(
            "SELECT entity_id, other_id FROM entity_resolutions WHERE scope = ?", [scope]
        )
        return {(r[0], r[1]) for r in rows}

    def example(self, entity_id: int, chars: int = 160) -> str:
        """One active memory that mentions the entity (its newest), cut to ``chars``."""
        rows = self._db._read(
            "SELECT m.content FROM memory_entities me JOIN memories m "
            "ON m.id = me.memory_id WHERE me.entity_id = ? AND m.status = 'active' "
            "ORDER BY me.memory_id DESC LIMIT 1",
            [entity_id],
        )
        return " ".join(rows[0][0].split())[:chars] if rows else ""

    def record(
        self,
        scope: str,
        pair: tuple[int, int],
        same: bool,
        similarity: float,
        by: str | None,
        now: datetime,
    ) -> None:
        """Inside a write: the verdict on ``pair``."""
        self._db._write(
            "INSERT INTO entity_resolutions (scope, entity_id, other_id, same, similarity, "
            "judged_by, judged_at) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (entity_id, other_id) DO UPDATE SET scope = excluded.scope, "
            "same = excluded.same, similarity = excluded.similarity, "
            "judged_by = excluded.judged_by, judged_at = excluded.judged_at",
            [scope, pair[0], pair[1], int(same), similarity, by, to_text(now)],
        )

    def merge(self, scope: str, keep: int, gone: int) -> bool:
        """Inside a write: ``gone`` becomes part of ``keep`` (module docstring). False
        when either is no longer an entity of ``scope``."""
        db = self._db
        found = db._read(
            "SELECT id, canonical FROM entities WHERE scope = ? AND id IN (?, ?)",
            [scope, keep, gone],
        )
        names = {r[0]: r[1] for r in found}
        if len(names) != 2:
            return False
        db._write(
            "INSERT INTO memory_entities (memory_id, entity_id) "
            "SELECT memory_id, ? FROM memory_entities WHERE entity_id = ? "
            "ON CONFLICT DO NOTHING",
            [keep, gone],
        )
        db._write(
            "INSERT INTO entity_aliases (scope, alias, entity_id) "
            "SELECT scope, alias, ? FROM entity_aliases WHERE entity_id = ? "
            "ON CONFLICT DO NOTHING",
            [keep, gone],
        )
        db._write(
            "INSERT INTO entity_aliases (scope, alias, entity_id) VALUES (?, ?, ?) "
            "ON CONFLICT DO NOTHING",
            [scope, names[gone], keep],
        )
        # Times are fixed-width ISO text on both backends: text order is time order
        # (CASE, not SQLite's scalar MIN/MAX, which PostgreSQL spells LEAST/GREATEST).
        db._write(
            "UPDATE entities SET "
            "mention_count = (SELECT COUNT(*) FROM memory_entities WHERE entity_id = ?), "
            "first_seen = CASE WHEN g.first_seen < entities.first_seen THEN g.first_seen "
            "ELSE entities.first_seen END, "
            "last_seen = CASE WHEN g.last_seen > entities.last_seen THEN g.last_seen "
            "ELSE entities.last_seen END "
            "FROM (SELECT first_seen, last_seen FROM entities WHERE id = ?) AS g "
            "WHERE entities.id = ?",
            [keep, gone, keep],
        )
        db._write("DELETE FROM entities WHERE id = ?", [gone])  # links, aliases cascade
        return True
