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
        # The last counter read, per connection asked: the writer's, or the pool's.
        self._seen: dict[str, int] = {}
        self._checked_at = 0.0

    def changed_elsewhere(self) -> bool:
        """Whether another connection (another process, another store) has committed to
        the file since the last call. Cheap: one pragma, no table read. A closed store
        reports no change. Asked again within ``RECHECK_SECONDS`` it answers no without
        asking SQLite (a tool result scrubs many strings in a row).

        The writer connection's counter is asked when no other thread holds it: it
        ignores this store's own commits, so a write no longer makes the next output
        read every secret again (the pool's counter moves for them too; it is asked
        while the writer is busy, a read never waiting for a write). Each counter is
        compared with its own last reading, and one never read before counts as a
        change: no other connection's commit is missed whichever one answers."""
        if self._db.closed:
            return False
        now = time.monotonic()
        if self._seen and now - self._checked_at < RECHECK_SECONDS:
            return False
        self._checked_at = now
        version = self._db.writer_version()
        which = "writer"
        if version is None:
            version, which = self._db.data_version(), "pool"
        first = not self._seen
        before = self._seen.get(which)
        self._seen[which] = version
        return not first and before != version

    def close(self) -> None:
        """Nothing to let go: ``PRAGMA data_version`` runs on the store's connections."""
