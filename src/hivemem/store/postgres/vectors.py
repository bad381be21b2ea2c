"""The vector lane of the PostgreSQL store: pgvector, never a scan across tenants.

Layout. ``chunk_vectors (chunk_id, scope, embedding vector(d))`` is created when an
embedder is bound (its dimension is known then), with a b-tree on ``scope``; a scope
above ``EXACT_MAX`` vectors gets an HNSW index (cosine) of its own, partial on that
scope (``scope_indexes.py``). The float32 vectors are also kept in
``embedding_cache`` keyed by (text hash, embedder identity), as on SQLite, so nothing is
embedded twice and ``vectors()`` reads them back exactly.

Plans (a scope filter on HNSW is the known trap: pgvector filters *after* the graph
walk, and without an index on the tenant a filtered query is a sequential scan over
every tenant):

- a scope with at most ``EXACT_MAX`` vectors is searched exactly: its rows are read
  through the ``scope`` b-tree (the distance expression is written so that the HNSW
  index cannot serve it) and sorted by cosine distance — a few milliseconds, and exact;
- a bigger scope is searched through its own HNSW index (a graph of its vectors only,
  so no other tenant's data changes its answer: issue #25), ``ef_search`` following
  the pool size; results are re-ordered by exact distance.

While a big scope's index is missing (being built in the background, a bulk load
between its steps, one a crash interrupted) the scope is searched exactly, with
sequential scans disabled for the statement: its rows still come through its b-tree,
never a scan of every tenant. (Before, one HNSW index over every tenant served big
scopes, filtered after the walk: their answers depended on other tenants' vectors.)

Bulk loads (``bulk``): a flush of many queued chunks into an empty or nearly empty table
(``hivemem reindex``, ``copy`` into PostgreSQL, the bench's ``--bulk-load``, a big
import's flush) drops the HNSW index, writes the vectors by binary ``COPY`` in the usual
committed batches, and builds the big scopes' indexes once at the end (``build_index``) with
``maintenance_work_mem`` sized for the graph; the server's
``max_parallel_maintenance_workers`` add workers to the build. Each step commits on its
own, so a kill -9 anywhere leaves stored vectors stored, the rest queued, and at worst a
table without its index: ``doctor`` names it, ``doctor --repair`` (or the next bulk
flush) builds it.

Per scope as on SQLite: a handle that reads several scopes runs one search per scope.
No cache of vectors lives in the process, so every node sees every other node's writes.

The queue is a claim (migration ``0020_vector_claims``). ``claim`` takes a batch of
queued chunks for this node for ``embed_claim_s`` seconds, timed by the server's clock:
rows no node claims, rows whose claim expired (a node that died or stalls), and this
node's own (a batch it could not store). Rows another transaction holds are skipped,
never waited on. So nodes sharing one database embed different chunks, and a dead
node's chunks are taken over once its claims expire. A chunk is embedded twice only
when a claim expires while its node is still embedding it (a batch slower than
``embed_claim_s``); ``upsert`` stores whichever vector comes first, once: its queue row
is deleted by the first, and the second finds it gone.

Locks, against deadlocks with purges and re-chunks. A purge deletes chunks, and the
cascade then deletes their queue rows and vectors. ``upsert`` therefore first takes
``FOR KEY SHARE`` on its chunks, in id order, ``SKIP LOCKED``: a chunk a purge is
deleting is left out (its vector would cascade away anyway), and a chunk this node holds
cannot be deleted until the upsert commits. Only then does it delete those chunks' queue
rows and insert their vectors, rows no purge can be holding. The worker never waits on a
row a purge holds; a purge may wait for one short upsert. (Before, the worker deleted
the queue rows first and then needed the chunk rows for the vectors' foreign key, while
a purge held the chunk rows and needed the queue rows: a deadlock, ``DeadlockDetected``.)
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import psycopg

from ...errors import StoreError
from ...types import Query
from ..protocols import PendingChunk, VectorMatch
from . import int_array
from .migrations import SCHEMA_LOCK
from .scope_indexes import ScopeIndexes, scope_literal

log = logging.getLogger("hivemem.store.postgres")

if TYPE_CHECKING:  # pragma: no cover
    from .database import PostgresDatabase

IDENTITY_KEY = "embedding_identity"
TABLE = "chunk_vectors"
# Vectors in a scope up to which an exact scan is used. Measured at 10k vectors of 384
# dimensions (2 loaded cores): the exact scan costs ~3.5 µs a vector (35 ms), HNSW with
# ef_search 64 ~4-7 ms, so they cross near 2,000.
EXACT_MAX = 2_000
_KNN_MAX = 4096
# ef_search per row asked of a scope's own HNSW index. Measured on a 20,000-vector scope
# beside 50 of 2,000 (384 dimensions, hash embedder, k = 64): recall@10 against exact
# 0.936 at ef 64, 0.978 at 128, 0.994 at 256, 0.999 at 512 (docs/postgres.md).
_EF_PER_ROW = 4
_COUNT_TTL = 30.0  # seconds a scope's vector count is trusted for the plan choice
_BOUND_TTL = 5.0  # seconds a search trusts the recorded identity
_VECTORS_MAX = 10_000  # chunk vectors kept for MMR (~15 MB at 384 dimensions)
_PENDING_TTL = 0.5  # seconds a search's reading of the queue answers has_pending
# Chunks of the searched scopes waiting for vectors (issue 25: not of every scope, or a
# search answer would say whether another tenant just wrote).
_PENDING_SQL = (
    "SELECT EXISTS (SELECT 1 FROM vector_queue q JOIN chunks c ON c.id = q.chunk_id "
    "WHERE c.scope = ANY(%s))"
)
# A flush of at least this many queued chunks into a table holding less than a tenth as
# many vectors drops the HNSW index and builds it once at the end. At 10k vectors the
# build is ~7x faster than growing the graph per insert; at 1M, hours against minutes.
BULK_MIN = 10_000
INDEX = f"{TABLE}_hnsw"  # the one index over every scope, up to migration 0022
# maintenance_work_mem for a build: the graph of n vectors of d dimensions takes about
# n * (4 d + _GRAPH_BYTES) bytes (vector, neighbour lists at m = 16, element header);
# pgvector builds many times slower once it outgrows it. Never above _BUILD_MEM_MAX,
# never below what the server is set to.
_GRAPH_BYTES = 700
_BUILD_MEM_MAX = 4 << 30
# No sequential scan for the exact plan: a scope's rows come through its b-tree even
# when the scope is most of the table (the planner's choice at 1M rows of one scope).
_EXACT_SETTINGS = "SELECT set_config('enable_seqscan', 'off', true)"
# The scope's own graph holds only its rows: no filter to scan past (iterative scans
# stay on for the memory filters of the outer query, which can drop rows).
_HNSW_SETTINGS = (
    "SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), "
    "set_config('hnsw.ef_search', %s, true)"
)


def register_types(conn: Any) -> None:
    """Pool ``configure`` hook: pgvector's types on every new connection."""
    from pgvector.psycopg import register_vector

    register_vector(conn)


@dataclass(slots=True)
class _Count:
    value: int
    at: float


class PgVectorIndex:
    """Vector storage and KNN of one PostgreSQL store."""

    unavailable: str | None = None
    exact_scan: str | None = None  # HNSW serves big scopes; small ones are exact by design

    def __init__(self, backend: PostgresDatabase) -> None:
        self._db = backend
        self._counts: dict[str, _Count] = {}
        self._bound_cache: tuple[str | None, float] | None = None
        self.scope_indexes = ScopeIndexes(backend, self._build_memory)
        self._bulk = False  # inside ``bulk``: upserts go by binary COPY
        self.last_build: dict[str, Any] | None = None  # the figures of this handle's last build
        self._lock = threading.Lock()
        # (model, chunk id) -> vector: a chunk's text never changes and the cache keeps
        # one vector per (text, model) (``ON CONFLICT DO NOTHING``), so an entry is never
        # stale on any node and needs no invalidation.
        self._vectors: dict[tuple[str, int], np.ndarray] = {}
        # Whether the queue held work when this thread's last search ran (read in the
        # same round trip): the pipeline asks ``has_pending`` right after searching.
        self._pending_seen = threading.local()
        # Who holds a claim (readable in the table: host, process, this store).
        self.node = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    # ------------------------------------------------------------------ identity

    def recorded_identity(self) -> str | None:
        return self._db.meta().get(IDENTITY_KEY)

    def _bound(self) -> str | None:
        """The recorded identity when the vector table exists, else None; cached
        ``_BOUND_TTL`` seconds for searches (a re-index elsewhere is seen that late by
        searches; ``upsert`` re-checks inside its transaction, so nothing is written
        under a stale identity)."""
        now = time.monotonic()
        with self._lock:
            cached = self._bound_cache
        if cached is not None and now - cached[1] < _BOUND_TTL:
            return cached[0]
        value = self.recorded_identity() if self._table_exists() else None
        with self._lock:
            self._bound_cache = (value, now)
        return value

    def _indexable(self) -> bool:
        """Whether the vector column can have HNSW indexes (pgvector: <= 2,000 dims)."""
        d = self._dimension()
        return d is not None and 0 < d <= 2000

    def _dimension(self) -> int | None:
        """The vector column's dimension (its type modifier), None without the table."""
        if not self._table_exists():
            return None
        rows = self._db._q(
            "SELECT atttypmod FROM pg_attribute WHERE attrelid = %s::regclass "
            "AND attname = 'embedding'",
            [TABLE],
        )
        return int(rows[0][0]) if rows else None

    def index_missing(self) -> bool:
        """Whether a scope above ``EXACT_MAX`` vectors has no valid HNSW index of its
        own (a bulk load between its steps, one a crash interrupted, one still being
        built: doctor's finding; the scope is searched exactly meanwhile)."""
        return self._indexable() and bool(self.scope_indexes.missing(EXACT_MAX))

    def _table_exists(self) -> bool:
        return bool(self._db._q("SELECT to_regclass(%s) IS NOT NULL", [TABLE])[0][0])

    def bind(self, identity: str, dimension: int) -> str | None:
        with self._db.atomic():
            self._db._x("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK])
            recorded = self.recorded_identity()
            if recorded is not None and recorded != identity:
                return recorded
            # Trigger: the table exists (made by the owner, or another node). Why: a
            # node whose user has no CREATE right on the schema must still open it
            # (CREATE … IF NOT EXISTS checks the right first). Outcome: no DDL.
            if not self._table_exists():
                self._create_as_allowed(dimension)
            if recorded is None:
                self._db.set_meta(IDENTITY_KEY, identity)
        with self._lock:
            self._bound_cache = None
        return None

    def reset(self, identity: str, dimension: int) -> int:
        with self.scope_indexes.quiet(), self._db.atomic():
            self._db._x("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK])
            self._db._x(f"DROP TABLE IF EXISTS {TABLE}")
            self._create(dimension)
            self._db._x(
                "INSERT INTO vector_queue (chunk_id) SELECT id FROM chunks ON CONFLICT DO NOTHING"
            )
            self._db.set_meta(IDENTITY_KEY, identity)
        with self._lock:
            self._counts.clear()
            self._vectors.clear()
            self._bound_cache = None
        self.scope_indexes.forget()
        return self.pending_count()

    def _create_as_allowed(self, dimension: int) -> None:
        try:
            self._db._flush()
            with self._db._local.conn.transaction():  # a savepoint: the error is ours
                self._create(dimension)
        except psycopg.errors.InsufficientPrivilege:
            raise StoreError(
                f"the vector table of {self._db.location} does not exist yet and this user "
                "may not create it: open the store once with this embedder as the "
                "database's owner (or GRANT CREATE ON SCHEMA public to this user)"
            ) from None

    @contextmanager
    def bulk(self, pending: int) -> Iterator[None]:
        """Around a flush of ``pending`` queued chunks (see the module docstring). When
        at least ``BULK_MIN`` come and the table holds less than a tenth as many, the
        HNSW indexes are dropped (committed), the upserts inside go by binary COPY, and
        the big scopes' indexes are built once at the end, even when the body failed (an
        interrupt (``KeyboardInterrupt``) leaves them to ``doctor --repair``). Otherwise
        nothing changes. Meanwhile searches scan each scope exactly."""
        if pending < BULK_MIN or self._bulk:
            yield
            return
        with self.scope_indexes.quiet(), self._db.atomic():
            self._db._x("SELECT pg_advisory_xact_lock(%s)", [SCHEMA_LOCK])
            if not self._table_exists():
                big = False
            else:
                held = self._db._x(f"SELECT COUNT(*) FROM {TABLE}").fetchone()[0]
                big = held * 10 < pending
            if big:
                self._db._x(f"DROP INDEX IF EXISTS {INDEX}")
                dropped = self.scope_indexes.drop_all()
        if not big:
            yield
            return
        log.info("bulk load of %s vectors: %s HNSW indexes dropped", pending, len(dropped))
        self._bulk = True
        try:
            yield
        except Exception:
            self._bulk = False
            self.build_index()  # the vectors stored so far are searchable through them
            raise
        finally:
            self._bulk = False
        self.build_index()

    def build_index(self) -> bool:
        """Build the HNSW index of every scope above ``EXACT_MAX`` vectors that has no
        valid one (``scope_indexes.py``), in the foreground; True when it built one.
        ``last_build`` sums their figures."""
        if not self._indexable():
            return False
        built = [
            b for s in self.scope_indexes.missing(EXACT_MAX) if (b := self.scope_indexes.build(s))
        ]
        if not built:
            return False
        self.last_build = {
            "vectors": sum(b["vectors"] for b in built),
            "seconds": round(sum(b["seconds"] for b in built), 1),
            "maintenance_work_mem_mb": max(b["maintenance_work_mem_mb"] for b in built),
            "indexes": len(built),
        }
        return True

    def _build_memory(self, rows: int) -> int:
        """``maintenance_work_mem`` (bytes) for a graph of ``rows`` vectors: what it
        takes, never above ``_BUILD_MEM_MAX``, never below the server's setting."""
        d = self._dimension() or 0
        server = int(
            self._db._q(
                "SELECT setting::bigint * 1024 FROM pg_settings WHERE name = 'maintenance_work_mem'"
            )[0][0]
        )
        return max(server, min(_BUILD_MEM_MAX, int(rows * (4 * d + _GRAPH_BYTES) * 1.2)))

    def _create(self, dimension: int) -> None:
        """The vector table and its scope b-tree; HNSW indexes come per big scope."""
        d = int(dimension)
        self._db._x(
            f"CREATE TABLE IF NOT EXISTS {TABLE} ("
            " chunk_id BIGINT PRIMARY KEY REFERENCES chunks (id) ON DELETE CASCADE,"
            f' scope TEXT COLLATE "C" NOT NULL, embedding vector({d}) NOT NULL)'
        )
        self._db._x(f"CREATE INDEX IF NOT EXISTS {TABLE}_scope ON {TABLE} (scope)")

    # ------------------------------------------------------------------ pending work

    def pending(self, limit: int) -> list[PendingChunk]:
        rows = self._db._q(
            "SELECT q.chunk_id, c.scope, c.text_hash, c.text FROM vector_queue q "
            "JOIN chunks c ON c.id = q.chunk_id ORDER BY q.chunk_id LIMIT %s",
            [limit],
        )
        return [PendingChunk(*r) for r in rows]

    def claim(self, limit: int, lease_s: float) -> list[PendingChunk]:
        """Up to ``limit`` queued chunks, claimed by this node for ``lease_s`` seconds
        (see the module's docstring). One statement, a transaction of its own."""
        rows = self._db._q(
            "WITH free AS (SELECT q.chunk_id FROM vector_queue q WHERE q.claimed_until IS NULL "
            "OR q.claimed_until < clock_timestamp() OR q.claimed_by = %(node)s "
            "ORDER BY q.chunk_id LIMIT %(limit)s FOR UPDATE SKIP LOCKED), "
            "taken AS (UPDATE vector_queue q SET claimed_by = %(node)s, "
            "claimed_until = clock_timestamp() + make_interval(secs => %(lease)s) "
            "FROM free WHERE q.chunk_id = free.chunk_id RETURNING q.chunk_id) "
            "SELECT c.id, c.scope, c.text_hash, c.text FROM taken "
            "JOIN chunks c ON c.id = taken.chunk_id ORDER BY c.id",
            {"node": self.node, "limit": int(limit), "lease": float(lease_s)},
        )
        return [PendingChunk(*r) for r in rows]

    def release(self, chunk_ids: Sequence[int] | None = None) -> None:
        """This node's claims (on ``chunk_ids``, or all) given back: a batch it could
        not embed (an endpoint down), or all when the store closes."""
        where = "claimed_by = %s"
        params: list[Any] = [self.node]
        if chunk_ids is not None:
            where += " AND chunk_id = ANY(%s)"
            params.append(list(chunk_ids))
        self._db._q(
            f"UPDATE vector_queue SET claimed_by = NULL, claimed_until = NULL WHERE {where}",
            params,
        )

    def pending_count(self, scopes: Sequence[str] | None = None) -> int:
        if scopes is None:
            return int(self._db._q("SELECT COUNT(*) FROM vector_queue")[0][0])
        return int(
            self._db._q(
                "SELECT COUNT(*) FROM vector_queue q JOIN chunks c ON c.id = q.chunk_id "
                "WHERE c.scope = ANY(%s)",
                [list(scopes)],
            )[0][0]
        )

    def pending_in(self, scopes: Sequence[str], limit: int) -> list[PendingChunk]:
        """Newest first, claimed or not: a search embeds its own scopes' chunks even
        while another node's worker holds them (``upsert`` stores whichever vector comes
        first, once). Driven by the queue (small while the workers keep up)."""
        if not scopes or limit <= 0:
            return []
        rows = self._db._q(
            "SELECT q.chunk_id, c.scope, c.text_hash, c.text FROM vector_queue q "
            "JOIN chunks c ON c.id = q.chunk_id WHERE c.scope = ANY(%s) "
            "ORDER BY q.chunk_id DESC LIMIT %s",
            [list(scopes), int(limit)],
        )
        return [PendingChunk(*r) for r in rows]

    def writer_free(self, wait_s: float = 0.0) -> bool:
        """Always: vectors go in by row, beside any other transaction (no store lock)."""
        return True

    def has_pending(self, scopes: Sequence[str] | None = None) -> bool:
        """Whether chunks (of ``scopes``; None: of any scope) wait for vectors. Right
        after a search of these scopes on this thread (within ``_PENDING_TTL``), the
        answer read with it, once; else a read."""
        seen = getattr(self._pending_seen, "value", None)
        self._pending_seen.value = None
        if scopes is None:
            return bool(self._db._q("SELECT 1 FROM vector_queue LIMIT 1"))
        if (
            seen is not None
            and time.monotonic() - seen[1] < _PENDING_TTL
            and seen[2] == tuple(sorted(set(scopes)))
        ):
            return bool(seen[0])
        return bool(self._db._q(_PENDING_SQL, [list(scopes)])[0][0])

    def cached(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        unique = list(dict.fromkeys(hashes))
        if not unique:
            return {}
        rows = self._db._q(
            "SELECT text_hash, vector FROM embedding_cache "
            "WHERE model = %s AND text_hash = ANY(%s)",
            [model, unique],
        )
        return {r[0]: bytes(r[1]) for r in rows}

    @contextmanager
    def turn(self) -> Iterator[None]:
        """No lock across nodes: ``claim`` shares the queue out between them."""
        yield

    def upsert(self, model: str, items: Sequence[tuple[PendingChunk, bytes]]) -> int:
        """Store the vectors of queued chunks; chunks no longer queued (deleted, or done
        by another node) and a model that is no longer the store's are skipped."""

        def run() -> int:
            with self._db.atomic():
                # The identity and the table in one round trip (two before, per batch).
                recorded, exists = self._db._x(
                    "SELECT (SELECT value FROM meta WHERE key = %s), to_regclass(%s) IS NOT NULL",
                    [IDENTITY_KEY, TABLE],
                ).fetchone()
                if recorded != model or not exists:
                    return 0
                wanted = {chunk.chunk_id: (chunk, blob) for chunk, blob in items}
                # The chunks first, in id order, skipping those being deleted (the
                # module's docstring: never wait on a row a purge holds).
                held = self._db._x(
                    "SELECT id FROM chunks WHERE id = ANY(%s) ORDER BY id "
                    "FOR KEY SHARE SKIP LOCKED",
                    [list(wanted)],
                ).fetchall()
                if not held:
                    return 0
                done = self._db._x(
                    "DELETE FROM vector_queue WHERE chunk_id IN (SELECT chunk_id FROM "
                    "vector_queue WHERE chunk_id = ANY(%s) ORDER BY chunk_id FOR UPDATE) "
                    "RETURNING chunk_id",
                    [[r[0] for r in held]],
                ).fetchall()
                kept = [wanted[r[0]] for r in sorted(done)]
                if not kept:
                    return 0
                cache = sorted({c.text_hash: b for c, b in kept}.items())  # one lock order
                self._db._x(
                    "INSERT INTO embedding_cache (text_hash, model, vector) "
                    "SELECT h, %s, v FROM unnest(%s::text[], %s::bytea[]) AS t(h, v) "
                    "ON CONFLICT DO NOTHING",
                    [model, [h for h, _ in cache], [b for _, b in cache]],
                )
                conn = self._db._writer()
                self._db._flush()
                if self._bulk:
                    self._copy(conn, kept)
                    return len(kept)
                with conn.cursor() as cur:
                    cur.executemany(
                        f"INSERT INTO {TABLE} (chunk_id, scope, embedding) VALUES (%s, %s, %s) "
                        "ON CONFLICT (chunk_id) DO UPDATE SET embedding = excluded.embedding",
                        [
                            (c.chunk_id, c.scope, np.frombuffer(b, dtype=np.float32))
                            for c, b in kept
                        ],
                    )
            return len(kept)

        stored = self._db._retrying(run)
        if stored and not self._bulk and len(items[0][1]) // 4 <= 2000:
            for scope in dict.fromkeys(chunk.scope for chunk, _ in items):
                # A scope grown past EXACT_MAX gets its own index (counts cached
                # _COUNT_TTL seconds: seen that late; searches are exact meanwhile).
                if self.scope_count(scope) > EXACT_MAX and not self.scope_indexes.has(scope):
                    self.scope_indexes.want(scope)
        return stored

    @staticmethod
    def _copy(conn: Any, kept: Sequence[tuple[PendingChunk, bytes]]) -> None:
        """The vectors by binary COPY (a bulk load): a chunk queued again drops its old
        vector first, so the COPY meets no conflict."""
        with conn.cursor() as cur:
            cur.execute(
                f"DELETE FROM {TABLE} WHERE chunk_id = ANY(%s)", [[c.chunk_id for c, _ in kept]]
            )
            sql = f"COPY {TABLE} (chunk_id, scope, embedding) FROM STDIN WITH (FORMAT BINARY)"
            with cur.copy(sql) as copy:
                copy.set_types(["int8", "text", "vector"])
                for c, b in kept:
                    copy.write_row((c.chunk_id, c.scope, np.frombuffer(b, dtype=np.float32)))

    def delete_chunks(self, chunk_ids: Sequence[int]) -> None:
        """Inside a write: drop the vectors of chunks that stay (a retired memory keeps
        its chunks, readable by id, but leaves the vector lane). Deleted chunks take
        their vectors with them (``ON DELETE CASCADE``)."""
        if chunk_ids and self._table_exists():
            self._db._x(f"DELETE FROM {TABLE} WHERE chunk_id = ANY(%s)", [list(chunk_ids)])

    def count(self) -> int:
        if not self._table_exists():
            return 0
        return int(self._db._q(f"SELECT COUNT(*) FROM {TABLE}")[0][0])

    def scope_count(self, scope: str) -> int:
        """Vectors of ``scope``, counted up to one more than the plan choice and the KNN
        widening need (``EXACT_MAX``, ``_KNN_MAX``): a count of a scope of 1M vectors
        read the whole scope's b-tree (~130 ms at 1M). Cached ``_COUNT_TTL`` seconds."""
        now = time.monotonic()
        with self._lock:
            cached = self._counts.get(scope)
        if cached is not None and now - cached.at < _COUNT_TTL:
            return cached.value
        cap = max(EXACT_MAX, _KNN_MAX) + 1
        value = int(
            self._db._q(
                f"SELECT COUNT(*) FROM (SELECT 1 FROM {TABLE} WHERE scope = %s LIMIT %s) s",
                [scope, cap],
            )[0][0]
        )
        with self._lock:
            self._counts[scope] = _Count(value, now)
        return value

    # ------------------------------------------------------------------ search

    def plan_sql(self, scope: str, big: bool, filters: str) -> str:
        """The KNN statement of ``scope``: parameters (query vector, scope, k, model,
        filter values…). ``big`` picks the scope's own HNSW index (its predicate, the
        scope, written as the literal the index was made with), else an exact scan."""
        if big:
            nearest = (
                f"SELECT v.chunk_id, v.embedding <=> %(q)s AS d FROM {TABLE} v "
                f"WHERE v.scope = {scope_literal(scope)} "
                "ORDER BY v.embedding <=> %(q)s LIMIT %(k)s"
            )
        else:
            # ``+ 0`` keeps the HNSW index out: the scope's rows come through its b-tree.
            nearest = (
                f"SELECT v.chunk_id, (v.embedding <=> %(q)s) + 0 AS d FROM {TABLE} v "
                "WHERE v.scope = %(scope)s ORDER BY 2 LIMIT %(k)s"
            )
        # Each nearest row's chunk and memory are probed by primary key (``OFFSET 0``
        # keeps the lateral subquery from being flattened into a join the planner may
        # hash): as a join it read every chunk of the table through ``chunks_pkey`` to
        # hash 64 of them (0.5 ms of a 2 ms statement at 2,400 chunks, growing with the
        # table; more under the statistics of a freshly loaded one).
        return (
            f"WITH nn AS MATERIALIZED ({nearest}) "
            "SELECT x.id, x.memory_id, x.seq, x.text, 1 - nn.d FROM nn CROSS JOIN LATERAL ("
            "SELECT c.id, c.memory_id, c.seq, c.text FROM chunks c "
            "JOIN memories m ON m.id = c.memory_id "
            f"WHERE c.id = nn.chunk_id AND {filters} OFFSET 0) x ORDER BY nn.d, x.id"
        )

    def search(
        self,
        scopes: Sequence[str],
        vector: np.ndarray,
        query: Query,
        fetch: int,
        now: datetime,
        model: str,
        pool: int = 64,
    ) -> list[VectorMatch]:
        """Up to ``fetch`` memories by their best chunk's cosine to ``vector``, best
        first, among those that pass scope and filters (the contract of SQLite's)."""
        if self._bound() != model:
            return []
        q = np.asarray(vector, dtype=np.float32)
        where, extra = self._db._filter_sql(query, now)
        named = {f"f{i}": value for i, value in enumerate(extra)}
        filters = " AND ".join(["m.scope = %(scope)s", *where])
        for i in range(len(extra)):
            filters = filters.replace("%s", f"%(f{i})s", 1)
        rows: list[Any] = []
        for scope in dict.fromkeys(scopes):
            count = self.scope_count(scope)
            big = count > EXACT_MAX and q.shape[-1] <= 2000 and self.scope_indexes.has(scope)
            if count > EXACT_MAX and not big and q.shape[-1] <= 2000:
                self.scope_indexes.want(scope)  # exact until it is built
            sql = self.plan_sql(scope, big, filters)
            k = max(pool, fetch * 2)
            while True:
                params = {"q": q, "scope": scope, "k": k, **named}
                statements = [(sql, params), (_PENDING_SQL, [list(scopes)])]
                if big:  # iterative scans, ef_search following k: all in one round trip
                    ef = str(max(40, min(_EF_PER_ROW * k, 1000)))
                    statements.insert(0, (_HNSW_SETTINGS, [ef]))
                else:
                    statements.insert(0, (_EXACT_SETTINGS, ()))
                *_, passed, pending = self._db._q_batch(statements)
                self._pending_seen.value = (
                    bool(pending[0][0]),
                    time.monotonic(),
                    tuple(sorted(set(scopes))),
                )
                memories = {r[1] for r in passed}
                if len(memories) >= fetch or k >= _KNN_MAX or k >= count:
                    rows.extend(passed)
                    break
                k = min(k * 4, _KNN_MAX)
        best: dict[str, VectorMatch] = {}
        for r in rows:
            current = best.get(r[1])
            if current is None or r[4] > current.similarity:
                best[r[1]] = VectorMatch(r[0], r[1], r[2], r[3], float(r[4]))
        return sorted(best.values(), key=lambda m: (-m.similarity, m.chunk_id))[:fetch]

    def vectors(self, model: str, chunk_ids: Sequence[int]) -> dict[int, np.ndarray]:
        if not chunk_ids:
            return {}
        out = self.cached_vectors(model, chunk_ids)
        missing = [c for c in chunk_ids if c not in out]
        if missing:
            rows = self._db._q(
                "SELECT c.id, e.vector FROM chunks c JOIN embedding_cache e "
                "ON e.text_hash = c.text_hash AND e.model = %s WHERE c.id = ANY(%s::bigint[])",
                [model, int_array(missing)],
            )
            out.update(self.remember(model, {r[0]: r[1] for r in rows}))
        return out

    def cached_vectors(self, model: str, chunk_ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The vectors of ``chunk_ids`` this index keeps in memory (no read)."""
        with self._lock:
            return {c: self._vectors[(model, c)] for c in chunk_ids if (model, c) in self._vectors}

    def remember(self, model: str, read: Mapping[int, bytes]) -> dict[int, np.ndarray]:
        """Vectors read from ``embedding_cache`` (chunk id -> its bytes) as arrays, kept
        in memory for the next searches (a chunk's text, so its vector, never changes)."""
        out = {c: np.frombuffer(bytes(v), dtype=np.float32) for c, v in read.items()}
        with self._lock:
            if len(self._vectors) + len(out) > _VECTORS_MAX:
                self._vectors.clear()
            self._vectors.update(((model, c), v) for c, v in out.items())
        return out
