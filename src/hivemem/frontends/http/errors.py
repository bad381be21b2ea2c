"""The one error shape of the HTTP API, and how library errors map onto it.

Every error response, whatever raised it (a library error, a bad token, an unknown route,
a body over the size limit, a bug), is ``{"error": {"code", "message", "field"?}}`` with
one of the statuses below. ``field`` names the argument at fault when there is one; a
conflict adds ``current``, the memory in the way. This module is pure (no web
framework), so the mapping can be tested and documented on its own.
"""

from __future__ import annotations

import math
from typing import Any

from ...errors import (
    Conflict,
    Forbidden,
    HiveMemError,
    InvalidInput,
    MissingDependency,
    NotFound,
    StoreError,
    StoreFull,
    TryAgain,
)

# status -> (code, when): the statuses the API can answer with, for the docs and OpenAPI.
STATUSES: dict[int, tuple[str, str]] = {
    400: ("bad_request", "The request cannot be read: the body is not a JSON object."),
    401: ("unauthorized", "No bearer token, or one that is unknown or revoked."),
    403: (
        "forbidden",
        "The token is not granted this scope, or only read on a write, or the handle has "
        "no lead right on the scope it would change (`Forbidden`).",
    ),
    404: ("not_found", "No such memory, entity, tool or route in this scope."),
    405: ("method_not_allowed", "The route exists but not with this method."),
    409: ("conflict", "The write breaks a rule, e.g. a key that has an active memory."),
    413: ("payload_too_large", "The body is over the `http_max_body_bytes` setting."),
    422: ("invalid_input", "An argument is missing or wrong; `field` names it."),
    500: ("internal", "A bug in HiveMem: the server logs it; no data was half-written."),
    501: ("missing_dependency", "The operation needs an optional extra that is not installed."),
    503: (
        "store_unavailable",
        "The store cannot be used now (damaged, unreachable), or the call met a passing "
        "failure its retries did not outlast (a deadlock, a lost connection, a file locked "
        "too long: `TryAgain`); then a `Retry-After` header and `retry_after` (seconds) say "
        "when to send it again: nothing of it was saved.",
    ),
    507: ("insufficient_storage", "The disk holding the store is full; nothing was written."),
}


def error_body(status: int, message: str, field: str | None = None, **extra: Any) -> dict:
    """The JSON body of an error response with this status."""
    code = STATUSES.get(status, ("error", ""))[0]
    error: dict[str, Any] = {"code": code, "message": message}
    if field is not None:
        error["field"] = field
    error.update({k: v for k, v in extra.items() if v is not None})
    return {"error": error}


def from_library(exc: HiveMemError) -> tuple[int, dict]:
    """Status and body for an error the library raised on purpose."""
    if isinstance(exc, InvalidInput):
        return 422, error_body(422, exc.message, exc.field)
    if isinstance(exc, Forbidden):
        return 403, error_body(403, exc.message)
    if isinstance(exc, NotFound):
        return 404, error_body(404, exc.message)
    if isinstance(exc, Conflict):
        current = exc.current.to_dict() if hasattr(exc.current, "to_dict") else None
        return 409, error_body(409, exc.message, current=current)
    if isinstance(exc, MissingDependency):
        return 501, error_body(501, exc.message, install=exc.install)
    if isinstance(exc, StoreFull):
        return 507, error_body(507, exc.message)
    if isinstance(exc, TryAgain):
        return 503, error_body(503, exc.message, retry_after=retry_after(exc))
    if isinstance(exc, StoreError):
        return 503, error_body(503, exc.message)
    return 400, error_body(400, exc.message)


def retry_after(exc: HiveMemError) -> int | None:
    """Whole seconds for a ``Retry-After`` header: for ``TryAgain`` only."""
    if not isinstance(exc, TryAgain):
        return None
    return max(1, math.ceil(exc.retry_after))


def error_headers(exc: HiveMemError) -> dict[str, str] | None:
    """The headers an error response carries besides its body."""
    seconds = retry_after(exc)
    return None if seconds is None else {"Retry-After": str(seconds)}


# The schema of the error body, referenced by every operation of the OpenAPI document.
ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "enum": sorted({c for c, _ in STATUSES.values()})},
                "message": {"type": "string"},
                "field": {"type": "string"},
                "current": {"type": "object", "description": "409: the memory in the way"},
                "install": {"type": "string", "description": "501: the install command"},
                "retry_after": {
                    "type": "integer",
                    "description": "503 after a passing failure: seconds before trying again",
                },
            },
        }
    },
}
