"""Hard purges of the SQLite store: the SQL behind ``hivemem.write.purge``.

A purge erases rows for good, from every table that holds them or something derived
from them: ``memories``; ``chunks`` and their keyword index entries (the external-content
FTS5 index is told each deleted row with its text, then optimized, so its segments lose
the terms, not only mark them deleted); the chunk vectors, their log and queue; the
embedding cache rows no remaining chunk uses; the entity links, and the entities no
memory of the scope mentions any more; the per-memory job state (cascades). A purge of a
whole scope also erases its sessions, vault, run log and the tokens bound to it alone
(and strips it from tokens that have other scopes).

The whole purge is one transaction run with ``PRAGMA secure_delete = ON``, so SQLite
overwrites what it frees with zeros. Then the WAL is checkpointed and truncated, and
(unless told not to) the file is vacuumed: pages freed before the purge by ordinary
writes (FTS5 segment merges, page splits) may still hold old copies of the text, and
VACUUM rewrites the file from live rows only. An audit row (``purges``) records what was
erased, never the content.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from ..purge import PurgeStatements, batches
from ..rows import placeholders
from .vectors import EPOCH_KEY, LOG, TABLE

if TYPE_CHECKING:  # pragma: no cover
    from .database import SQLiteDatabase


class SQLitePurge(PurgeStatements):
    """SQLite's part of a hard delete (the shared statements: ``store/purge.py``)."""

    def __init__(self, backend: SQLiteDatabase) -> None:
        super().__init__(backend)

    def _drawn_from(self, scope: str, memory_ids: list[str]) -> list[str]:
        rows = self._db._read(
            "SELECT DISTINCT m.id FROM memories m, json_each(m.source_ids) j "
            f"WHERE m.scope = ? AND j.value IN ({placeholders(memory_ids)})",
            [scope, *memory_ids],
        )
        return [r[0] for r in rows]

    def copies(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        for part in batches(list(memory_ids)):
            rows = self._db._read(
                "SELECT DISTINCT m.scope, m.id FROM memories m, json_each(m.source_ids) j "
                f"WHERE m.source = 'promotion' AND j.value IN ({placeholders(part)})",
                part,
            )
            out += [(r[0], r[1]) for r in rows]
        return out

    @contextmanager
    def secure(self) -> Iterator[None]:
        """``secure_delete`` on for the enclosed transaction (a connection setting)."""
        with self._db._lock:
            self._db._conn.execute("PRAGMA secure_delete = ON")
            try:
                yield
            finally:
                self._db._conn.execute("PRAGMA secure_delete = OFF")

    def _delete_chunks(self, chunk_ids: Sequence[int]) -> None:
        """The chunks, with their vectors and their keyword index entries."""
        db = self._db
        vectors = db._read("SELECT 1 FROM sqlite_master WHERE name = ?", [TABLE])
        for part in batches(chunk_ids):
            marks = placeholders(part)
            if vectors and db.vectors.unavailable is None:
                db._write(f"DELETE FROM {TABLE} WHERE chunk_id IN ({marks})", part)
                db._write(f"DELETE FROM {LOG} WHERE chunk_id IN ({marks})", part)
            # The delete trigger tells the FTS index each row's text: its entries go.
            db._write(f"DELETE FROM chunks WHERE id IN ({marks})", part)

    def _rows_deleted(self) -> None:
        # Nothing to settle on SQLite: the per-scope chunk counts (``scope_chunks``,
        # migration 0013) follow the delete triggers, and the keyword index is merged
        # by ``_index_purged``.
        return None

    def _index_purged(self) -> None:
        db = self._db
        # Merge every FTS segment into one: deleted rows' terms leave the index itself.
        db._write("INSERT INTO chunks_fts (chunks_fts) VALUES ('optimize')")
        epoch = int(db.meta().get(EPOCH_KEY, "0")) + 1  # in-memory vector copies reload
        db.set_meta(EPOCH_KEY, str(epoch))

    def compact(self, vacuum: bool) -> dict[str, bool]:
        """Outside any transaction: vacuum (optional) and checkpoint + truncate the WAL.
        Returns what completed (a reader in another process can hold the WAL open)."""
        db = self._db
        done = {"vacuumed": False, "checkpointed": False}
        with db._lock:
            if db._depth:
                raise RuntimeError("compact inside a transaction")  # a HiveMem bug
            conn = db._conn
            conn.execute("PRAGMA secure_delete = ON")
            try:
                if vacuum:
                    conn.execute("VACUUM")
                    done["vacuumed"] = True
                if db.location != ":memory:":
                    busy, _log, _moved = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
                    done["checkpointed"] = busy == 0
            finally:
                conn.execute("PRAGMA secure_delete = OFF")
        return done
