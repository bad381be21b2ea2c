"""Reads and writes of the ``vault`` table (migration ``0008_vault``), shared by both
backends: the SQL is portable and runs through the backend's ``?``-accepting
``_read``/``_write``. Only "has another connection changed the secrets?" is the
backend's own (``sqlite/vault.py``, ``postgres/extras.py``).

Every statement but ``secret_values`` is filtered by scope. ``secret_values`` reads the
secret values of every scope: the scrubber redacts any of them from any output, whoever
reads it. Nothing here touches ``chunks``: vault entries are never indexed.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

from ..clock import from_text, to_text
from .protocols import VaultRow

_COLUMNS = "scope, key, value, is_secret, created_at, updated_at"
# How long an answer of ``changed_elsewhere`` stands: output this close to another
# process's commit is indistinguishable from output made just before it.
RECHECK_SECONDS = 0.005


def _row(raw: tuple) -> VaultRow:
    return VaultRow(raw[0], raw[1], raw[2], bool(raw[3]), from_text(raw[4]), from_text(raw[5]))


class VaultStatements:
    """The vault's SQL (the backend's connection and lock); a backend's subclass adds
    ``changed_elsewhere`` and ``close``."""

    def __init__(self, backend: Any) -> None:
        self._db = backend
        self._checked_at = float("-inf")

    def get(self, scope: str, key: str) -> VaultRow | None:
        rows = self._db._read(
            f"SELECT {_COLUMNS} FROM vault WHERE scope = ? AND key = ?", [scope, key]
        )
        return _row(rows[0]) if rows else None

    def list(self, scope: str, prefix: str | None = None) -> list[VaultRow]:
        if prefix:
            # Range scan on the primary key: keys from the prefix up to the next string.
            rows = self._db._read(
                f"SELECT {_COLUMNS} FROM vault WHERE scope = ? AND key >= ? AND key < ? "
                "ORDER BY key",
                [scope, prefix, prefix + "\U0010ffff"],
            )
        else:
            rows = self._db._read(
                f"SELECT {_COLUMNS} FROM vault WHERE scope = ? ORDER BY key", [scope]
            )
        return [_row(r) for r in rows]

    def put(
        self, scope: str, key: str, value: str, is_secret: bool, now: datetime
    ) -> VaultRow | None:
        """Insert or replace the entry; returns what was there before (or ``None``).
        Call inside ``atomic()``."""
        before = self.get(scope, key)
        self._db._write(
            "INSERT INTO vault (scope, key, value, is_secret, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope, key) DO UPDATE SET "
            "value = excluded.value, is_secret = excluded.is_secret, "
            "updated_at = excluded.updated_at",
            [scope, key, value, int(is_secret), to_text(now), to_text(now)],
        )
        return before

    def delete(self, scope: str, key: str) -> VaultRow | None:
        """Remove the entry; returns it, or ``None`` when there was none."""
        before = self.get(scope, key)
        if before is not None:
            self._db._write("DELETE FROM vault WHERE scope = ? AND key = ?", [scope, key])
        return before

    def count(self, scope: str) -> int:
        return int(self._db._read("SELECT COUNT(*) FROM vault WHERE scope = ?", [scope])[0][0])

    def secret_values(self) -> builtins.list[str]:
        """Every secret value of every scope (JSON text of a string)."""
        return [r[0] for r in self._db._read("SELECT value FROM vault WHERE is_secret = 1")]
