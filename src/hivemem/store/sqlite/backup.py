"""The rows an export carries beside the memories (``hivemem.lifecycle.backup``): vault entries,
API tokens (their hashes), entity aliases and the consolidation state of sessions.

Reads are filtered by scope (tokens are store-wide: they are read only for an export of
every scope). Each ``put_*`` runs inside the import's transaction and answers
``"imported"``, ``"present"`` (the same row is already there) or a conflict message;
it never overwrites a different row.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..protocols import SESSION_COLUMNS, TOKEN_COLUMNS, VAULT_COLUMNS
from ..rows import placeholders

if TYPE_CHECKING:  # pragma: no cover
    from .database import SQLiteDatabase

Row = dict[str, Any]


def tables(backend: SQLiteDatabase) -> list[str]:
    """Every table of the file (virtual tables and their shadow tables included)."""
    rows = backend._read("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    return [r[0] for r in rows]


class SQLiteBackupRows:
    """Reads and writes of the non-memory rows of an export."""

    def __init__(self, backend: SQLiteDatabase) -> None:
        self._db = backend

    def tables(self) -> list[str]:
        """Every table of the file (virtual tables and their shadow tables included)."""
        return tables(self._db)

    def _scoped(self, sql: str, scopes: Sequence[str] | None, tail: str) -> list[Any]:
        if scopes is None:
            return self._db._read(f"{sql} {tail}")
        return self._db._read(f"{sql} WHERE scope IN ({placeholders(scopes)}) {tail}", list(scopes))

    # ------------------------------------------------------------------ read

    def vault(self, scopes: Sequence[str] | None) -> list[Row]:
        sql = f"SELECT {', '.join(VAULT_COLUMNS)} FROM vault"
        rows = self._scoped(sql, scopes, "ORDER BY scope, key")
        return [dict(zip(VAULT_COLUMNS, r, strict=True)) for r in rows]

    def tokens(self) -> list[Row]:
        rows = self._db._read(
            f"SELECT {', '.join(TOKEN_COLUMNS)} FROM api_tokens ORDER BY created_at, id"
        )
        return [dict(zip(TOKEN_COLUMNS, r, strict=True)) for r in rows]

    def aliases(self, scopes: Sequence[str] | None) -> list[Row]:
        """Aliases that differ from their entity's canonical name (those are made again
        with the entity when its memories are imported)."""
        sql = (
            "SELECT a.scope, a.alias, e.canonical, e.type, e.name FROM entity_aliases a "
            "JOIN entities e ON e.id = a.entity_id"
        )
        where = "a.alias != e.canonical"
        if scopes is None:
            rows = self._db._read(f"{sql} WHERE {where} ORDER BY a.scope, a.alias, e.id")
        else:
            rows = self._db._read(
                f"{sql} WHERE {where} AND a.scope IN ({placeholders(scopes)}) "
                "ORDER BY a.scope, a.alias, e.id",
                list(scopes),
            )
        names = ("scope", "alias", "canonical", "type", "name")
        return [dict(zip(names, r, strict=True)) for r in rows]

    def sessions(self, scopes: Sequence[str] | None) -> list[Row]:
        """Sessions with state of their own: consolidated, or carrying attributes."""
        sql = f"SELECT {', '.join(SESSION_COLUMNS)} FROM sessions"
        rows = self._scoped(sql, scopes, "ORDER BY scope, session_id")
        out = [dict(zip(SESSION_COLUMNS, r, strict=True)) for r in rows]
        return [r for r in out if r["consolidated_at"] or r["attributes"] not in ("{}", "")]

    # ------------------------------------------------------------------ write (in atomic())

    def put_vault(self, row: Mapping[str, Any]) -> str:
        current = self._db._read(
            "SELECT value, is_secret FROM vault WHERE scope = ? AND key = ?",
            [row["scope"], row["key"]],
        )
        if current:
            if (current[0][0], bool(current[0][1])) == (row["value"], bool(row["is_secret"])):
                return "present"
            return f"vault key {row['key']!r} of scope {row['scope']!r} already holds another value"
        self._db._write(
            f"INSERT INTO vault ({', '.join(VAULT_COLUMNS)}) "
            f"VALUES ({placeholders(VAULT_COLUMNS)})",
            [row[c] if c != "is_secret" else int(bool(row[c])) for c in VAULT_COLUMNS],
        )
        return "imported"

    def put_token(self, row: Mapping[str, Any]) -> str:
        current = self._db._read(
            "SELECT id, token_hash FROM api_tokens WHERE id = ? OR token_hash = ?",
            [row["id"], row["token_hash"]],
        )
        if current:
            if (current[0][0], current[0][1]) == (row["id"], row["token_hash"]):
                return "present"
            return f"API token {row['id']} clashes with token {current[0][0]} of this store"
        values = [row[c] for c in TOKEN_COLUMNS]
        values[3] = json.dumps(row["scopes"]) if not isinstance(row["scopes"], str) else values[3]
        self._db._write(
            f"INSERT INTO api_tokens ({', '.join(TOKEN_COLUMNS)}) "
            f"VALUES ({placeholders(TOKEN_COLUMNS)})",
            values,
        )
        return "imported"

    def put_alias(self, row: Mapping[str, Any], when: str) -> str:
        found = self._db._read(
            "SELECT id FROM entities WHERE scope = ? AND canonical = ? AND type = ?",
            [row["scope"], row["canonical"], row["type"]],
        )
        if found:
            entity_id = found[0][0]
        else:  # an entity no imported memory mentions (made by the enrich job)
            entity_id = self._db._write(
                "INSERT INTO entities (scope, canonical, type, name, first_seen, last_seen) "
                "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                [row["scope"], row["canonical"], row["type"], row["name"], when, when],
            ).fetchone()[0]
        done = self._db._write(
            "INSERT OR IGNORE INTO entity_aliases (scope, alias, entity_id) VALUES (?, ?, ?)",
            [row["scope"], row["alias"], entity_id],
        )
        return "imported" if done.rowcount else "present"

    def put_session(self, row: Mapping[str, Any], when: str) -> str:
        current = self._db._read(
            "SELECT consolidated_at, attributes FROM sessions WHERE scope = ? AND session_id = ?",
            [row["scope"], row["session_id"]],
        )
        if current and (current[0][0], _parsed(current[0][1])) == (
            row["consolidated_at"],
            _parsed(row["attributes"]),
        ):
            return "present"  # the same state, whatever spacing its text has (PostgreSQL's)
        self._db._write(
            "INSERT INTO sessions (scope, session_id, started_at, last_event_at, "
            "consolidated_at, attributes) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (scope, session_id) DO UPDATE SET "
            "consolidated_at = COALESCE(excluded.consolidated_at, sessions.consolidated_at), "
            "attributes = excluded.attributes",
            [
                row["scope"],
                row["session_id"],
                when,
                when,
                row["consolidated_at"],
                row["attributes"],
            ],
        )
        return "imported"


def _parsed(attributes: Any) -> Any:
    """A session's attributes as a value (the text itself where it is not JSON)."""
    try:
        return json.loads(attributes)
    except (TypeError, ValueError):
        return attributes
