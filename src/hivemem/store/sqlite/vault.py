"""SQLite's vault: the shared statements (``hivemem.store.vault``) and SQLite's answer
to "has another connection changed the secrets?" (``PRAGMA data_version``)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ..vault import RECHECK_SECONDS, VaultStatements

if TYPE_CHECKING:  # pragma: no cover
    from .database import SQLiteDatabase


class SQLiteVault(VaultStatements):
    def __init__(self, backend: SQLiteDatabase) -> None:
        super().__init__(backend)
        self._data_version: int | None = None

    def changed_elsewhere(self) -> bool:
        """Whether another connection (another process, another store) has committed to
        the file since the last call. Cheap: one pragma, no table read. A closed store
        reports no change. Asked again within ``RECHECK_SECONDS`` it answers no without
        asking SQLite (a tool result scrubs many strings in a row)."""
        if self._db.closed:
            return False
        now = time.monotonic()
        if self._data_version is not None and now - self._checked_at < RECHECK_SECONDS:
            return False
        self._checked_at = now
        version = self._db.data_version()
        changed = self._data_version is not None and version != self._data_version
        self._data_version = version
        return changed

    def close(self) -> None:
        """Nothing to let go: ``PRAGMA data_version`` runs on the store's connections."""
