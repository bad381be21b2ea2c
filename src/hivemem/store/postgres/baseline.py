"""The plain PostgreSQL insert the write bench compares HiveMem's PostgreSQL write path to
(``hivemem --db postgresql://… bench --write-path``): one table, a ``tsvector`` column
with its GIN index, one ``INSERT`` per write in a transaction of its own (a batch: one
transaction). No versions, chunks, entities or vectors: what "just put it in
PostgreSQL" costs on the same server and rows.

Not a store of HiveMem's: nothing else uses it.
"""

from __future__ import annotations

import uuid
from typing import Any

from . import require_driver

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS bare_memories (id text PRIMARY KEY, scope text NOT NULL, "
    "content text NOT NULL, terms tsvector NOT NULL)",
    "CREATE INDEX IF NOT EXISTS bare_memories_terms ON bare_memories USING gin (terms)",
)
_INSERT = (
    "INSERT INTO bare_memories (id, scope, content, terms) "
    "VALUES (%s, %s, %s, to_tsvector('simple', %s))"
)


class BarePostgres:
    """One connection, autocommit: each ``add`` is its own transaction."""

    def __init__(self, url: str) -> None:
        psycopg = require_driver()
        self._conn: Any = psycopg.connect(url, autocommit=True)
        for sql in _SCHEMA:
            self._conn.execute(sql)

    def add(self, scope: str, content: str) -> None:
        self._conn.execute(_INSERT, (str(uuid.uuid4()), scope, content, content))

    def add_many(self, scope: str, contents: list[str]) -> None:
        with self._conn.transaction(), self._conn.cursor() as cursor:
            cursor.executemany(_INSERT, [(str(uuid.uuid4()), scope, c, c) for c in contents])

    def close(self) -> None:
        self._conn.close()
