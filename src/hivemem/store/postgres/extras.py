"""The PostgreSQL store's vault.

The vault's statements are shared (``hivemem.store.vault``): its SQL is portable and
runs through the backend's ``?``-accepting ``_read``/``_write``. Only "has another
connection changed the secrets?" differs: SQLite asks ``PRAGMA data_version``; here
every node learns of another node's new secret before its next output from a
trigger's notification, read on a connection that LISTENs, or where none can be had
from a signature of the secret rows read at most every few milliseconds.

The maintenance statements live in ``maintenance.py``, the ``resolve`` job's in the
shared ``hivemem.store.resolutions``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING, Any

from ..vault import RECHECK_SECONDS, VaultStatements

if TYPE_CHECKING:  # pragma: no cover
    from .database import PostgresDatabase


class PostgresVault(VaultStatements):
    """``changed_elsewhere`` from notifications: migration ``0017_vault_notify`` makes
    every commit that touches the vault notify ``hivemem_vault``, and this store LISTENs
    on a connection of its own. Asking costs no round trip (libpq reads what the server
    has already sent; its socket never blocks). Where that connection cannot be had, or
    is lost, the answer is "changed" once (a notification may have been missed) and
    the store falls back to reading a signature of the secret rows, at most every few
    milliseconds, until a listener is back."""

    def __init__(self, backend: PostgresDatabase) -> None:
        super().__init__(backend)
        self._signature: tuple[Any, ...] | None = None
        self._listener: Any = None
        self._listening = False  # a listener has been up: losing it means "changed"
        self._lock = threading.Lock()

    def changed_elsewhere(self) -> bool:
        if getattr(self._db, "_pool", None) is None:
            self.close()
            return False
        with self._lock:
            heard = self._heard()
        if heard is not None:
            return heard
        return self._signature_changed()

    def _heard(self) -> bool | None:
        """Whether a notification arrived since the last call; ``None`` without a
        listener (then the signature decides)."""
        if self._listener is None:
            if not self._listen():
                return None
            # Up now: anything committed before it is either in the values the
            # scrubber loads next (first call) or was missed while none was up.
            was_listening, self._listening = self._listening, True
            return was_listening or self._signature is not None
        try:
            pgconn = self._listener.pgconn
            pgconn.consume_input()
            heard = False
            while pgconn.notifies() is not None:
                heard = True
            return heard
        except Exception:  # psycopg.OperationalError and libpq's own: the link is gone
            self._drop()
            return True

    def _listen(self) -> bool:
        import psycopg

        try:
            conn = psycopg.connect(self._db._url, autocommit=True, connect_timeout=5)
        except psycopg.Error:
            return False
        try:
            conn.execute("LISTEN hivemem_vault")
        except psycopg.Error:
            conn.close()
            return False
        self._listener = conn
        return True

    def _drop(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(Exception):
                listener.close()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _signature_changed(self) -> bool:
        now = time.monotonic()
        if self._signature is not None and now - self._checked_at < RECHECK_SECONDS:
            return False
        self._checked_at = now
        row = self._db._q(
            "SELECT COUNT(*), MAX(updated_at), COALESCE(SUM(length(value)), 0) "
            "FROM vault WHERE is_secret = 1"
        )[0]
        signature = tuple(row)
        changed = self._signature is not None and signature != self._signature
        self._signature = signature
        return changed
