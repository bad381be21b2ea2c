"""The storage seam: what the write rules and the retrieval pipeline need from a database.

A backend is the ONE place that issues SQL. Every read takes the tuple of scopes the
caller may see, every write the one scope it may write, and the backend puts them in the
WHERE clause of every statement, so a handle of scope A can never touch a row of scope B,
whatever id it guesses. Write rules (``hivemem.write.rules``) and ranking
(``hivemem.retrieval.keyword``) sit above this protocol and stay the same for SQLite and PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from ..providers.entities import Mention
from ..types import Entity, ListFilter, Memory, Query, Status


@dataclass(frozen=True, slots=True)
class ChunkMatch:
    """One chunk found by the keyword lane, with its raw BM25 (higher is better)."""

    chunk_id: int
    memory_id: str
    seq: int
    text: str
    bm25: float


@dataclass(frozen=True, slots=True)
class TermStats:
    """Document frequencies of a query's terms: ``total_chunks`` and ``doc_freq`` over
    the scopes asked for (all when none), ``postings`` over the whole keyword index
    (what a MATCH walks: for choosing a plan, never for a score)."""

    total_chunks: int
    doc_freq: Mapping[str, int]  # query term -> chunks containing it
    postings: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class SessionInfo:
    scope: str
    session_id: str
    started_at: datetime
    last_event_at: datetime
    episode_count: int
    consolidated_at: datetime | None


class VectorIndex(Protocol):
    """Chunk vectors of one embedder identity, and the queue of chunks awaiting one
    (``hivemem.store.sqlite.vectors`` documents the SQLite layout)."""

    unavailable: str | None  # why this store cannot hold vectors, or None
    exact_scan: str | None  # why search scans vectors exactly (no KNN index), or None

    def recorded_identity(self) -> str | None: ...

    def bind(self, identity: str, dimension: int) -> str | None:
        """Record ``identity`` if none is; return the other identity the store holds."""
        ...

    def reset(self, identity: str, dimension: int) -> int:
        """Drop every vector, record ``identity``, queue every chunk; return the queue size."""
        ...

    def pending(self, limit: int) -> list[Any]: ...

    def pending_count(self, scopes: Sequence[str] | None = None) -> int: ...

    def has_pending(self) -> bool: ...

    def cached(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]: ...

    def upsert(self, model: str, items: Sequence[tuple[Any, bytes]]) -> int: ...

    def search(
        self,
        scopes: Sequence[str],
        vector: Any,
        query: Query,
        fetch: int,
        now: datetime,
        model: str,
        pool: int = 64,
    ) -> list[Any]: ...

    def vectors(self, model: str, chunk_ids: Sequence[int]) -> dict[int, Any]: ...

    def count(self) -> int: ...


class EntityIndex(Protocol):
    """Entities per scope, their aliases, and which memories mention them."""

    def lookup(
        self, scopes: Sequence[str], names: Sequence[str], *, aliases: bool = True
    ) -> list[Entity]:
        """Entities whose canonical name or an alias is among ``names``; with
        ``aliases=False`` their ``aliases`` are left empty (search needs none)."""
        ...

    def linked(
        self,
        scopes: Sequence[str],
        entity_ids: Sequence[int],
        query: Query | ListFilter | None,
        now: datetime,
        limit: int,
    ) -> list[tuple[str, int]]:
        """(memory id, entity id) links among memories passing the filters, newest first."""
        ...

    def add_alias(self, scope: str, entity_id: int, alias: str) -> None: ...

    def link(self, scope: str, memory_id: str, mentions: Sequence[Mention], when: datetime) -> None:
        """Link a memory to the entities ``mentions`` name (made if new), in one write."""
        ...

    def total_memories(self, scopes: Sequence[str]) -> int: ...


class Purges(Protocol):
    """Hard deletes (``hivemem.write.purge``; the SQLite layout in ``store/purge.py``)."""

    def scope_ids(self, scope: str) -> list[str]: ...

    def derived(self, scope: str, memory_ids: Sequence[str]) -> list[str]: ...

    def copies(self, memory_ids: Sequence[str]) -> list[tuple[str, str]]:
        """(scope, id) of the promoted copies of ``memory_ids``, in any scope."""
        ...

    def plan(self, scope: str, memory_ids: Sequence[str], whole_scope: bool) -> dict[str, int]: ...

    def secure(self) -> AbstractContextManager[None]:
        """Freed content overwritten (SQLite's ``secure_delete``) within the block."""
        ...

    def erase(
        self,
        scope: str,
        memory_ids: Sequence[str],
        *,
        whole_scope: bool,
        target: str,
        by: str | None,
        now: datetime,
    ) -> dict[str, int]: ...

    def compact(self, vacuum: bool) -> dict[str, bool]: ...

    def audit(self, scope: str | None = None, limit: int = 50) -> list[dict[str, Any]]: ...


class Backend(Protocol):
    """Persistence of memories and their derived keyword index."""

    location: str
    vectors: VectorIndex
    entities: EntityIndex
    purges: Purges

    def atomic(self) -> AbstractContextManager[None]:
        """A write transaction (``BEGIN IMMEDIATE``); nested calls are savepoints."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """A read-only transaction: every read inside it sees one consistent state of the
        database while other writers go on (export uses it). No writes inside."""
        ...

    def close(self) -> None: ...

    # --- reads: ``scopes`` is every scope the caller may see
    def get(self, scopes: Sequence[str], memory_id: str) -> Memory | None: ...

    def get_many(self, scopes: Sequence[str], memory_ids: Sequence[str]) -> list[Memory]: ...

    def by_key(
        self, scopes: Sequence[str], key: str, as_of: datetime | None = None
    ) -> Memory | None:
        """The active memory with this key (or the one valid at ``as_of``); own scope first."""
        ...

    def versions_of_key(self, scopes: Sequence[str], key: str) -> list[Memory]: ...

    def successors(self, scopes: Sequence[str], memory_id: str) -> list[Memory]:
        """Memories whose ``supersedes_id`` is ``memory_id``."""
        ...

    def scopes_of(self, memory_ids: Sequence[str]) -> dict[str, str]:
        """The scope of each given id that exists, in any scope (import checks ids, which
        are unique across the whole database)."""
        ...

    def find_duplicate(self, scope: str, kind: str, content_hash: str) -> Memory | None:
        """An active, keyless memory of this kind with the same normalised content."""
        ...

    def list(
        self, scopes: Sequence[str], flt: ListFilter, limit: int, offset: int, now: datetime
    ) -> list[Memory]: ...

    def iter_all(self, scopes: Sequence[str] | None) -> Iterator[Memory]:
        """Every row, any status, oldest first (export). ``None`` means every scope."""
        ...

    def keyword_search(
        self,
        scopes: Sequence[str],
        query: Query,
        terms: Sequence[str],
        limit: int,
        now: datetime,
        *,
        newest_first: bool = False,
        time_limit_s: float | None = None,
    ) -> list[ChunkMatch]:
        """The ``limit`` best chunks by BM25 that pass scope and filters. With
        ``newest_first`` (terms so common that ranking every match would cost too much)
        they are the best among the newest matches instead. Past ``time_limit_s`` the
        search stops with ``InvalidInput`` naming the query (a caller's FTS5 syntax)."""
        ...

    def term_stats(
        self, terms: Sequence[str], scopes: Sequence[str] | None = None
    ) -> TermStats: ...

    def matched_terms(
        self, chunk_ids: Sequence[int], terms: Sequence[str]
    ) -> dict[int, set[str]]: ...

    def memory_chunks(self, memory_ids: Sequence[str]) -> list[ChunkMatch]:
        """Every chunk of these memories (``bm25`` 0), in memory and chunk order."""
        ...

    def stats(self, scopes: Sequence[str] | None, now: datetime) -> dict[str, Any]: ...

    def session_neighbours(
        self, scopes: Sequence[str], memory_ids: Sequence[str], query: Query, now: datetime
    ) -> dict[str, list[tuple[str, bool]]]:
        """For each episode among ``memory_ids``, the episodes just before and after it
        in its session (insertion order) that pass the query's filters, as (id, whether
        it comes after)."""
        ...

    def passing(
        self, scopes: Sequence[str], memory_ids: Sequence[str], query: Query, now: datetime
    ) -> set[str]:
        """Those of ``memory_ids`` that are visible in ``scopes`` and pass the query's
        filters (status, kind, type, tags, sessions, times, expiry)."""
        ...

    def sessions(self, scope: str) -> list[SessionInfo]: ...

    def scopes(self) -> list[str]: ...

    # --- writes: ``scope`` is the one scope the caller may write
    def insert(
        self, memory: Memory, chunks: Sequence[str], mentions: Sequence[Mention] = ()
    ) -> None:
        """Write the row, its chunks (keyword index, vector queue) and its entity links."""
        ...

    def set_status(
        self,
        scope: str,
        memory_id: str,
        status: Status,
        valid_until: datetime | None,
        now: datetime,
        updated_by: str | None,
    ) -> None: ...

    def update(self, scope: str, memory_id: str, now: datetime, **fields: Any) -> None:
        """Set plain fields (confidence, decay_rate, tags, attributes …) of one row."""
        ...

    def touch(self, scopes: Sequence[str], memory_ids: Sequence[str], now: datetime) -> None:
        """Count an access of each memory (best effort)."""
        ...

    def note_session(self, scope: str, session_id: str, when: datetime, episodes: int) -> bool:
        """Register a session on first sight; count its episodes; True when new."""
        ...

    # --- meta and health
    def meta(self) -> dict[str, str]: ...

    def set_meta(self, key: str, value: str) -> None: ...

    def schema_version(self) -> list[str]: ...

    def health(self) -> dict[str, Any]: ...

    def rebuild_keyword_index(self) -> None:
        """Re-derive the keyword index from the chunks."""
        ...

    def unchunked_ids(self) -> list[str]:
        """Ids of memories that have no chunks (so are missing from the keyword index)."""
        ...

    def rebuild_chunks(self, memory_ids: Sequence[str], size: int, overlap: int) -> int:
        """Re-derive chunks (and so the keyword index) of the given memories; returns how
        many memories were rebuilt. Never touches ``memories``."""
        ...
