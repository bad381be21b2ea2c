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
        change: no other connection's commit is missed whichever one answers.

        The output of a search is checked against the counter its read view began under
        (``viewed_version``, the pool's counter, read before the snapshot anyway), when
        the view ended within ``RECHECK_SECONDS``: where it equals the pool's counter
        the vault last saw, nothing was committed by any connection in between, and no
        statement is run (it was the ninth of a search). So a secret committed before a
        search begins is redacted in its output; one committed while it runs may show
        in it, as output within ``RECHECK_SECONDS`` of a commit may (the search, begun
        first, is ordered before the change). Any other output asks SQLite as above."""
        if self._db.closed:
            return False
        now = time.monotonic()
        viewed = self._db.viewed_version(now - RECHECK_SECONDS)  # taken once, whatever follows
        if self._seen and now - self._checked_at < RECHECK_SECONDS:
            return False
        self._checked_at = now
        if viewed is not None and self._seen.get("pool") == viewed:
            return False  # the one counter, unmoved: no commit since the vault last looked
        version = self._db.writer_version()
        which = "writer"
        if version is None:
            version, which = self._db.data_version(), "pool"
        first = not self._seen
        before = self._seen.get(which)
        self._seen[which] = version
        if viewed is not None and which == "writer":
            # Read before the writer's counter: a base no newer than what was checked.
            self._seen["pool"] = viewed
        return not first and before != version

    def close(self) -> None:
        """Nothing to let go: ``PRAGMA data_version`` runs on the store's connections."""
