"""SQL of the maintenance jobs (``hivemem.lifecycle.maintenance``), the statements both
backends share.

The jobs decide; this module reads and writes, scoped like every other statement of the
backend (DESIGN §1: one data-access layer, every statement filtered by scope). Writes
must run inside the backend's ``atomic()``; the jobs open one transaction per batch so a
crash leaves whole batches and readers are never blocked long. Tables are created by the
migration ``0007_maintenance``. The SQL here is portable and runs through the backend's
``?``-accepting ``_read``/``_write``; each backend adds what it says its own way
(``sqlite/maintenance.py``, ``postgres/maintenance.py``): the hooks below.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..clock import from_text, to_text
from ..types import Kind, Memory, MemoryType, Status
from .keyword_query import KeywordQuery
from .rows import SELECT, placeholders, row_to_memory
from .runlog import RunLogStatements

if TYPE_CHECKING:  # pragma: no cover
    from ..providers.entities import Mention


@dataclass(frozen=True, slots=True)
class PendingSession:
    """A session not yet consolidated, with the job's progress in it."""

    session_id: str
    started_at: datetime
    last_event_at: datetime
    state: Mapping[str, Any]  # sessions.attributes["consolidation"]


@dataclass(frozen=True, slots=True)
class DecayRow:
    memory: Memory
    base: float | None  # None: the decay job has not seen this memory yet
    anchor: datetime | None
    applied: float | None


class MaintenanceStatements(RunLogStatements):
    """Reads and writes of the maintenance jobs (the backend's connection and lock)."""

    # ``attributes.consolidation`` set to a JSON parameter: the backend's expression
    _SET_STATE: str

    # ------------------------------------------------------------------ the backend's hooks

    def _memories(self, where: str, params: Sequence[Any], tail: str = "") -> list[Memory]:
        """Memories of a statement written with ``?`` placeholders."""
        raise NotImplementedError

    def mark(self, job: str, memory_ids: Sequence[str], when: datetime) -> None:
        """Record that ``job`` has seen ``memory_ids`` (insert or replace)."""
        raise NotImplementedError

    def matching(
        self, scope: str, query: KeywordQuery, kinds: Sequence[Kind | str], limit: int
    ) -> list[Memory]:
        """Active memories of these kinds whose chunks match ``query``, best first."""
        raise NotImplementedError

    def link_entities(
        self, scope: str, memory_id: str, mentions: Sequence[Mention], when: datetime
    ) -> None:
        raise NotImplementedError

    def retype_guessed(self, scope: str, key: str, kind: str) -> int:
        raise NotImplementedError

    def categories(self, scopes: Sequence[str], memory_ids: Sequence[str]) -> dict[str, float]:
        raise NotImplementedError

    def note_categories(self, items: Sequence[tuple[str, float]]) -> None:
        raise NotImplementedError

    def decaying(
        self, scope: str, kinds: Sequence[Kind | str], after: str, limit: int
    ) -> list[DecayRow]:
        raise NotImplementedError

    def set_related(self, scope: str, memory_id: str, related: Sequence[tuple[str, float]]) -> None:
        raise NotImplementedError

    def related(
        self, scopes: Sequence[str], memory_id: str, limit: int
    ) -> list[tuple[Memory, float]]:
        raise NotImplementedError

    # ------------------------------------------------------------------ shared statements

    def pending_sessions(self, scope: str, ended_before: datetime) -> list[PendingSession]:
        """Sessions of ``scope`` not consolidated that have ended: a later session of the
        scope has started, or nothing happened in them since ``ended_before``."""
        rows = self._db._read(
            "SELECT s.session_id, s.started_at, s.last_event_at, s.attributes FROM sessions s "
            "WHERE s.scope = ? AND s.consolidated_at IS NULL AND (s.last_event_at < ? "
            "OR EXISTS (SELECT 1 FROM sessions n WHERE n.scope = s.scope "
            "AND n.started_at > s.started_at)) ORDER BY s.started_at, s.session_id",
            [scope, to_text(ended_before)],
        )
        return [self._pending(r) for r in rows]

    def session(self, scope: str, session_id: str) -> PendingSession | None:
        """One session, whether it has ended or not (``None`` if unknown or consolidated)."""
        rows = self._db._read(
            "SELECT session_id, started_at, last_event_at, attributes FROM sessions "
            "WHERE scope = ? AND session_id = ? AND consolidated_at IS NULL",
            [scope, session_id],
        )
        return self._pending(rows[0]) if rows else None

    def open_sessions(self, scope: str, before: Sequence[str]) -> list[PendingSession]:
        """Sessions of ``scope`` not yet consolidated that were first seen before all of
        the sessions ``before`` (by the order of first sight), oldest first."""
        rows = self._db._read(
            "SELECT session_id, started_at, last_event_at, attributes FROM sessions "
            "WHERE scope = ? AND consolidated_at IS NULL AND seq < (SELECT MIN(seq) "
            f"FROM sessions WHERE scope = ? AND session_id IN ({placeholders(before)})) "
            "ORDER BY started_at, session_id",
            [scope, scope, *before],
        )
        return [self._pending(r) for r in rows]

    def busy_keys(self, scope: str, versions: int, limit: int = 10) -> list[tuple[str, int]]:
        """Keys of ``scope`` with at least ``versions`` rows (each supersede adds one),
        most versions first: the vault anti-pattern the reflection flags."""
        rows = self._db._read(
            "SELECT key, COUNT(*) AS n FROM memories WHERE scope = ? AND key IS NOT NULL "
            "GROUP BY key HAVING COUNT(*) >= ? ORDER BY n DESC, key LIMIT ?",
            [scope, max(2, versions), limit],
        )
        return [(r[0], int(r[1])) for r in rows]

    def session_facts(self, scope: str, session_id: str, limit: int) -> list[Memory]:
        """Active facts consolidation drew from a session, in the order written."""
        return self._memories(
            "m.scope = ? AND m.session_id = ? AND m.kind = 'fact' AND m.status = 'active' "
            "AND m.source = 'consolidation'",
            [scope, session_id, limit],
            "ORDER BY m.seq LIMIT ?",
        )

    @staticmethod
    def _pending(row: Sequence[Any]) -> PendingSession:
        state = json.loads(row[3]).get("consolidation", {})
        return PendingSession(row[0], from_text(row[1]), from_text(row[2]), state)

    def session_state(self, scope: str, session_id: str) -> dict[str, Any]:
        rows = self._db._read(
            "SELECT attributes FROM sessions WHERE scope = ? AND session_id = ?",
            [scope, session_id],
        )
        return dict(json.loads(rows[0][0]).get("consolidation", {})) if rows else {}

    def set_session_state(
        self,
        scope: str,
        session_id: str,
        state: Mapping[str, Any],
        consolidated_at: datetime | None = None,
    ) -> None:
        """Inside a write: the job's progress in a session, and its end when given."""
        self._db._write(
            f"UPDATE sessions SET attributes = {self._SET_STATE}, "
            "consolidated_at = COALESCE(?, consolidated_at) WHERE scope = ? AND session_id = ?",
            [
                json.dumps(dict(state), sort_keys=True),
                to_text(consolidated_at) if consolidated_at else None,
                scope,
                session_id,
            ],
        )

    def episodes(
        self, scope: str, session_id: str, after: int, limit: int
    ) -> list[tuple[int, Memory]]:
        """Episodes of a session in the order they were written (``seq``), after ``after``."""
        rows = self._db._read(
            f"SELECT m.seq, {SELECT} FROM memories m WHERE m.scope = ? AND m.session_id = ? "
            "AND m.kind = 'episode' AND m.seq > ? ORDER BY m.seq LIMIT ?",
            [scope, session_id, after, limit],
        )
        return [(r[0], row_to_memory(r[1:])) for r in rows]

    def active(
        self,
        scope: str,
        kinds: Sequence[Kind | str],
        *,
        after: str = "",
        limit: int = 500,
        created_before: datetime | None = None,
        types: Sequence[MemoryType | str] = (),
        protected: bool = True,
    ) -> list[Memory]:
        """Active memories of ``scope`` of these kinds, by id (keyset pagination from
        ``after``); optionally only older ones, only some types, only decaying ones."""
        where = [
            "m.scope = ? AND m.status = 'active' AND m.id > ?",
            f"m.kind IN ({placeholders(kinds)})",
        ]
        params: list[Any] = [scope, after, *(str(k) for k in kinds)]
        if created_before is not None:
            where.append("m.created_at < ?")
            params.append(to_text(created_before))
        if types:
            where.append(f"m.type IN ({placeholders(types)})")
            params += [str(t) for t in types]
        if not protected:
            where.append("m.decay_rate > 0")
        return self._memories(" AND ".join(where), [*params, limit], "ORDER BY m.id LIMIT ?")

    def since(self, scope: str, kind: Kind, since: datetime, limit: int) -> list[Memory]:
        """Active memories of one kind created at or after ``since``, newest first."""
        return self._memories(
            "m.scope = ? AND m.kind = ? AND m.status = 'active' AND m.created_at >= ?",
            [scope, kind.value, to_text(since), limit],
            "ORDER BY m.created_at DESC, m.id DESC LIMIT ?",
        )

    def unmarked(
        self, scope: str, job: str, kinds: Sequence[Kind | str], limit: int
    ) -> list[Memory]:
        """Active memories of these kinds that per-memory job ``job`` has not seen."""
        return self._memories(
            f"m.scope = ? AND m.status = 'active' AND m.kind IN ({placeholders(kinds)}) "
            "AND NOT EXISTS (SELECT 1 FROM memory_jobs j WHERE j.job = ? AND j.memory_id = m.id)",
            [scope, *(str(k) for k in kinds), job, limit],
            "ORDER BY m.id LIMIT ?",
        )

    def expired(self, scope: str, before: datetime, limit: int) -> list[Memory]:
        """Active memories whose ``expires_at`` is before ``before``."""
        return self._memories(
            "m.scope = ? AND m.status = 'active' AND m.expires_at IS NOT NULL AND m.expires_at < ?",
            [scope, to_text(before), limit],
            "ORDER BY m.expires_at, m.id LIMIT ?",
        )

    def count_expired(self, scope: str, now: datetime) -> int:
        return int(
            self._db._read(
                "SELECT COUNT(*) FROM memories WHERE scope = ? AND status = 'active' "
                "AND expires_at IS NOT NULL AND expires_at <= ?",
                [scope, to_text(now)],
            )[0][0]
        )

    def entity_counts(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """How many entities each memory is linked to."""
        if not memory_ids:
            return {}
        ids = list(memory_ids)
        rows = self._db._read(
            "SELECT memory_id, COUNT(*) FROM memory_entities "
            f"WHERE memory_id IN ({placeholders(ids)}) GROUP BY memory_id",
            ids,
        )
        counts = dict.fromkeys(ids, 0)
        counts.update(dict(rows))
        return counts

    def entity_names(self, memory_ids: Sequence[str]) -> dict[str, set[str]]:
        """The canonical names of the entities each memory is linked to."""
        if not memory_ids:
            return {}
        ids = list(memory_ids)
        rows = self._db._read(
            "SELECT me.memory_id, e.canonical FROM memory_entities me "
            "JOIN entities e ON e.id = me.entity_id "
            f"WHERE me.memory_id IN ({placeholders(ids)})",
            ids,
        )
        out: dict[str, set[str]] = {mid: set() for mid in ids}
        for memory_id, name in rows:
            out[memory_id].add(name)
        return out

    def retire(
        self,
        scope: str,
        memory_ids: Sequence[str],
        status: Status,
        now: datetime,
        updated_by: str,
        *,
        drop_entities: bool = True,
    ) -> None:
        """Inside a write: set ``status`` (deleted or archived) on active memories, drop
        their vectors and pending embeddings, and (``drop_entities``) their entity links,
        lowering each entity's mention count. Chunks stay (the row is readable by id)."""
        ids = (
            [
                r[0]
                for r in self._db._read(
                    f"SELECT id FROM memories WHERE scope = ? AND status = 'active' "
                    f"AND id IN ({placeholders(memory_ids)})",
                    [scope, *memory_ids],
                )
            ]
            if memory_ids
            else []
        )
        if not ids:
            return
        marks = placeholders(ids)
        for memory_id in ids:
            self._db.set_status(scope, memory_id, status, now, now, updated_by)
        chunk_ids = [
            r[0] for r in self._db._read(f"SELECT id FROM chunks WHERE memory_id IN ({marks})", ids)
        ]
        if chunk_ids:
            self._db.vectors.delete_chunks(chunk_ids)
            self._db._write(
                f"DELETE FROM vector_queue WHERE chunk_id IN ({placeholders(chunk_ids)})",
                chunk_ids,
            )
        if drop_entities:
            self._db._write(
                "UPDATE entities SET mention_count = CASE WHEN mention_count > 0 "
                "THEN mention_count - 1 ELSE 0 END WHERE id IN "
                f"(SELECT entity_id FROM memory_entities WHERE memory_id IN ({marks}))",
                ids,
            )
            self._db._write(f"DELETE FROM memory_entities WHERE memory_id IN ({marks})", ids)
        self._db._write(f"DELETE FROM cross_refs WHERE memory_id IN ({marks})", ids)

    def set_category(
        self, scope: str, memory_id: str, category: str | None, confidence: float
    ) -> None:
        """Inside a write: the category of a memory (unchanged when ``None``) and how
        sure its categorizer was."""
        found = self._db._read(
            "SELECT 1 FROM memories WHERE scope = ? AND id = ?", [scope, memory_id]
        )
        if not found:
            return
        if category is not None:
            self._db._write(
                "UPDATE memories SET category = ? WHERE scope = ? AND id = ?",
                [category, scope, memory_id],
            )
        self._db._write(
            "INSERT INTO memory_categories (memory_id, confidence) VALUES (?, ?) "
            "ON CONFLICT (memory_id) DO UPDATE SET confidence = excluded.confidence",
            [memory_id, confidence],
        )

    def uncategorized(self, scope: str, limit: int) -> list[Memory]:
        """Memories of ``scope`` (any status) with no categorizer confidence yet."""
        return self._memories(
            "m.scope = ? AND NOT EXISTS (SELECT 1 FROM memory_categories c "
            "WHERE c.memory_id = m.id)",
            [scope, limit],
            "ORDER BY m.id LIMIT ?",
        )

    def set_confidence(self, scope: str, memory_id: str, value: float) -> None:
        """Inside a write: a confidence a job derived (decay, a contradiction found by
        consolidation). Not an edit: no version is made, and ``updated_by`` and
        ``updated_at`` stay those of whoever wrote the text, so ``history``, the
        inspector's timeline and exports keep its author (issue #25: a decay run signed
        every fact ``maintenance:decay``)."""
        self._db._write(
            "UPDATE memories SET confidence = ? WHERE scope = ? AND id = ?",
            [value, scope, memory_id],
        )

    def set_decay(
        self, scope: str, memory_id: str, base: float, anchor: datetime, value: float, now: datetime
    ) -> None:
        """Inside a write: the decayed confidence and the state it was computed from
        (``set_confidence``: the text's author and time stay)."""
        self.set_confidence(scope, memory_id, value)
        self._db._write(
            "INSERT INTO decay_state (memory_id, base, anchor, applied) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (memory_id) DO UPDATE SET base = excluded.base, "
            "anchor = excluded.anchor, applied = excluded.applied",
            [memory_id, base, to_text(anchor), value],
        )
