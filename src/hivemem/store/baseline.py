"""The bare stack the load bench compares HiveMem to (``hivemem bench --load --bare``):
one SQLite table and its FTS5 index, one ``INSERT`` per write and one FTS5 ``MATCH`` per
search — no ranking beyond FTS5's own BM25, no vectors, no entities, no versions. It is
what "just put it in SQLite" costs on the same machine, data and HTTP framework, so the
bench can say how close HiveMem gets (issue 24: ≥ 0.7× its requests/s).

Not a store of HiveMem's: nothing else uses it.
"""

from __future__ import annotations

import os
import re
import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .sqlite.database import sqlite_driver

_SCHEMA = """
CREATE TABLE IF NOT EXISTS memories (
    rowid INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, scope TEXT NOT NULL, content TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(
    content, content='memories', content_rowid='rowid', tokenize='porter unicode61'
);
"""
_WORD = re.compile(r"\w+")


class BareStore:
    """One connection per thread (WAL, ``busy_timeout``), each write its own transaction:
    the plain way to serve a SQLite file from a threaded web server."""

    def __init__(self, path: str | Path, busy_timeout_ms: int = 10_000) -> None:
        self.path = str(path)
        self.busy_timeout_ms = busy_timeout_ms
        self._local = threading.local()
        conn = self._conn()
        conn.executescript(_SCHEMA)

    def _conn(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite_driver.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute(f"PRAGMA busy_timeout={int(self.busy_timeout_ms)}")
            self._local.conn = conn
        return conn

    def close(self) -> None:
        """Close this thread's connection (a later call opens a new one)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def add(self, scope: str, content: str) -> str:
        """The row and its FTS5 row, in one transaction; the new id."""
        memory_id = str(uuid.uuid4())
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            cursor = conn.execute(
                "INSERT INTO memories (id, scope, content) VALUES (?, ?, ?)",
                (memory_id, scope, content),
            )
            conn.execute(
                "INSERT INTO memories_fts (rowid, content) VALUES (?, ?)",
                (cursor.lastrowid, content),
            )
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return memory_id

    def add_many(self, scope: str, contents: list[str]) -> None:
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        for content in contents:
            cursor = conn.execute(
                "INSERT INTO memories (id, scope, content) VALUES (?, ?, ?)",
                (str(uuid.uuid4()), scope, content),
            )
            conn.execute(
                "INSERT INTO memories_fts (rowid, content) VALUES (?, ?)",
                (cursor.lastrowid, content),
            )
        conn.execute("COMMIT")

    def search(self, scope: str, query: str, limit: int) -> list[dict[str, Any]]:
        """One FTS5 ``MATCH`` of the query's words ORed, BM25 order, within the scope."""
        words = {w.lower() for w in _WORD.findall(query)}
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in sorted(words))
        rows = (
            self._conn()
            .execute(
                "SELECT m.id, m.content, bm25(memories_fts) FROM memories_fts "
                "JOIN memories m ON m.rowid = memories_fts.rowid "
                "WHERE memories_fts MATCH ? AND m.scope = ? ORDER BY bm25(memories_fts) LIMIT ?",
                (match, scope, int(limit)),
            )
            .fetchall()
        )
        return [{"id": r[0], "content": r[1], "score": -r[2]} for r in rows]

    def get(self, scope: str, memory_id: str) -> dict[str, Any] | None:
        row = (
            self._conn()
            .execute(
                "SELECT id, content FROM memories WHERE id = ? AND scope = ?", (memory_id, scope)
            )
            .fetchone()
        )
        return {"id": row[0], "content": row[1]} if row else None


def wal_pages(path: str | Path, write: Callable[[], None]) -> int:
    """Pages of write-ahead log that ``write()`` appends to the SQLite file ``path`` (a
    WAL file; HiveMem's store or a ``BareStore``, open elsewhere): the log is emptied
    first (a ``TRUNCATE`` checkpoint), so every frame after it is the write's. A
    transaction logs each page it changed once, so this is what its ``COMMIT`` writes
    and what a checkpoint copies back (``write`` must stay under the autocheckpoint:
    1,000 pages by default, HiveMem's 3,000)."""
    conn = sqlite_driver.connect(str(path), isolation_level=None)
    try:
        busy, _, _ = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if busy:
            raise RuntimeError(f"{path}: the log could not be emptied (a reader holds it)")
        page = conn.execute("PRAGMA page_size").fetchone()[0]
    finally:
        conn.close()
    write()
    size = os.path.getsize(f"{path}-wal")
    return max(0, size - 32) // (24 + page)  # a 32-byte header, then frames
