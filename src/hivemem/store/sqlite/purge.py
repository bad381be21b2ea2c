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

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ...clock import to_text
from ..rows import placeholders
from .vectors import EPOCH_KEY, LOG, TABLE

if TYPE_CHECKING:  # pragma: no cover
    from .database import SQLiteDatabase

_BATCH = 500  # ids per statement: under SQLite's variable limit


def _batches(items: Sequence[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(items), _BATCH):
        yield list(items[start : start + _BATCH])


class SQLitePurge:
    """Hard deletes over the backend's connection and lock."""

    def __init__(self, backend: SQLiteDatabase) -> None:
        self._db = backend

    # ------------------------------------------------------------------ what a purge reaches

    def scope_ids(self, scope: str) -> list[str]:
        return [r[0] for r in self._db._read("SELECT id FROM memories WHERE scope = ?", [scope])]

    def derived(self, scope: str, memory_ids: Sequence[str]) -> list[str]:
        """The scope's memories drawn from ``memory_ids`` (their ``source_ids`` name one),
        transitively: facts consolidated from an episode, a summary of archived
        memories, a reflection on facts. They may quote the text, so a purge takes them.
        One pass over the scope's rows per generation: erasure is rare, not hot."""
        seen, frontier, out = set(memory_ids), list(memory_ids), []
        while frontier:
            found: list[str] = []
            for part in _batches(frontier):
                found += [i for i in self._drawn_from(scope, part) if i not in seen]
            seen.update(found)
            out += found
            frontier = found
        return out

    def _drawn_from(self, scope: str, memory_ids: list[str]) -> list[str]:
        """Ids of the scope's memories whose ``source_ids`` name one of ``memory_ids``."""
        rows = self._db._read(
            "SELECT DISTINCT m.id FROM memories m, json_each(m.source_ids) j "
            f"WHERE m.scope = ? AND j.value IN ({placeholders(memory_ids)})",
            [scope, *memory_ids],
        )
        return [r[0] for r in rows]

    def copies(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(scope, id) of the promoted copies of ``memory_ids`` in any scope (source
        ``promotion``, ``source_ids`` naming one): ``promote`` writes a copy into a
        shared scope, so erasing the original must find it there. The one read that
        crosses scopes, for erasure only; the caller decides which it may erase."""
        out: list[tuple[str, str]] = []
        for part in _batches(list(memory_ids)):
            rows = self._db._read(
                "SELECT DISTINCT m.scope, m.id FROM memories m, json_each(m.source_ids) j "
                f"WHERE m.source = 'promotion' AND j.value IN ({placeholders(part)})",
                part,
            )
            out += [(r[0], r[1]) for r in rows]
        return out

    def plan(self, scope: str, memory_ids: Sequence[str], whole_scope: bool) -> dict[str, int]:
        """How many rows a purge of ``memory_ids`` (of ``scope``) would erase, by table."""
        counts = {"memories": len(memory_ids), "chunks": 0, "entity_links": 0}
        for part in _batches(memory_ids):
            marks = placeholders(part)
            counts["chunks"] += self._count(f"chunks WHERE memory_id IN ({marks})", part)
            counts["entity_links"] += self._count(
                f"memory_entities WHERE memory_id IN ({marks})", part
            )
        if whole_scope:
            counts["entities"] = self._count("entities WHERE scope = ?", [scope])
            counts["sessions"] = self._count("sessions WHERE scope = ?", [scope])
            counts["vault"] = self._count("vault WHERE scope = ?", [scope])
            counts["runs"] = self._count("maintenance_runs WHERE scope = ?", [scope])
            counts["tokens"] = len(self._tokens_of(scope)[0])
        return counts

    def _count(self, tail: str, params: Sequence[Any]) -> int:
        return int(self._db._read(f"SELECT COUNT(*) FROM {tail}", params)[0][0])

    def _tokens_of(self, scope: str) -> tuple[list[str], list[tuple[str, dict[str, str]]]]:
        """Tokens bound to ``scope`` alone (to delete), and the others that grant it
        (with their grants minus ``scope``)."""
        alone, others = [], []
        for token_id, raw in self._db._read("SELECT id, scopes FROM api_tokens"):
            grants = json.loads(raw)
            if scope not in grants:
                continue
            rest = {k: v for k, v in grants.items() if k != scope}
            if rest:
                others.append((token_id, rest))
            else:
                alone.append(token_id)
        return alone, others

    # ------------------------------------------------------------------ the erase

    @contextmanager
    def secure(self) -> Iterator[None]:
        """``secure_delete`` on for the enclosed transaction (a connection setting)."""
        with self._db._lock:
            self._db._conn.execute("PRAGMA secure_delete = ON")
            try:
                yield
            finally:
                self._db._conn.execute("PRAGMA secure_delete = OFF")

    def erase(
        self,
        scope: str,
        memory_ids: Sequence[str],
        *,
        whole_scope: bool,
        target: str,
        by: str | None,
        now: datetime,
    ) -> dict[str, int]:
        """Inside ``secure()`` and a write transaction: erase and audit; returns counts."""
        db = self._db
        counts = self.plan(scope, memory_ids, whole_scope)
        chunk_ids: list[int] = []
        hashes: set[str] = set()
        entity_ids: set[int] = set()
        for part in _batches(memory_ids):
            marks = placeholders(part)
            for chunk_id, text_hash in db._read(
                f"SELECT id, text_hash FROM chunks WHERE memory_id IN ({marks})", part
            ):
                chunk_ids.append(chunk_id)
                hashes.add(text_hash)
            entity_ids.update(
                r[0]
                for r in db._read(
                    f"SELECT entity_id FROM memory_entities WHERE memory_id IN ({marks})", part
                )
            )
        self._delete_chunks(chunk_ids)
        for part in _batches(memory_ids):  # links, job state, cross-refs, decay: cascade
            db._write(f"DELETE FROM memories WHERE id IN ({placeholders(part)})", part)
        self._rows_deleted()
        counts["cached_vectors"] = 0
        for part in _batches(sorted(hashes)):
            counts["cached_vectors"] += db._write(
                f"DELETE FROM embedding_cache WHERE text_hash IN ({placeholders(part)}) "
                "AND NOT EXISTS (SELECT 1 FROM chunks c "
                "WHERE c.text_hash = embedding_cache.text_hash)",
                part,
            ).rowcount
        counts["entities"] = self._orphan_entities(scope, sorted(entity_ids), whole_scope)
        if whole_scope:
            self._erase_scope_state(scope)
        self._index_purged()
        db._write(
            "INSERT INTO purges (scope, target, memory_ids, counts, purged_by, purged_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                scope,
                target,
                json.dumps(list(memory_ids)),
                json.dumps(counts, sort_keys=True),
                by,
                to_text(now),
            ],
        )
        return counts

    def _delete_chunks(self, chunk_ids: Sequence[int]) -> None:
        """The chunks, with their vectors and their keyword index entries."""
        db = self._db
        vectors = db._read("SELECT 1 FROM sqlite_master WHERE name = ?", [TABLE])
        for part in _batches(chunk_ids):
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

    def _orphan_entities(self, scope: str, entity_ids: list[int], whole_scope: bool) -> int:
        """Delete the scope's entities no memory mentions now (aliases cascade); the
        others get their mention counts recomputed."""
        db = self._db
        if whole_scope:
            gone = db._write("DELETE FROM entities WHERE scope = ?", [scope]).rowcount
            db._write("DELETE FROM entity_aliases WHERE scope = ?", [scope])
            return int(gone)
        gone = 0
        for part in _batches(entity_ids):
            marks = placeholders(part)
            gone += db._write(
                f"DELETE FROM entities WHERE id IN ({marks}) AND NOT EXISTS "
                "(SELECT 1 FROM memory_entities me WHERE me.entity_id = entities.id)",
                part,
            ).rowcount
            db._write(
                "UPDATE entities SET mention_count = (SELECT COUNT(*) FROM memory_entities me "
                f"WHERE me.entity_id = entities.id) WHERE id IN ({marks})",
                part,
            )
        return gone

    def _erase_scope_state(self, scope: str) -> None:
        db = self._db
        for table in ("sessions", "vault", "maintenance_runs"):
            db._write(f"DELETE FROM {table} WHERE scope = ?", [scope])
        alone, others = self._tokens_of(scope)
        for token_id in alone:
            db._write("DELETE FROM api_tokens WHERE id = ?", [token_id])
        for token_id, rest in others:
            db._write("UPDATE api_tokens SET scopes = ? WHERE id = ?", [json.dumps(rest), token_id])

    # ------------------------------------------------------------------ after the commit

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

    def audit(self, scope: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        """The newest purge records first (of one scope when given)."""
        where, params = ("WHERE scope = ?", [scope]) if scope is not None else ("", [])
        rows = self._db._read(  # portable SQL: PostgreSQL's purge runs it too
            "SELECT id, scope, target, memory_ids, counts, purged_by, purged_at FROM purges "
            f"{where} ORDER BY id DESC LIMIT ?",
            [*params, limit],
        )
        return [
            {
                "id": r[0],
                "scope": r[1],
                "target": r[2],
                "memory_ids": json.loads(r[3]),
                "counts": json.loads(r[4]),
                "purged_by": r[5],
                "purged_at": r[6],
            }
            for r in rows
        ]
