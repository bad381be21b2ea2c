"""API tokens of the HTTP API (``api_tokens``, migration ``0009_api_tokens``).

A token is a high-entropy secret shown once, at creation; the table keeps only its
sha256, so a copy of the database gives no working token. Each token is bound to a set of
scopes, each with a level: ``read`` (search, get, list, stats …) or ``write`` (also
save, delete, correct …; write implies read). A revoked token stays listed, with the time
it was revoked, and never authenticates again.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from uuid6 import uuid7

from ..arguments import name as clean_name
from ..arguments import ref
from ..clock import from_text, to_text
from ..errors import InvalidInput, NotFound

if TYPE_CHECKING:  # pragma: no cover
    from .sqlite.database import SQLiteDatabase

TOKEN_PREFIX = "hm_"
LEVELS = ("read", "write")
_MAX_NAME = 200
_COLUMNS = "id, name, scopes, created_at, revoked_at, last_used_at"


def hash_token(secret: str) -> str:
    """The stored form of a token: sha256 hex of its UTF-8 bytes. A token carries 256
    random bits, so a fast hash is enough (no dictionary to guess from)."""
    return hashlib.sha256(secret.encode("utf-8", "surrogatepass")).hexdigest()


def new_secret() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class TokenInfo:
    """A token as listed: never its secret nor its hash."""

    id: str
    name: str
    scopes: Mapping[str, str]  # scope -> "read" | "write"
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None

    @property
    def active(self) -> bool:
        return self.revoked_at is None

    def can(self, scope: str, level: str) -> bool:
        """Whether this token may ``level`` ("read" or "write") the scope ``scope``."""
        granted = self.scopes.get(scope)
        return self.active and granted is not None and (granted == "write" or level == "read")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "scopes": dict(self.scopes),
            "created_at": self.created_at.isoformat(),
            "revoked_at": self.revoked_at.isoformat() if self.revoked_at else None,
            "last_used_at": self.last_used_at.isoformat() if self.last_used_at else None,
        }


def clean_scopes(scopes: Mapping[str, str], max_scope_chars: int) -> dict[str, str]:
    """``{scope: level}`` checked: at least one scope, each a valid scope name, each level
    ``read`` or ``write``."""
    if not isinstance(scopes, Mapping) or not scopes:
        raise InvalidInput("scopes", "a token needs at least one scope (scope -> read|write)")
    out: dict[str, str] = {}
    for scope, level in scopes.items():
        name = clean_name(scope, "scopes", max_scope_chars)
        if level not in LEVELS:
            raise InvalidInput("scopes", f"level of {name!r} must be read or write, not {level!r}")
        out[str(name)] = level
    return out


def _row_to_token(row: Any) -> TokenInfo:
    return TokenInfo(
        id=row[0],
        name=row[1],
        scopes=json.loads(row[2]),
        created_at=from_text(row[3]),
        revoked_at=from_text(row[4]) if row[4] else None,
        last_used_at=from_text(row[5]) if row[5] else None,
    )


class TokenTable:
    """Reads and writes of ``api_tokens`` (portable SQL over the backend's ``_read`` and
    ``_write``: SQLite and PostgreSQL alike). Get it as ``store.tokens``."""

    def __init__(self, backend: SQLiteDatabase, *, max_scope_chars: int = 200) -> None:
        self._db = backend
        self._max_scope_chars = max_scope_chars

    def create(self, name: str, scopes: Mapping[str, str], now: datetime) -> tuple[TokenInfo, str]:
        """A new token: its listing and its secret (shown to the caller once)."""
        label = clean_name(name, "name", _MAX_NAME)
        granted = clean_scopes(scopes, self._max_scope_chars)
        token_id, secret = str(uuid7()), new_secret()
        with self._db.atomic():
            self._db._write(
                "INSERT INTO api_tokens (id, name, token_hash, scopes, created_at) "
                "VALUES (?, ?, ?, ?, ?)",
                [token_id, label, hash_token(secret), json.dumps(granted), to_text(now)],
            )
        return self.get(token_id), secret

    def get(self, token_id: str) -> TokenInfo:
        token_id = ref(token_id, "token", what="a token id")
        rows = self._db._read(f"SELECT {_COLUMNS} FROM api_tokens WHERE id = ?", [token_id])
        if not rows:
            raise NotFound(f"no token {token_id!r}")
        return _row_to_token(rows[0])

    def list(self, *, include_revoked: bool = True) -> list[TokenInfo]:
        where = "" if include_revoked else "WHERE revoked_at IS NULL"
        rows = self._db._read(f"SELECT {_COLUMNS} FROM api_tokens {where} ORDER BY created_at, id")
        return [_row_to_token(r) for r in rows]

    def find(self, id_or_name: str) -> TokenInfo:
        """A token by id, else the one active token of that name."""
        id_or_name = ref(id_or_name, "token", what="a token id or name")
        rows = self._db._read(f"SELECT {_COLUMNS} FROM api_tokens WHERE id = ?", [id_or_name])
        if not rows:
            rows = self._db._read(
                f"SELECT {_COLUMNS} FROM api_tokens WHERE name = ? AND revoked_at IS NULL",
                [id_or_name],
            )
        if not rows:
            raise NotFound(f"no token with id or active name {id_or_name!r}")
        if len(rows) > 1:
            ids = ", ".join(r[0] for r in rows)
            raise InvalidInput(
                "token", f"{len(rows)} active tokens are named {id_or_name!r}: {ids}"
            )
        return _row_to_token(rows[0])

    def revoke(self, id_or_name: str, now: datetime) -> TokenInfo:
        """Revoke a token (idempotent: a revoked token keeps its first revocation time)."""
        token = self.find(id_or_name)
        with self._db.atomic():
            self._db._write(
                "UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                [to_text(now), token.id],
            )
        return self.get(token.id)

    def verify(self, secret: str) -> TokenInfo | None:
        """The active token whose secret this is, or ``None``."""
        if not isinstance(secret, str) or not secret.startswith(TOKEN_PREFIX):
            return None
        rows = self._db._read(
            f"SELECT {_COLUMNS} FROM api_tokens WHERE token_hash = ? AND revoked_at IS NULL",
            [hash_token(secret)],
        )
        return _row_to_token(rows[0]) if rows else None

    def touch(self, token_id: str, now: datetime) -> None:
        """Record a use (the HTTP layer calls it at most once a minute per token)."""
        with self._db.atomic():
            self._db._write(
                "UPDATE api_tokens SET last_used_at = ? WHERE id = ?", [to_text(now), token_id]
            )


SQLiteTokens = TokenTable  # the name it had before the seam (#13); the store gives it
