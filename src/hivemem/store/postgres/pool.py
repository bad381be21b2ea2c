"""The connection pool: psycopg-pool's, with its reconnection backoff capped.

When a pooled connection is lost (the server restarted or went down), psycopg-pool
makes a new one in the background and, while the server refuses, tries again after
1, 2, 4, 8, 16 … seconds (up to its ``reconnect_timeout``). After a 14 s outage a node
therefore answered errors for up to ~15 s more after the server was back (issue #25).
Here the first retry comes after ``RECONNECT_FIRST_S`` and the wait between attempts
never grows past ``RECONNECT_MAX_S``: a node serves again within about that long of
the server's return. A server that stays down costs each pool slot one refused
connection attempt per ``RECONNECT_MAX_S``.
"""

from __future__ import annotations

from typing import Any

from psycopg_pool import ConnectionPool

try:  # psycopg-pool >= 3.2.2
    from psycopg_pool.base import AttemptWithBackoff as _Attempt
except ImportError:  # pragma: no cover - older psycopg-pool names it so
    from psycopg_pool.base import ConnectionAttempt as _Attempt  # type: ignore[attr-defined,no-redef]

RECONNECT_FIRST_S = 0.1
RECONNECT_MAX_S = 0.5


class CappedAttempt(_Attempt):
    """psycopg-pool's reconnection attempt with the wait between tries capped."""

    INITIAL_DELAY = RECONNECT_FIRST_S

    def update_delay(self, now: float) -> None:
        super().update_delay(now)
        self.delay = min(self.delay, RECONNECT_MAX_S)


class Pool(ConnectionPool):
    """``ConnectionPool`` whose background reconnections use ``CappedAttempt``."""

    def _add_connection(self, attempt: Any, growing: bool = False) -> None:
        if attempt is None:
            attempt = CappedAttempt(timeout=self.reconnect_timeout)
        super()._add_connection(attempt, growing=growing)
