"""Who is looking: the inspector's sign-in, its cookie sessions and CSRF tokens.

- A request with ``Authorization: Bearer <token>`` is that API token (scripts, tests).
  No cookie is involved, so no CSRF token is needed: a browser cannot be made to send
  that header to another site.
- A browser signs in with a token through the form at ``/ui/login``; the server keeps
  the session (id → token secret, CSRF token) in memory and sets an HttpOnly,
  SameSite=Strict cookie holding only the session id. The token is checked again on
  every request, so revoking it ends the session at once.
- ``hivemem ui`` prints a one-time link ``/ui/start?key=…``: a per-start key, exchanged
  once for a session of the local user (read and write on every scope: whoever runs
  ``hivemem ui`` can open the file anyway).

Every POST from a cookie session must carry the session's CSRF token (``csrf`` form
field); the login form carries a token bound to a short-lived pre-login cookie.
"""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from ....store.protocols import Tokens

COOKIE = "hivemem_ui"
LOGIN_COOKIE = "hivemem_ui_login"
SESSION_IDLE_S = 12 * 3600
MAX_SESSIONS = 1000


class Principal(Protocol):
    name: str

    def can(self, scope: str, level: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class TokenPrincipal:
    """An API token (``hivemem token create``): the scopes and levels it is granted."""

    name: str
    scopes: Mapping[str, str]
    id: str = ""

    def can(self, scope: str, level: str) -> bool:
        granted = self.scopes.get(scope)
        return granted is not None and (granted == "write" or level == "read")


@dataclass(frozen=True, slots=True)
class LocalPrincipal:
    """The user who started ``hivemem ui`` on this machine: every scope, read and write."""

    name: str = "local"
    scopes: Mapping[str, str] = field(default_factory=dict)

    def can(self, scope: str, level: str) -> bool:
        return True


@dataclass
class Session:
    secret: str | None  # the API token's secret; None for the local user
    csrf: str
    seen: float


class Sessions:
    """The inspector's sign-ins (in memory: a restart signs everyone out)."""

    def __init__(self, tokens: Tokens, start_key: str | None = None) -> None:
        self.tokens = tokens
        self._sessions: dict[str, Session] = {}
        self._start_key = start_key
        self._lock = threading.Lock()

    # -------------------------------------------------------------- who

    def verify_token(self, secret: str) -> TokenPrincipal | None:
        info = self.tokens.verify(secret.strip())
        return TokenPrincipal(info.name, dict(info.scopes), info.id) if info else None

    def principal(self, session_id: str | None) -> tuple[Principal, Session] | None:
        """The principal of a live session, or None (unknown, idle too long, revoked)."""
        if not session_id:
            return None
        with self._lock:
            session = self._sessions.get(session_id)
            now = time.monotonic()
            if session is None or now - session.seen > SESSION_IDLE_S:
                self._sessions.pop(session_id, None)
                return None
            session.seen = now
        if session.secret is None:
            return LocalPrincipal(), session
        found = self.verify_token(session.secret)
        if found is None:  # revoked since sign-in
            self.end(session_id)
            return None
        return found, session

    # -------------------------------------------------------------- sessions

    def start(self, secret: str | None) -> str:
        """A new session for a verified token secret (None: the local user); its id."""
        session_id = secrets.token_urlsafe(32)
        with self._lock:
            if len(self._sessions) >= MAX_SESSIONS:  # drop the idlest
                oldest = min(self._sessions, key=lambda k: self._sessions[k].seen)
                del self._sessions[oldest]
            self._sessions[session_id] = Session(
                secret, secrets.token_urlsafe(32), time.monotonic()
            )
        return session_id

    def end(self, session_id: str | None) -> None:
        with self._lock:
            self._sessions.pop(session_id or "", None)

    def redeem(self, key: str) -> str | None:
        """Exchange the one-time start key for a local session (once); its id."""
        with self._lock:
            expected, self._start_key = self._start_key, None
            valid = bool(expected) and hmac.compare_digest(expected or "", key or "")
            if not valid:
                self._start_key = expected  # a wrong guess does not burn the key
        return self.start(None) if valid else None

    @property
    def start_pending(self) -> bool:
        return self._start_key is not None


def same(expected: str | None, given: str | None) -> bool:
    """Constant-time comparison of two CSRF tokens (both must be present)."""
    return bool(expected) and bool(given) and hmac.compare_digest(expected or "", given or "")
