"""The web inspector's sign-in sessions (``ui_sessions``: SQLite migration
``0017_ui_sessions``, PostgreSQL ``0021_ui_sessions``). Get it as ``store.ui_sessions``.

Why in the store: every ``serve-http`` worker, and every node in front of one PostgreSQL,
must know a browser signed in through another, and a restart must not sign everyone out.

What a row holds, and what it does not:

- ``id_hash``: the sha256 of the session id. The id itself (256 random bits, the
  cookie's value) is never stored, so a copy of the database gives no working session.
- ``token_id``: the API token the browser signed in with (``api_tokens``, ``ON DELETE
  CASCADE``). Its grants and its revocation are read through a join on every request:
  a revoked token's sessions are refused at once, a token's changed scopes apply at
  once. ``NULL`` for the local user of ``hivemem ui``, whose row carries instead
  ``local_key``: the sha256 of that run's one-time start key. Only the app started with
  that key accepts it, so a local session (every scope) never signs anyone in on
  another server over the same database, and it ends with that run of ``hivemem ui``.
- ``created_at``, ``seen_at``, ``expires_at``: ``expires_at`` is ``seen_at`` plus the
  idle limit, never past ``created_at`` plus the lifetime. Expiry is enforced on read
  (an expired row is refused even before it is deleted); ``seen_at`` is moved at most
  once a minute (``TOUCH_EVERY_S``: no write per page view).
- The CSRF token is not stored: it is derived from the session id (an HMAC keyed by
  it), so whoever holds the cookie's id can compute it and nobody else can, on any node.

Expired rows, and rows of tokens revoked since, are deleted at each sign-in (one
statement on an index); a principal keeps at most ``PER_PRINCIPAL`` sessions (the
longest idle go first). Portable SQL over the backend's ``_read`` and ``_write``: the
same class on both backends, as ``store/tokens.py``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from ..clock import from_text, to_text
from ..errors import StoreError
from .tokens import hash_token

if TYPE_CHECKING:  # pragma: no cover
    from .sqlite.database import SQLiteDatabase

IDLE_S = 12 * 3600  # a session unused this long is over
LIFETIME_S = 7 * 24 * 3600  # and any session this long after its sign-in
TOUCH_EVERY_S = 60  # seen_at is written at most this often per session
PER_PRINCIPAL = 100  # sessions one token (or one run of `hivemem ui`) keeps at most
_CSRF_LABEL = b"hivemem-ui-csrf"
log = logging.getLogger("hivemem.store.ui_sessions")


def csrf_token(session_id: str) -> str:
    """The session's CSRF token: HMAC-SHA256 of a fixed label keyed by the session id
    (the same on every worker and node; nothing of it is stored)."""
    return hmac.new(session_id.encode(), _CSRF_LABEL, hashlib.sha256).hexdigest()


def key_hash(start_key: str) -> str:
    """The stored form of a ``hivemem ui`` start key (a local session is bound to it)."""
    return hashlib.sha256(b"hivemem-ui-start:" + start_key.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class UiSession:
    """A live session as read: whose it is (a token's id, name and grants; or the local
    user), and its times. Never its id."""

    id_hash: str
    token_id: str | None  # None: the local user of `hivemem ui`
    token_name: str | None
    scopes: Mapping[str, str]
    created_at: datetime
    seen_at: datetime
    expires_at: datetime

    @property
    def local(self) -> bool:
        return self.token_id is None


def _expiry(created: datetime, now: datetime) -> datetime:
    return min(created + timedelta(seconds=LIFETIME_S), now + timedelta(seconds=IDLE_S))


_SELECT = (
    "SELECT s.id_hash, s.token_id, t.name, t.scopes, s.created_at, s.seen_at, s.expires_at "
    "FROM ui_sessions s LEFT JOIN api_tokens t ON t.id = s.token_id AND t.revoked_at IS NULL "
    "WHERE s.id_hash = ? AND s.expires_at > ? "
)


class UiSessionTable:
    """Reads and writes of ``ui_sessions`` (module docstring). Writes run in their own
    transaction; the HTTP layer calls them on its writer thread."""

    def __init__(self, backend: SQLiteDatabase) -> None:
        self._db = backend

    def create(
        self, now: datetime, *, token_id: str | None = None, start_key: str | None = None
    ) -> str:
        """A new session for the token ``token_id`` (verified by the caller), or for the
        local user of the run whose start key is ``start_key``; returns its id (the
        cookie's value, shown once). Expired and revoked sessions are swept after."""
        if (token_id is None) == (start_key is None):
            raise ValueError("a session is a token's or the local user's: give exactly one")
        session_id = secrets.token_urlsafe(32)
        stamp = to_text(now)
        local = key_hash(start_key) if start_key is not None else None
        with self._db.atomic():
            self._db._write(
                "INSERT INTO ui_sessions (id_hash, token_id, local_key, created_at, seen_at, "
                "expires_at) VALUES (?, ?, ?, ?, ?, ?)",
                [hash_token(session_id), token_id, local, stamp, stamp, to_text(_expiry(now, now))],
            )
        # Tidying is its own transaction, after the sign-in is committed: two nodes
        # sweeping at once may collide (PostgreSQL aborts one), which costs nothing here.
        column, value = ("token_id", token_id) if token_id is not None else ("local_key", local)
        try:
            with self._db.atomic():
                self._sweep(now)
                # The longest idle beyond PER_PRINCIPAL go (ties kept: never the new one).
                self._db._write(
                    f"DELETE FROM ui_sessions WHERE {column} = ? AND seen_at < (SELECT seen_at "
                    f"FROM ui_sessions WHERE {column} = ? ORDER BY seen_at DESC "
                    "LIMIT 1 OFFSET ?)",
                    [value, value, PER_PRINCIPAL - 1],
                )
        except StoreError:
            log.warning("could not sweep the inspector's expired sessions", exc_info=True)
        return session_id

    def get(
        self, session_id: str, now: datetime, *, start_key: str | None = None
    ) -> UiSession | None:
        """The live session whose id this is, or None: unknown, expired, signed out, its
        token revoked or gone, or a local session of another run (``start_key``: this
        app's own start key, if it has one)."""
        if not isinstance(session_id, str) or not session_id:
            return None
        rows = self._db._read(
            _SELECT + "AND (s.token_id IS NULL OR t.id IS NOT NULL) "
            "AND (s.local_key IS NULL OR s.local_key = ?)",
            [hash_token(session_id), to_text(now), key_hash(start_key) if start_key else ""],
        )
        if not rows:
            return None
        r = rows[0]
        return UiSession(
            id_hash=r[0],
            token_id=r[1],
            token_name=r[2],
            scopes=json.loads(r[3]) if r[3] else {},
            created_at=from_text(r[4]),
            seen_at=from_text(r[5]),
            expires_at=from_text(r[6]),
        )

    def due(self, session: UiSession, now: datetime) -> bool:
        """Whether ``session``'s last use is old enough to record this one."""
        return (now - session.seen_at).total_seconds() >= TOUCH_EVERY_S

    def touch(self, session: UiSession, now: datetime) -> None:
        """Record a use: ``seen_at`` now, the expiry pushed out (to the lifetime at most).
        A session ended or expired meanwhile stays so."""
        with self._db.atomic():
            self._db._write(
                "UPDATE ui_sessions SET seen_at = ?, expires_at = ? "
                "WHERE id_hash = ? AND expires_at > ?",
                [
                    to_text(now),
                    to_text(_expiry(session.created_at, now)),
                    session.id_hash,
                    to_text(now),
                ],
            )

    def end(self, session_id: str) -> bool:
        """Sign out: the row is deleted. True when there was one."""
        if not isinstance(session_id, str) or not session_id:
            return False
        with self._db.atomic():
            cursor = self._db._write(
                "DELETE FROM ui_sessions WHERE id_hash = ?", [hash_token(session_id)]
            )
        return bool(getattr(cursor, "rowcount", 0))

    def sweep(self, now: datetime) -> int:
        """Delete expired sessions and those of revoked tokens; how many went."""
        with self._db.atomic():
            return self._sweep(now)

    def count(self) -> int:
        """Sessions held (live or not yet swept)."""
        return int(self._db._read("SELECT COUNT(*) FROM ui_sessions")[0][0])

    def _sweep(self, now: datetime) -> int:
        cursor = self._db._write(
            "DELETE FROM ui_sessions WHERE expires_at <= ? OR token_id IN "
            "(SELECT id FROM api_tokens WHERE revoked_at IS NOT NULL)",
            [to_text(now)],
        )
        return max(int(getattr(cursor, "rowcount", 0) or 0), 0)
