"""What ``hivemem doctor`` checks on a PostgreSQL server (``PostgresBackend.health``):
the server and pgvector versions, whether the extension can be upgraded, every index of
HiveMem's tables with its access method and validity (``pg_index.indisvalid``: an index
left invalid by a failed ``CREATE INDEX CONCURRENTLY`` or ``REINDEX`` is not used by any
query), and the migrations this HiveMem knows."""

from __future__ import annotations

from typing import Any

_INDEXES = """
SELECT i.relname, t.relname, am.amname, x.indisvalid, x.indisready
  FROM pg_index x
  JOIN pg_class i ON i.oid = x.indexrelid
  JOIN pg_class t ON t.oid = x.indrelid
  JOIN pg_am am ON am.oid = i.relam
  JOIN pg_namespace n ON n.oid = t.relnamespace
 WHERE n.nspname = current_schema()
 ORDER BY t.relname, i.relname"""


def server_health(backend: Any) -> dict[str, Any]:
    """Figures of the server behind ``backend`` (read-only statements)."""
    one = lambda sql: (backend._q(sql) or [[None]])[0][0]  # noqa: E731
    return {
        "server_version": one("SHOW server_version"),
        "pgvector_version": one("SELECT extversion FROM pg_extension WHERE extname = 'vector'"),
        "pgvector_available": one(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ),
        "indexes": [
            {"name": r[0], "table": r[1], "method": r[2], "valid": r[3] and r[4]}
            for r in backend._q(_INDEXES)
        ],
    }
