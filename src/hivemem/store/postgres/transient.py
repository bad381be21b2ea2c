"""Which PostgreSQL failures are passing, and the ``TryAgain`` each becomes.

A transaction the server aborted (deadlock victim, serialization failure), a lock not
granted within ``lock_timeout``, or a connection lost before the commit leaves nothing
of the transaction behind: the same unit of work may simply run again
(``hivemem.write.retry``). Everything else stays a plain ``StoreError``.

The one case that is *not* retryable although the connection was lost: the loss met at
``COMMIT`` itself with no word from the server. The commit may have happened (the
server wrote it, then the link broke before the answer came), so running the unit
again could do it twice; the caller gets a ``StoreError`` saying the outcome is unknown.
When the server said why it ended the session (an administrator's or a crash shutdown,
SQLSTATE 57P01/57P02), it ended it before the commit took effect: ``TryAgain``.
"""

from __future__ import annotations

from psycopg import OperationalError
from psycopg import errors as pgerrors
from psycopg_pool import PoolTimeout

from ...errors import StoreError, TryAgain

# The server ended the session (shutdown, crash of another backend, starting up) or
# refused a new one for now (too many connections).
_SERVER_GONE = {"57P01", "57P02", "57P03", "53300"}


def reason_of(exc: BaseException) -> str | None:
    """``deadlock``, ``serialization``, ``lock_timeout``, ``connection`` or ``busy``
    when ``exc`` is a passing failure, else None. ``busy``: no pooled connection came
    within the pool's timeout (``busy_timeout_ms``: every one in use, or the server down
    that long); like SQLite's busy file, the wait is done and is not re-run by
    ``hivemem.write.retry``."""
    if isinstance(exc, PoolTimeout):
        return "busy"
    if isinstance(exc, pgerrors.DeadlockDetected):
        return "deadlock"
    if isinstance(exc, pgerrors.SerializationFailure):
        return "serialization"
    if isinstance(exc, pgerrors.LockNotAvailable):
        return "lock_timeout"
    if not isinstance(exc, OperationalError):
        return None
    state = getattr(exc, "sqlstate", None)
    if state is None or state.startswith("08") or state in _SERVER_GONE:
        return "connection"  # libpq's own (no SQLSTATE), a pool timeout, class 08
    return None


def _said(exc: BaseException, scrub: list[str]) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    for secret in scrub:
        text = text.replace(secret, "***")
    return text


def translate(
    exc: BaseException, location: str, scrub: list[str], *, at_commit: bool = False
) -> StoreError:
    """The error for a psycopg failure of a transaction (``at_commit``: met while
    committing) or of a statement outside one."""
    reason = reason_of(exc)
    text = _said(exc, scrub)
    if reason in ("deadlock", "serialization", "lock_timeout"):
        return TryAgain(
            f"the write was aborted by PostgreSQL ({type(exc).__name__}); nothing of it "
            "was saved: try again",
            reason=reason,
        )
    if reason == "busy":
        return TryAgain(
            f"no connection to PostgreSQL at {location} came in time ({text}): the "
            "server is down or every pooled connection is busy; try again",
            reason=reason,
        )
    if reason == "connection":
        state = getattr(exc, "sqlstate", None)
        if at_commit and state not in _SERVER_GONE:
            return StoreError(
                f"the connection to PostgreSQL at {location} was lost while committing "
                f"({text}): the write may or may not have been saved; look before "
                "running it again"
            )
        return TryAgain(f"PostgreSQL at {location} failed: {text}; try again", reason=reason)
    return StoreError(f"PostgreSQL at {location} failed: {text}")
