"""Hard deletes (issue #14's erasure), the statements both backends share: what a purge
reaches (a memory's whole chain, what was drawn from it, its promoted copies) and the
erase itself, in portable SQL through the backend's ``?``-accepting ``_read`` /
``_write``. Each backend adds what differs (``sqlite/purge.py``, ``postgres/purge.py``):
how the chunks, their vectors and keyword index entries go, the search over
``source_ids``, and the compaction after the commit.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from ..clock import to_text
from .rows import placeholders

_BATCH = 500  # ids per statement: under SQLite's variable limit


def batches(items: Sequence[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(items), _BATCH):
        yield list(items[start : start + _BATCH])


class PurgeStatements:
    """Hard deletes over the backend's connection and lock; the hooks below are the
    backend's."""

    def __init__(self, backend: Any) -> None:
        self._db = backend

    # ------------------------------------------------------------------ the backend's hooks

    def _drawn_from(self, scope: str, memory_ids: list[str]) -> list[str]:
        """Ids of the scope's memories whose ``source_ids`` name one of ``memory_ids``."""
        raise NotImplementedError

    def copies(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(scope, id) of the promoted copies of ``memory_ids`` in any scope (source
        ``promotion``, ``source_ids`` naming one): ``promote`` writes a copy into a
        shared scope, so erasing the original must find it there. The one read that
        crosses scopes, for erasure only; the caller decides which it may erase."""
        raise NotImplementedError

    def secure(self) -> AbstractContextManager[None]:
        """The enclosing transaction's erase leaves no copy of the freed pages."""
        raise NotImplementedError

    def _delete_chunks(self, chunk_ids: Sequence[int]) -> None:
        """The chunks, with their vectors and their keyword index entries."""
        raise NotImplementedError

    def _rows_deleted(self) -> None:
        """After the memories' rows went: settle what counted them."""
        raise NotImplementedError

    def _index_purged(self) -> None:
        """At the end of the erase: the keyword index loses the deleted rows' terms."""
        raise NotImplementedError

    def compact(self, vacuum: bool) -> dict[str, bool]:
        """Outside any transaction: rewrite what the erase freed; returns what completed."""
        raise NotImplementedError

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
            for part in batches(frontier):
                found += [i for i in self._drawn_from(scope, part) if i not in seen]
            seen.update(found)
            out += found
            frontier = found
        return out

    def plan(self, scope: str, memory_ids: Sequence[str], whole_scope: bool) -> dict[str, int]:
        """How many rows a purge of ``memory_ids`` (of ``scope``) would erase, by table."""
        counts = {"memories": len(memory_ids), "chunks": 0, "entity_links": 0}
        for part in batches(memory_ids):
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
        for part in batches(memory_ids):
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
        for part in batches(memory_ids):  # links, job state, cross-refs, decay: cascade
            db._write(f"DELETE FROM memories WHERE id IN ({placeholders(part)})", part)
        self._rows_deleted()
        counts["cached_vectors"] = 0
        for part in batches(sorted(hashes)):
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

    def _orphan_entities(self, scope: str, entity_ids: list[int], whole_scope: bool) -> int:
        """Delete the scope's entities no memory mentions now (aliases cascade); the
        others get their mention counts recomputed."""
        db = self._db
        if whole_scope:
            gone = db._write("DELETE FROM entities WHERE scope = ?", [scope]).rowcount
            db._write("DELETE FROM entity_aliases WHERE scope = ?", [scope])
            return int(gone)
        gone = 0
        for part in batches(entity_ids):
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
