"""Health checks and repairs of the SQLite store (``hivemem doctor``): a mixin of
``SQLiteBackend``, kept apart so the data-access module stays readable. It issues SQL
through the backend's own ``_read``/``_write``/``atomic`` and so belongs to the one
data-access layer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import text as textmod
from . import migrations
from .database import sqlite_driver


class RepairMixin:
    """``health``, ``rebuild_chunks``, ``rebuild_keyword_index``, ``unchunked_ids``."""

    _read: Any
    _write: Any
    atomic: Any
    vectors: Any
    _conn: Any
    on_writer: Any
    _reset_readers: Any

    def health(self) -> dict[str, Any]:
        """Integrity of the file and of the derived index; counts of pending work.

        Each figure is read on its own: one that cannot be read (a damaged page) is
        ``None`` and its error is under ``errors[name]``, so one bad table does not hide
        what the others say."""
        out: dict[str, Any] = {"errors": {}}
        for name, read in self._health_reads().items():
            try:
                out[name] = read()
            except Exception as exc:  # a damaged file: whatever the driver raised
                out[name] = None
                out["errors"][name] = str(exc) or type(exc).__name__
        out["fts_ok"], out["fts_error"] = out.pop("fts") or (False, out["errors"].get("fts"))
        return out

    def _fts_check(self) -> tuple[bool, str | None]:
        try:
            with self.on_writer():  # a command: read-only connections refuse it
                self._read(
                    "INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('integrity-check', 1)",
                    raw=True,
                )
            return True, None
        except (_driver().DatabaseError, MemoryError) as exc:
            return False, str(exc) or "damaged"

    def _integrity(self) -> list[str]:
        """``PRAGMA integrity_check`` on the writer connection. On a pooled read
        connection it also checks FTS5 against the index structure that connection
        cached when it last read the index: after writes since, it reported "malformed
        inverted index" for a sound file (a fresh connection and the writer said ok)."""
        with self.on_writer():
            return [r[0] for r in self._read("PRAGMA integrity_check")]

    def _health_reads(self) -> dict[str, Any]:
        one = self._read
        return {
            "integrity": self._integrity,
            "fts": self._fts_check,
            "memories_without_chunks": lambda: one(
                "SELECT COUNT(*) FROM memories m WHERE NOT EXISTS "
                "(SELECT 1 FROM chunks c WHERE c.memory_id = m.id)"
            )[0][0],
            "broken_supersede_links": lambda: one(
                "SELECT COUNT(*) FROM memories m WHERE m.supersedes_id IS NOT NULL AND NOT "
                "EXISTS (SELECT 1 FROM memories p WHERE p.id = m.supersedes_id)"
            )[0][0],
            "keys_with_several_active": lambda: one(
                "SELECT COUNT(*) FROM (SELECT scope, key FROM memories WHERE status = 'active' "
                "AND key IS NOT NULL GROUP BY scope, key HAVING COUNT(*) > 1)"
            )[0][0],
            "sessions_not_consolidated": lambda: one(
                "SELECT COUNT(*) FROM sessions WHERE consolidated_at IS NULL"
            )[0][0],
            "vectors": self.vectors.count,
            "chunks_awaiting_vectors": self.vectors.pending_count,
            "vector_index_unavailable": lambda: self.vectors.unavailable,
            "vector_exact_scan": lambda: getattr(self.vectors, "exact_scan", None),
            "journal_mode": lambda: one("PRAGMA journal_mode")[0][0],
            "sqlite_version": lambda: _driver().sqlite_version,
            "driver": lambda: _driver().__name__,
            "page_count": lambda: one("PRAGMA page_count")[0][0],
            "page_size": lambda: one("PRAGMA page_size")[0][0],
        }

    def rebuild_chunks(self, memory_ids: Sequence[str], size: int, overlap: int) -> int:
        """Re-derive chunks (and so the FTS index) of the given memories."""
        done = 0
        with self.atomic():
            for memory_id in memory_ids:
                row = self._read(
                    "SELECT content, supersede_reason, supersede_kind, scope FROM memories "
                    "WHERE id = ?",
                    [memory_id],
                )
                if not row:
                    continue
                old = self._read("SELECT id FROM chunks WHERE memory_id = ?", [memory_id])
                self.vectors.delete_chunks([r[0] for r in old])
                self._write("DELETE FROM chunks WHERE memory_id = ?", [memory_id])
                pieces = textmod.chunk(row[0][0], size, overlap) + textmod.reason_chunk(
                    *row[0][1:3]
                )
                migrations.insert_chunks(self._conn, memory_id, row[0][3], pieces)
                done += 1
        return done

    def rebuild_keyword_index(self) -> None:
        """Rebuild the FTS5 index from ``chunks`` (its external content)."""
        with self.atomic():
            self._write("INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild')")
        self._reset_readers()  # their FTS5 caches hold the old index

    def unchunked_ids(self) -> list[str]:
        return [
            r[0]
            for r in self._read(
                "SELECT m.id FROM memories m WHERE NOT EXISTS "
                "(SELECT 1 FROM chunks c WHERE c.memory_id = m.id)"
            )
        ]


def _driver() -> Any:

    return sqlite_driver
