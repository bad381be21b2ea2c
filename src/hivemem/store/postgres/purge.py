"""Hard purges on the PostgreSQL store: the SQL behind ``hivemem.write.purge``.

The erase is the SQLite store's (``store/sqlite/purge.py``: the same tables, the same
counts, the same audit row), through the backend's ``?``-accepting statements; what
differs is said here. Chunks take their vectors and queue entries with them (``ON
DELETE CASCADE``) and their ``terms`` are the keyword index, so deleting the rows
removes the text from every table.

PostgreSQL keeps a deleted row's bytes in its page until the space is reused (MVCC), so
``compact`` runs ``VACUUM`` on the tables that held the text, and with ``vacuum`` (the
default of ``hivemem purge``) ``VACUUM FULL``, which rewrites each table from its live
rows into new files and drops the old ones (it locks each table briefly: a purge is
rare). Copies outside the tables — the write-ahead log until it is recycled, base
backups, replicas' WAL archives — are the operator's to expire (docs/postgres.md).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from psycopg import errors as pgerrors

from ..purge import PurgeStatements, batches

if TYPE_CHECKING:  # pragma: no cover
    from .database import PostgresDatabase

# Tables that hold a memory's text or something derived from it.
TEXT_TABLES = (
    "memories",
    "chunks",
    "keyword_postings",
    "chunk_vectors",
    "embedding_cache",
    "entities",
    "entity_aliases",
    "sessions",
    "vault",
    "maintenance_runs",
)


class PgPurge(PurgeStatements):
    _db: PostgresDatabase

    def __init__(self, backend: PostgresDatabase) -> None:
        super().__init__(backend)

    def _drawn_from(self, scope: str, memory_ids: list[str]) -> list[str]:
        rows = self._db._q(
            "SELECT DISTINCT m.id FROM memories m, "
            "jsonb_array_elements_text(m.source_ids::jsonb) AS j(value) "
            "WHERE m.scope = %s AND j.value = ANY(%s)",
            [scope, memory_ids],
        )
        return [r[0] for r in rows]

    def copies(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        rows = self._db._q(
            "SELECT DISTINCT m.scope, m.id FROM memories m, "
            "jsonb_array_elements_text(m.source_ids::jsonb) AS j(value) "
            "WHERE m.source = 'promotion' AND j.value = ANY(%s)",
            [list(memory_ids)],
        )
        return [(r[0], r[1]) for r in rows]

    @contextmanager
    def secure(self) -> Iterator[None]:
        """No setting needed: ``compact`` rewrites what the transaction freed."""
        yield

    def _delete_chunks(self, chunk_ids: Sequence[int]) -> None:
        for part in batches(chunk_ids):  # vectors and the queue cascade
            self._db._x("DELETE FROM chunks WHERE id = ANY(%s)", [part])

    def _rows_deleted(self) -> None:
        with self._db._stats_lock:  # cached keyword statistics counted the erased chunks
            self._db._doc_freq.clear()
            self._db._scope_stats.clear()

    def _index_purged(self) -> None:
        """Nothing: ``chunks.terms`` is the index, and its rows are gone."""

    def compact(self, vacuum: bool) -> dict[str, bool]:
        """Outside any transaction: VACUUM (FULL with ``vacuum``) the tables that held
        the text. ``checkpointed``: a CHECKPOINT ran (it needs the pg_checkpoint role or
        a superuser; without it the WAL is recycled on the server's schedule)."""
        done = {"vacuumed": False, "checkpointed": False}
        existing = [
            t for t in TEXT_TABLES if self._db._q("SELECT to_regclass(%s) IS NOT NULL", [t])[0][0]
        ]
        verb = "VACUUM (FULL)" if vacuum else "VACUUM"
        self._db._q(f"{verb} {', '.join(existing)}")
        done["vacuumed"] = vacuum
        try:
            self._db._q("CHECKPOINT")
            done["checkpointed"] = True
        except pgerrors.InsufficientPrivilege:  # reported, not raised
            done["checkpointed"] = False
        return done
