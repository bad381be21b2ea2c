"""The PostgreSQL store's vault and the part of the maintenance SQL it has so far.

The vault reuses ``SQLiteVault``: its SQL is portable and runs through the backend's
``?``-accepting ``_read``/``_write``; only "has another connection changed the
secrets?" differs (SQLite asks ``PRAGMA data_version``; here a signature of the secret
rows, read at most every few milliseconds, tells every node about another node's new
secret before its next output).

Maintenance: the write path needs ``note_categories`` and ``categories``; every other
maintenance statement (the jobs: decay, expire, consolidate, cross-refs, enrich…)
raises ``NotOnPostgres`` naming it, until they are ported.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..sqlite.vault import _RECHECK_SECONDS, SQLiteVault
from . import NotOnPostgres

if TYPE_CHECKING:  # pragma: no cover
    from .backend import PostgresBackend


class PostgresVault(SQLiteVault):
    def __init__(self, backend: PostgresBackend) -> None:
        super().__init__(backend)  # type: ignore[arg-type]
        self._signature: tuple[Any, ...] | None = None

    def changed_elsewhere(self) -> bool:
        if getattr(self._db, "_pool", None) is None:
            return False
        now = time.monotonic()
        if self._signature is not None and now - self._checked_at < _RECHECK_SECONDS:
            return False
        self._checked_at = now
        row = self._db._q(  # type: ignore[attr-defined]
            "SELECT COUNT(*), MAX(updated_at), COALESCE(SUM(length(value)), 0) "
            "FROM vault WHERE is_secret = 1"
        )[0]
        signature = tuple(row)
        changed = self._signature is not None and signature != self._signature
        self._signature = signature
        return changed


class PgMaintenance:
    """The maintenance SQL of the PostgreSQL store (partial: see the module docstring)."""

    def __init__(self, backend: PostgresBackend) -> None:
        self._db = backend

    def note_categories(self, items: Sequence[tuple[str, float]]) -> None:
        if not items:
            return
        self._db._x(
            "INSERT INTO memory_categories (memory_id, confidence) "
            "SELECT * FROM unnest(%s::text[], %s::float8[]) "
            "ON CONFLICT (memory_id) DO UPDATE SET confidence = excluded.confidence",
            [[i[0] for i in items], [float(i[1]) for i in items]],
        )

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

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotOnPostgres(f"maintenance ({name})")


class NotYet:
    """A group of statements not ported yet (purges, the inspector's reads): every
    attribute raises ``NotOnPostgres`` naming the group and the method."""

    def __init__(self, group: str) -> None:
        self._group = group

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise NotOnPostgres(f"{self._group} ({name})")
