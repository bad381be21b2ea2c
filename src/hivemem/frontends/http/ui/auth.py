"""Who is looking: the inspector's sign-in, its cookie sessions and CSRF tokens.

- A request with ``Authorization: Bearer <token>`` is that API token (scripts, tests).
  No cookie is involved, so no CSRF token is needed: a browser cannot be made to send
  that header to another site.
- A browser signs in with a token through the form at ``/ui/login``; the store keeps
  the session (``store.ui_sessions``: a hash of its id, the token's id, its times) and
  the server sets an HttpOnly, SameSite=Strict cookie holding only the session id. Every
  worker and node over the database knows it, a restart keeps it, and the token is
  read again on every request (a join), so revoking it ends the session at once.
- ``hivemem ui`` prints a one-time link ``/ui/start?key=…``: a per-start key, exchanged
  once for a session of the local user (read and write on every scope: whoever runs
  ``hivemem ui`` can open the file anyway), bound to that key: only that run of
  ``hivemem ui`` accepts it.

Every POST from a cookie session must carry the session's CSRF token (``csrf`` form
field), an HMAC keyed by the session id (``store.ui_sessions.csrf_token``: the same on
every worker, stored nowhere); the login form carries a token bound to a short-lived
pre-login cookie.
"""

from __future__ import annotations

import hmac
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ....store.protocols import Tokens, UiSessions
from ....store.ui_sessions import csrf_token

COOKIE = "hivemem_ui"
LOGIN_COOKIE = "hivemem_ui_login"
log = logging.getLogger("hivemem.frontends.http")


class Principal(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def scopes(self) -> Mapping[str, str]: ...

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


@dataclass(frozen=True, slots=True)
class Session:
    """A signed-in browser: its CSRF token (derived from the session id, never stored)."""

    csrf: str


class Sessions:
    """The inspector's sign-ins, kept in the store (``store.ui_sessions``): every worker
    and every node over the same database knows them, and a restart keeps them.

    Reads run wherever they are called. Writes run on the HTTP API's writer thread: the
    routes call ``start``, ``redeem`` and ``end`` there, and ``principal`` queues the
    once-a-minute record of a use there through ``submit``."""

    def __init__(
        self,
        store: Any,
        start_key: str | None = None,
        submit: Callable[..., Any] | None = None,
    ) -> None:
        self.tokens: Tokens = store.tokens
        self.rows: UiSessions = store.ui_sessions
        self.clock = store.clock
        self._start_key = start_key  # burnt once redeemed
        self._local_key = start_key  # what this run's local sessions are bound to
        self._submit = submit
        self._lock = threading.Lock()

    # -------------------------------------------------------------- who

    def verify_token(self, secret: str) -> TokenPrincipal | None:
        info = self.tokens.verify(secret.strip())
        return TokenPrincipal(info.name, dict(info.scopes), info.id) if info else None

    def principal(self, session_id: str | None) -> tuple[Principal, Session] | None:
        """The principal of a live session, or None (unknown, expired, signed out, its
        token revoked, or a local session of another run)."""
        if not session_id:
            return None
        now = self.clock()
        found = self.rows.get(session_id, now, start_key=self._local_key)
        if found is None:
            return None
        if self._submit is not None and self.rows.due(found, now):
            self._submit(self._touch, found, now)  # off the request, on the writer's queue
        session = Session(csrf_token(session_id))
        if found.local:
            return LocalPrincipal(), session
        return TokenPrincipal(found.token_name or "", dict(found.scopes), found.token_id), session

    def _touch(self, found: Any, now: Any) -> None:
        try:
            self.rows.touch(found, now)
        except Exception:  # a busy store must not fail the request that was served
            log.warning("could not record the use of an inspector session", exc_info=True)

    # -------------------------------------------------------------- sessions

    def start(self, principal: TokenPrincipal) -> str:
        """A new session for a verified token; its id (the cookie's value)."""
        return self.rows.create(self.clock(), token_id=principal.id)

    def end(self, session_id: str | None) -> None:
        """Sign out: the session's row is deleted."""
        self.rows.end(session_id or "")

    def redeem(self, key: str) -> str | None:
        """Exchange the one-time start key for a local session (once); its id."""
        with self._lock:
            expected, self._start_key = self._start_key, None
            valid = bool(expected) and hmac.compare_digest(expected or "", key or "")
            if not valid:
                self._start_key = expected  # a wrong guess does not burn the key
        if not valid:
            return None
        return self.rows.create(self.clock(), start_key=self._local_key)

    @property
    def start_pending(self) -> bool:
        return self._start_key is not None


def same(expected: str | None, given: str | None) -> bool:
    """Constant-time comparison of two CSRF tokens (both must be present)."""
    return bool(expected) and bool(given) and hmac.compare_digest(expected or "", given or "")
