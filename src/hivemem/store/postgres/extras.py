"""The PostgreSQL store's vault.

The vault reuses ``SQLiteVault``: its SQL is portable and runs through the backend's
``?``-accepting ``_read``/``_write``; only "has another connection changed the
secrets?" differs (SQLite asks ``PRAGMA data_version``; here a signature of the secret
rows, read at most every few milliseconds, tells every node about another node's new
secret before its next output).

The maintenance statements live in ``maintenance.py``, the ``resolve`` job's in the
shared ``hivemem.store.resolutions``.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..sqlite.vault import _RECHECK_SECONDS, SQLiteVault

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
