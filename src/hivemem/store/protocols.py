"""The storage seam: narrow protocols, one concept each, that the services above the
store need from a database.

A backend is the ONE place that issues SQL. Every read takes the tuple of scopes the
caller may see, every write the one scope it may write, and the backend puts them in the
WHERE clause of every statement, so a handle of scope A can never touch a row of scope B,
whatever id it guesses. Write rules (``hivemem.write.rules``) and ranking
(``hivemem.retrieval.keyword``) sit above these protocols and stay the same for SQLite
and PostgreSQL.

The protocols (docs/architecture.md tabulates them): ``Transactions``, ``Memories``,
``KeywordIndex``, ``VectorIndex``, ``EntityIndex``, ``Sessions``, ``JobState`` /
``RunLog``, ``Purges``, ``Inspection``, ``VaultRows``, ``Tokens``, ``Health``.

A concrete backend may implement several on one class (``SQLiteBackend``: ``Memories``,
``Transactions``, ``KeywordIndex``, ``Sessions``, ``Health``); the ``Store`` holds it
privately and hands out the protocol objects by name (``store.memories``, ``store.vectors``
… ``store.health``). Only ``hivemem.store.factory`` names a backend class.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from ..providers.entities import Mention
from ..types import Entity, Kind, ListFilter, Memory, MemoryType, Query, Status
from .keyword_query import KeywordQuery
from .pool_reads import PoolReads


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


@dataclass(frozen=True, slots=True)
class PendingChunk:
    """A chunk waiting for its vector (the embedding queue)."""

    chunk_id: int
    scope: str
    text_hash: str
    text: str


@dataclass(frozen=True, slots=True)
class VectorMatch:
    """A memory's best chunk by cosine similarity to the query (in [-1, 1]), its vector."""

    chunk_id: int
    memory_id: str
    seq: int
    text: str
    similarity: float
    vector: Any = field(default=None, compare=False, repr=False)


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

    def pending(self, limit: int) -> list[PendingChunk]: ...

    def claim(self, limit: int, lease_s: float) -> list[PendingChunk]:
        """Up to ``limit`` queued chunks for this worker: where nodes share a database,
        claimed for ``lease_s`` s, no other node takes them (dead nodes' expire); else pending."""
        ...

    def release(self, chunk_ids: Sequence[int] | None = None) -> None:
        """Give back this store's claims (on ``chunk_ids``, or all): a batch it could
        not embed, or every claim when it closes, for another node to take at once."""
        ...

    def pending_count(self, scopes: Sequence[str] | None = None) -> int: ...

    def pending_in(self, scopes: Sequence[str], limit: int) -> list[PendingChunk]:
        """Up to ``limit`` queued chunks of ``scopes``, newest first, whoever claims them."""
        ...

    def has_pending(self, scopes: Sequence[str] | None = None) -> bool: ...
    def writer_free(self, wait_s: float = 0.0) -> bool: ...  # a write could start (RYW)

    def cached(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]: ...

    def upsert(self, model: str, items: Sequence[tuple[PendingChunk, bytes]]) -> int: ...

    def bulk(self, pending: int) -> AbstractContextManager[None]:
        """Held around a flush of ``pending`` queued chunks: a backend faster in one go
        does so (PostgreSQL: its HNSW index built once at the end); others change nothing."""
        ...

    def build_index(self) -> bool:
        """Build the KNN index a bulk load left missing (a crash); True when built."""
        ...

    def turn(self) -> AbstractContextManager[None]:
        """Held around one embedding batch (``pending`` → embed → ``upsert``): where the
        backend can, one process at a time, so processes sharing the store (``serve-http
        --workers``) do not embed the same queued chunks twice."""
        ...

    def search(
        self,
        scopes: Sequence[str],
        vector: Any,
        query: Query,
        fetch: int,
        now: datetime,
        model: str,
        pool: int = 64,
    ) -> list[VectorMatch]: ...

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

    def lane(
        self, scopes: Sequence[str], names: Sequence[str], query: Query, now: datetime,
        limit: int, alone: int | None = None,
    ) -> tuple[list[Entity], list[tuple[str, int]]]:  # fmt: skip
        """``lookup`` (no aliases) and ``linked`` of what it found, in as few reads as can
        be; ``alone``: the page instead of ``limit`` where one entity only is found."""
        ...

    def add_alias(self, scope: str, entity_id: int, alias: str) -> None: ...

    def link(self, scope: str, memory_id: str, mentions: Sequence[Mention], when: datetime) -> None:
        """Link a memory to the entities ``mentions`` name (made if new), in one write."""
        ...

    def total_memories(self, scopes: Sequence[str]) -> int: ...

    def describe(
        self,
        scope: str,
        entity_id: int,
        *,
        type: str | None = None,  # noqa: A002 - the domain's word
        summary: str | None = None,
        protected: bool | None = None,
    ) -> bool: ...  # False: the scope has that name with that type (entity_rows.py)


class Resolutions(Protocol):
    """The ``resolve`` job's reads, verdicts and entity merges
    (``hivemem.lifecycle.maintenance.resolve``; both backends: ``store/resolutions.py``)."""

    def entities(self, scope: str, types: tuple[str, ...]) -> list[Any]: ...

    def judged(self, scope: str) -> set[tuple[int, int]]: ...

    def example(self, entity_id: int, chars: int = 160) -> str: ...

    def record(
        self,
        scope: str,
        pair: tuple[int, int],
        same: bool,
        similarity: float,
        by: str | None,
        now: datetime,
    ) -> None: ...

    def merge(self, scope: str, keep: int, gone: int) -> bool: ...


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


class Transactions(Protocol):
    """The one transaction primitive."""

    location: str  # where the store lives (a path, or a URL without its password)

    def atomic(self) -> AbstractContextManager[None]:
        """A write transaction (``BEGIN IMMEDIATE``); nested calls are savepoints."""
        ...

    def snapshot(self) -> AbstractContextManager[None]:
        """A read-only transaction: every read inside it sees one consistent state of the
        database while other writers go on (export uses it). No writes inside."""
        ...

    def reads_in_parallel(self) -> bool:
        """Whether a search may run its lanes' reads on other threads now: a backend
        whose reads are round trips to a server (each thread its own connection), and
        the calling thread inside no transaction (whose view the other threads would
        not share)."""
        ...

    def close(self) -> None: ...


class Memories(Protocol):
    """The rows of ``memories``: reads take every scope the caller may see, writes the
    one scope it may write. Writes run inside ``Transactions.atomic``."""

    # --- reads
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
        """The scope of each given id that exists, in any scope (ids are database-wide)."""
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

    def passing(
        self, scopes: Sequence[str], memory_ids: Sequence[str], query: Query, now: datetime
    ) -> set[str]:
        """Those of ``memory_ids`` that are visible in ``scopes`` and pass the query's
        filters (status, kind, type, tags, sessions, times, expiry)."""
        ...

    def stats(self, scopes: Sequence[str] | None, now: datetime) -> dict[str, Any]: ...

    def scopes(self) -> builtins.list[str]: ...

    # --- writes
    def insert(
        self, memory: Memory, chunks: Sequence[str], mentions: Sequence[Mention] = ()
    ) -> None:
        """Write the row, its chunks (keyword index, vector queue) and its entity links."""
        ...

    def insert_many(self, items: Sequence[tuple[Memory, Sequence[str], Sequence[Mention]]]) -> None:
        """Inside a write: ``insert`` each of ``items`` (new rows, in order), in as few
        round trips as the backend can (PostgreSQL: one pipeline for the rows, one
        statement for all their chunks). Raises ``Conflict`` when any row is refused
        (its id exists, or its key has another active row): the caller rolls back."""
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

    def touch(
        self, scopes: Sequence[str], memory_ids: Sequence[str], now: datetime, count: int = 1
    ) -> None:
        """Count an access of each memory (best effort; may be queued and written later):
        ``access_count`` + ``count`` (1, or 0 to set only ``last_accessed``)."""
        ...

    def flush_access(self) -> int:
        """Write the access counts ``touch`` queued, now (before a job reads them); how
        many memories they touched (0 where ``touch`` writes at once)."""
        ...


class KeywordIndex(Protocol):
    """The keyword lane's index over chunks (FTS5 on SQLite, ``tsvector`` on PostgreSQL).
    Coverage scoring sits above it (``hivemem.retrieval.keyword``)."""

    def keyword_search(
        self,
        scopes: Sequence[str],
        query: Query,
        keywords: KeywordQuery,
        limit: int,
        now: datetime,
        *,
        time_limit_s: float | None = None,
    ) -> list[ChunkMatch]:
        """The ``limit`` best chunks by BM25 that ``keywords`` finds and pass scope and the
        filters of ``query`` (its text is not read: ``keywords`` is what is searched, in
        the backend's own query language, compiled from the neutral ``KeywordQuery``). With
        ``keywords.newest_first`` (terms so common that ranking every match would cost too
        much) they are the best among the newest matches instead. Past ``time_limit_s``
        the search stops with ``InvalidInput`` naming the query (a caller's syntax)."""
        ...

    def term_stats(
        self, terms: Sequence[str], scopes: Sequence[str] | None = None
    ) -> TermStats: ...

    def matched_terms(
        self,
        chunk_ids: Sequence[int],
        terms: Sequence[str],
        texts: Mapping[int, str] | None = None,
    ) -> dict[int, set[str]]:
        """Which of ``terms`` each chunk matches. ``texts``: the chunks' texts when the
        caller just read them (a chunk's text never changes; saves reading them again)."""
        ...

    def memory_chunks(self, memory_ids: Sequence[str]) -> list[ChunkMatch]:
        """Every chunk of these memories (``bm25`` 0), in memory and chunk order."""
        ...


class Sessions(Protocol):
    """Sessions seen (consolidation state) and the order of episodes within one."""

    def note_session(
        self, scope: str, session_id: str, when: datetime, last: datetime, episodes: int
    ) -> bool:
        """Count a session's episodes, timed ``when`` to ``last``; True when it is new."""
        ...

    def sessions(self, scope: str) -> list[SessionInfo]: ...

    def session_neighbours(
        self, scopes: Sequence[str], memory_ids: Sequence[str], query: Query, now: datetime
    ) -> dict[str, list[tuple[str, bool]]]:
        """For each episode among ``memory_ids``, the episodes just before and after it
        in its session (insertion order) that pass the query's filters, as (id, whether
        it comes after)."""
        ...


class Health(Protocol):
    """Meta, schema version, health, and rebuilds of what is derived from the rows."""

    location: str

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


@dataclass(frozen=True, slots=True)
class RunRecord:
    """One row of the run log: a run of one job over one scope (``None``: every scope)."""

    id: int
    job: str
    scope: str | None
    trigger: str
    started_at: datetime
    finished_at: datetime | None
    status: str  # running, ok, skipped, failed
    counts: Mapping[str, Any]
    error: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "job": self.job,
            "scope": self.scope,
            "trigger": self.trigger,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "status": self.status,
            "counts": dict(self.counts),
            "error": self.error,
        }


class RunLog(Protocol):
    """The maintenance jobs' run log (``maintenance_runs``)."""

    def start_run(self, job: str, scope: str | None, trigger: str, when: datetime) -> int: ...

    def finish_run(
        self,
        run_id: int,
        when: datetime,
        status: str,
        counts: Mapping[str, Any],
        error: str | None,
    ) -> None: ...

    def runs(
        self, job: str | None = None, scope: str | None = None, limit: int = 50
    ) -> list[RunRecord]: ...

    def last_started(self, job: str, trigger: str | None = None) -> datetime | None: ...


class JobState(Protocol):
    """What the maintenance jobs read and mark (``hivemem.lifecycle.maintenance``):
    sessions awaiting consolidation and their cursors, rows due for decay, expiry,
    categories, entity links and cross-references, and per-job marks that make every
    job resumable. The SQLite statements are ``hivemem.store.sqlite.maintenance``;
    PostgreSQL has a part of them (the rest raise ``NotOnPostgres``)."""

    def pending_sessions(self, scope: str, ended_before: datetime) -> list[Any]: ...

    def session(self, scope: str, session_id: str) -> Any | None: ...

    def open_sessions(self, scope: str, before: Sequence[str]) -> list[Any]: ...

    def busy_keys(self, scope: str, versions: int, limit: int = 10) -> list[tuple[str, int]]: ...

    def session_facts(self, scope: str, session_id: str, limit: int) -> list[Memory]: ...

    def session_state(self, scope: str, session_id: str) -> dict[str, Any]: ...

    def set_session_state(
        self,
        scope: str,
        session_id: str,
        state: Mapping[str, Any],
        consolidated_at: datetime | None = None,
    ) -> None: ...

    def episodes(
        self, scope: str, session_id: str, after: int, limit: int
    ) -> list[tuple[int, Memory]]: ...

    def active(
        self,
        scope: str,
        kinds: Sequence[Kind | str],
        *,
        after: str = "",
        limit: int = 500,
        created_before: datetime | None = None,
        types: Sequence[MemoryType | str] = (),
        protected: bool = True,
    ) -> list[Memory]: ...

    def since(self, scope: str, kind: Kind, since: datetime, limit: int) -> list[Memory]: ...

    def unmarked(
        self, scope: str, job: str, kinds: Sequence[Kind | str], limit: int
    ) -> list[Memory]: ...

    def mark(self, job: str, memory_ids: Sequence[str], when: datetime) -> None: ...

    def expired(self, scope: str, before: datetime, limit: int) -> list[Memory]: ...

    def count_expired(self, scope: str, now: datetime) -> int: ...

    def entity_counts(self, memory_ids: Sequence[str]) -> dict[str, int]: ...

    def entity_names(self, memory_ids: Sequence[str]) -> dict[str, set[str]]: ...

    def retire(
        self,
        scope: str,
        memory_ids: Sequence[str],
        status: Status,
        now: datetime,
        updated_by: str,
        *,
        drop_entities: bool = True,
    ) -> None: ...

    def link_entities(
        self, scope: str, memory_id: str, mentions: Sequence[Mention], when: datetime
    ) -> None: ...

    def retype_guessed(self, scope: str, key: str, kind: str) -> int: ...

    def set_category(
        self, scope: str, memory_id: str, category: str | None, confidence: float
    ) -> None: ...

    def note_categories(self, items: Sequence[tuple[str, float]]) -> None: ...

    def categories(self, scopes: Sequence[str], memory_ids: Sequence[str]) -> dict[str, float]: ...

    def uncategorized(self, scope: str, limit: int) -> list[Memory]: ...

    def decaying(
        self, scope: str, kinds: Sequence[Kind | str], after: str, limit: int
    ) -> list[Any]: ...

    def set_confidence(self, scope: str, memory_id: str, value: float) -> None:
        """A derived confidence: neither a version nor a change of author."""
        ...

    def set_decay(
        self, scope: str, memory_id: str, base: float, anchor: datetime, value: float, now: datetime
    ) -> None: ...

    def set_related(
        self, scope: str, memory_id: str, related: Sequence[tuple[str, float]]
    ) -> None: ...

    def related(
        self, scopes: Sequence[str], memory_id: str, limit: int
    ) -> list[tuple[Memory, float]]: ...


class Inspection(Protocol):
    """The web inspector's reads (pages, counts, growth, entities, sessions, lineage)."""

    def page(
        self,
        scopes: Sequence[str],
        flt: ListFilter,
        now: datetime,
        *,
        categories: Sequence[str] = (),
        before: tuple[str, str] | None = None,
        after: tuple[str, str] | None = None,
        stored_since: datetime | None = None,
        stored_until: datetime | None = None,
        limit: int = 50,
    ) -> list[Memory]: ...

    def count(self, scopes: Sequence[str], flt: ListFilter, now: datetime) -> int: ...

    def counts(self, scopes: Sequence[str]) -> list[tuple[str, str, str, str, int]]: ...

    def growth(self, scopes: Sequence[str]) -> list[tuple[str, int]]: ...

    def entities(
        self, scopes: Sequence[str], prefix: str | None, limit: int, offset: int
    ) -> list[Entity]: ...

    def sessions(self, scope: str, limit: int, offset: int) -> list[SessionInfo]: ...

    def session(self, scope: str, session_id: str) -> SessionInfo | None: ...

    def entities_of(self, scopes: Sequence[str], memory_id: str) -> list[Entity]: ...

    def drawn_from(
        self, scopes: Sequence[str], memory: Memory, limit: int = 50
    ) -> list[Memory]: ...


@dataclass(frozen=True, slots=True)
class VaultRow:
    scope: str
    key: str
    value: str  # JSON text
    is_secret: bool
    created_at: datetime
    updated_at: datetime


class VaultRows(Protocol):
    """The vault table (``hivemem.write.vault`` is the service over it)."""

    def get(self, scope: str, key: str) -> VaultRow | None: ...

    def list(self, scope: str, prefix: str | None = None) -> list[VaultRow]: ...

    def put(
        self, scope: str, key: str, value: str, is_secret: bool, now: datetime
    ) -> VaultRow | None:
        """Inside a write: set the value; return the row it replaced, if any."""
        ...

    def delete(self, scope: str, key: str) -> VaultRow | None: ...

    def count(self, scope: str) -> int: ...

    def secret_values(self) -> builtins.list[str]:
        """Every secret value of every scope (JSON text), for redaction."""
        ...

    def changed_elsewhere(self) -> bool:
        """Whether another connection changed the vault since the last answer."""
        ...

    def close(self) -> None:
        """Let go of what watching for changes holds (a listening connection)."""
        ...


class Tokens(Protocol):
    """The HTTP API's tokens (``api_tokens``; ``hivemem.store.tokens``)."""

    def create(self, name: str, scopes: Mapping[str, str], now: datetime) -> tuple[Any, str]: ...

    def get(self, token_id: str) -> Any: ...

    def list(self, *, include_revoked: bool = True) -> list[Any]: ...

    def find(self, id_or_name: str) -> Any: ...

    def revoke(self, id_or_name: str, now: datetime) -> Any: ...

    def verify(self, secret: str) -> Any | None: ...

    def touch(self, token_id: str, now: datetime) -> None: ...


class UiSessions(Protocol):
    """The web inspector's sign-in sessions (``ui_sessions``; ``hivemem.store.ui_sessions``):
    only a hash of each session id is stored; the token's grants are read live."""

    def create(
        self, now: datetime, *, token_id: str | None = None, start_key: str | None = None
    ) -> str: ...

    def get(
        self, session_id: str, now: datetime, *, start_key: str | None = None
    ) -> Any | None: ...

    def due(self, session: Any, now: datetime) -> bool: ...

    def touch(self, session: Any, now: datetime) -> None: ...

    def end(self, session_id: str) -> bool: ...

    def sweep(self, now: datetime) -> int: ...

    def count(self) -> int: ...


# The columns an export carries for the rows beside the memories (``BackupRows``).
VAULT_COLUMNS = ("scope", "key", "value", "is_secret", "created_at", "updated_at")
TOKEN_COLUMNS = (
    "id",
    "name",
    "token_hash",
    "scopes",
    "created_at",
    "revoked_at",
    "last_used_at",
)
SESSION_COLUMNS = ("scope", "session_id", "consolidated_at", "attributes")


class BackupRows(Protocol):
    """The rows an export carries beside the memories (vault entries, API token hashes,
    entity aliases, session state), and the store's table list (``hivemem.lifecycle.backup``).
    Each ``put_*`` runs inside the import's transaction and answers ``"imported"``,
    ``"present"`` or a conflict message."""

    def tables(self) -> list[str]: ...

    def vault(self, scopes: Sequence[str] | None) -> list[dict[str, Any]]: ...

    def tokens(self) -> list[dict[str, Any]]: ...

    def aliases(self, scopes: Sequence[str] | None) -> list[dict[str, Any]]: ...

    def sessions(self, scopes: Sequence[str] | None) -> list[dict[str, Any]]: ...

    def put_vault(self, row: Mapping[str, Any]) -> str: ...

    def put_token(self, row: Mapping[str, Any]) -> str: ...

    def put_alias(self, row: Mapping[str, Any], when: str) -> str: ...

    def put_session(self, row: Mapping[str, Any], when: str) -> str: ...


class Backend(Transactions, Memories, PoolReads, KeywordIndex, Sessions, Health, Protocol):
    """A whole backend, as ``hivemem.store.factory`` builds it: the protocols above on
    one object, with the narrower ones as attributes. Only the factory and the ``Store``
    see it whole; services get the protocol objects by name."""

    location: str

    @property
    def vectors(self) -> VectorIndex: ...
    @property
    def entities(self) -> EntityIndex: ...
    @property
    def purges(self) -> Purges: ...
    @property
    def maintenance(self) -> Any: ...  # JobState and RunLog
    @property
    def inspection(self) -> Inspection: ...
    @property
    def resolutions(self) -> Resolutions: ...
