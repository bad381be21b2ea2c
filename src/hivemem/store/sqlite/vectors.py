"""The vector index of the SQLite store: chunk vectors in a sqlite-vec ``vec0`` table.

Layout. ``chunk_vectors`` (created at run time: its dimension is the recorded embedder's)
holds one *binary-quantised* vector per chunk, with the chunk's scope as a partition key,
so a KNN query reads one scope's vectors only. The float32 vectors live in
``embedding_cache`` keyed by (sha256 of the normalised chunk text, embedder identity):
nothing is embedded twice, and the KNN's candidates are re-scored by exact cosine from
there (each read by the row id the scope's in-memory copy noted for its chunk: ``_rows``).
Measured at 100k 384-d vectors in one scope: brute-force KNN costs 52 ms in float32;
as bit vectors 11 ms for k = 50, 19 ms for k = 100, 37 ms for k = 200 (the cost grows
with k), and re-scoring the pool exactly costs ~4 ms for 200 rows.

Identity. ``meta.embedding_identity`` (``model:dimension``) names the embedder whose
vectors the table holds. ``bind`` refuses another identity (the caller disables the
vector lane and says why), ``reset`` drops every vector and queues every chunk again for
the new one (``hivemem reindex``). Vectors of two embedders never share the table, and
``upsert`` re-checks the identity inside its transaction, so a worker that embedded with
an old model while another process re-indexed writes nothing.

KNN. sqlite-vec's own KNN over bit vectors costs 6 ms for k = 10 and 15 ms for k = 64 at
100k vectors in one scope (its cost grows with k); the same Hamming scan in numpy over
an in-memory copy of a scope's bit vectors costs ~4 ms whatever k is. So each scope's
bit vectors are read once into memory (``_ScopeBits``) and kept current through
``vector_log``, an append-only list of the chunks each ``upsert`` stored: a search reads
the log's newest sequence number (one indexed lookup) and loads only what is newer.
``reset`` bumps ``meta.vector_epoch``, which drops every cached scope. A deleted chunk
lingers in the cache until the scope is reloaded, but never in results: every candidate
is re-read with its chunk and filters before it is scored.

Exact scan. Without sqlite-vec (not installed, or a SQLite that cannot load extensions)
the lane does not switch off: vectors are still computed and kept in ``embedding_cache``
(``vector_log`` lists the chunks done), and a search scans the scope's float vectors
exactly in numpy — the brute-force cosine the Agent Swarm seed falls back to. It is
exact (no binary pre-selection), and costs a read of every vector of the scope per query,
so it suits stores up to some tens of thousands of chunks; ``hivemem doctor`` says which
mode a store runs in. When sqlite-vec comes back, ``bind`` queues the chunks the vec0
table lacks (their vectors come from the cache: nothing is embedded twice).

Pending work is the ``vector_queue`` table, filled by a trigger in the transaction that
writes a chunk: a crash between a write and its embedding leaves the chunk queued.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ...types import Query
from ..protocols import PendingChunk as PendingChunk
from ..protocols import VectorMatch as VectorMatch
from ..rows import placeholders, to_blob
from .database import sqlite_driver

if TYPE_CHECKING:  # pragma: no cover
    from .database import SQLiteStore

IDENTITY_KEY = "embedding_identity"
EPOCH_KEY = "vector_epoch"
MODE_KEY = "vector_mode"  # "exact" once vectors were stored without sqlite-vec
TABLE = "chunk_vectors"
LOG = "vector_log"
_KNN_MAX = 4096  # widest KNN page per scope before the lane settles for what passed


def load_extension(conn: Any) -> str | None:
    """Load sqlite-vec into ``conn``; return why it could not be loaded, or None."""
    try:
        import sqlite_vec
    except ImportError:
        return "sqlite-vec is not installed (pip install sqlite-vec)"
    try:
        conn.enable_load_extension(True)
        try:
            sqlite_vec.load(conn)
        finally:
            conn.enable_load_extension(False)
    except Exception as exc:  # the driver's own error types
        return f"cannot load sqlite-vec into this SQLite: {exc}"
    return None


def bit_dimension(dimension: int) -> int:
    """The bit vectors' size: the dimension rounded up to a whole byte (sqlite-vec's
    ``bit[N]`` and ``vec_quantize_binary`` need a multiple of 8). Found on main: an
    embedder of 100 or 12 dimensions failed every batch; its vectors are now padded with
    zeros, which quantise to 0 bits in every vector alike and so add no distance."""
    return -(-int(dimension) // 8) * 8


def bit_blob(blob: bytes) -> bytes:
    """A float32 vector blob padded with zeros to ``bit_dimension`` values."""
    pad = (-(len(blob) // 4)) % 8
    return blob + b"\0" * (4 * pad) if pad else blob


@dataclass(slots=True)
class _ScopeBits:
    """One scope's bit vectors in memory: ``ids[i]`` is the chunk of column ``i`` of
    ``words``, which holds the vectors as 64-bit words, one row per word position
    (column-major: the Hamming scan then runs over long contiguous rows, ~6x faster at
    100k than row-major)."""

    ids: np.ndarray  # int64, (n,)
    words: np.ndarray  # uint64, (dimension / 64, n)
    seq: int  # the vector_log sequence number this copy is current through
    # Each chunk's ``embedding_cache`` row id as loaded (-1: none found): the KNN rows'
    # float vectors are read by it, not through the (text hash, model) index (``_rows``).
    cache_rows: np.ndarray  # int64, (n,)
    # (chunk ids sorted, their cache rows): ``cache_rows_of``'s lookup, made on first use
    # and extended as the copy grows (the columns' own order is the Hamming scan's).
    lookup: tuple[np.ndarray, np.ndarray] | None = None


def to_words(rows: np.ndarray) -> np.ndarray:
    """Bit vectors, one per row of bytes, as 64-bit words, one row per word position.
    Rows are zero-padded to a multiple of 8 bytes (zeros add no distance)."""
    rows = np.asarray(rows, dtype=np.uint8)
    if rows.ndim == 1:
        rows = rows[None, :]
    pad = (-rows.shape[1]) % 8
    if pad:
        rows = np.pad(rows, ((0, 0), (0, pad)))
    return np.ascontiguousarray(np.ascontiguousarray(rows).view(np.uint64).T)


def hamming_nearest(words: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    """Column indices of the ``k`` columns of ``words`` (``to_words``) nearest the query
    (``to_words`` of one vector) by Hamming distance, nearest first; ties in index order,
    except that which of several tied at the k-th distance make the cut is unspecified."""
    n = words.shape[1] if words.ndim == 2 else 0
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    distance = np.bitwise_count(words[0] ^ query[0, 0]).astype(np.uint16)
    for row in range(1, words.shape[0]):
        distance += np.bitwise_count(words[row] ^ query[row, 0])
    top = np.argpartition(distance, k)[:k] if k < n else np.arange(n)
    return top[np.lexsort((top, distance[top]))]


class SQLiteVectorIndex:
    """Vector storage and KNN of one SQLite store (the backend's connection and lock)."""

    def __init__(self, backend: SQLiteStore, no_extension: str | None) -> None:
        self._db = backend
        self.unavailable: str | None = None  # vectors can always be held (see exact scan)
        # Why sqlite-vec is not loaded (the lane then scans exactly), or None.
        self.exact_scan: str | None = no_extension
        self._bits: dict[str, _ScopeBits] = {}
        self._epoch: str | None = None
        self._cache_lock = threading.Lock()

    # ------------------------------------------------------------------ identity

    def recorded_identity(self) -> str | None:
        return self._db.meta().get(IDENTITY_KEY)

    def bind(self, identity: str, dimension: int) -> str | None:
        """Record ``identity`` if the store has none yet and make sure the table exists.
        Returns None when the store's vectors are ``identity``'s, else the identity the
        store holds (nothing is changed then)."""
        with self._db.atomic():
            recorded = self.recorded_identity()
            if recorded is not None and recorded != identity:
                return recorded
            self._create(dimension)
            if recorded is None:
                self._db.set_meta(IDENTITY_KEY, identity)
            mode = self._db.meta().get(MODE_KEY)
            if self.exact_scan is not None and mode != "exact":
                self._db.set_meta(MODE_KEY, "exact")
            elif self.exact_scan is None and mode == "exact":
                # Trigger: sqlite-vec is back after vectors were stored without it. Why:
                # those chunks have no bit vector, so KNN would never see them. Outcome:
                # queue them again (their float vectors are in the cache).
                self._db._write(
                    "INSERT OR IGNORE INTO vector_queue (chunk_id) SELECT id FROM chunks "
                    f"WHERE id NOT IN (SELECT chunk_id FROM {TABLE})"
                )
                self._db.set_meta(MODE_KEY, "knn")
        return None

    def reset(self, identity: str, dimension: int) -> int:
        """Drop every vector, record ``identity`` and queue every chunk again; returns
        how many chunks are queued. The embedding cache is kept (it is keyed by model)."""
        with self._db.atomic():
            if self.exact_scan is None:  # a vec0 table cannot be dropped without its module
                self._db._write(f"DROP TABLE IF EXISTS {TABLE}")
            self._db._write(f"DROP TABLE IF EXISTS {LOG}")
            self._create(dimension)
            epoch = int(self._db.meta().get(EPOCH_KEY, "0")) + 1
            self._db.set_meta(EPOCH_KEY, str(epoch))
            self._db._write("INSERT OR IGNORE INTO vector_queue (chunk_id) SELECT id FROM chunks")
            self._db.set_meta(IDENTITY_KEY, identity)
        return self.pending_count()

    def _create(self, dimension: int) -> None:
        if self.exact_scan is None:
            self._db._write(
                f"CREATE VIRTUAL TABLE IF NOT EXISTS {TABLE} USING vec0 ("
                " chunk_id INTEGER PRIMARY KEY, scope TEXT PARTITION KEY,"
                f" embedding bit[{bit_dimension(dimension)}])"
            )
        self._db._write(
            f"CREATE TABLE IF NOT EXISTS {LOG} ("
            " seq INTEGER PRIMARY KEY AUTOINCREMENT, scope TEXT NOT NULL,"
            " chunk_id INTEGER NOT NULL)"
        )
        self._db._write(f"CREATE INDEX IF NOT EXISTS {LOG}_scope ON {LOG} (scope, seq)")

    def _table_exists(self) -> bool:
        name = LOG if self.exact_scan is not None else TABLE
        return bool(
            self._db._read_memo(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", [name]
            )
        )

    # ------------------------------------------------------------------ pending work

    def pending(self, limit: int) -> list[PendingChunk]:
        rows = self._db._read(
            "SELECT q.chunk_id, m.scope, c.text_hash, c.text FROM vector_queue q "
            "CROSS JOIN chunks c ON c.id = q.chunk_id CROSS JOIN memories m ON m.id = c.memory_id "
            "ORDER BY q.chunk_id LIMIT ?",
            [limit],
        )
        return [PendingChunk(*r) for r in rows]

    def claim(self, limit: int, lease_s: float) -> list[PendingChunk]:
        """``pending``: one process embeds at a time (``turn``), so no claim is kept."""
        return self.pending(limit)

    def release(self, chunk_ids: Sequence[int] | None = None) -> None:
        """Nothing is claimed (``claim``)."""

    def pending_count(self, scopes: Sequence[str] | None = None) -> int:
        if scopes is None:
            return int(self._db._read("SELECT COUNT(*) FROM vector_queue")[0][0])
        return int(
            self._db._read(
                "SELECT COUNT(*) FROM vector_queue q CROSS JOIN chunks c ON c.id = q.chunk_id "
                "CROSS JOIN memories m ON m.id = c.memory_id "
                f"WHERE m.scope IN ({placeholders(scopes)})",
                list(scopes),
            )[0][0]
        )

    def pending_in(self, scopes: Sequence[str], limit: int) -> list[PendingChunk]:
        """Newest first. Driven by the queue (small while the worker keeps up), each
        row's chunk looked up by id and kept when it is of ``scopes``. Inside a search's
        read view the rows are kept until the file changes (the vector lane's "still
        being embedded" check, every search)."""
        if not scopes or limit <= 0:
            return []
        rows = self._db._read_memo(
            "SELECT q.chunk_id, m.scope, c.text_hash, c.text FROM vector_queue q "
            "CROSS JOIN chunks c ON c.id = q.chunk_id CROSS JOIN memories m ON m.id = c.memory_id "
            f"WHERE m.scope IN ({placeholders(scopes)}) ORDER BY q.chunk_id DESC LIMIT ?",
            [*scopes, limit],
            view_only=True,
        )
        return [PendingChunk(*r) for r in rows]

    def writer_free(self, wait_s: float = 0.0) -> bool:
        """Whether a write can start within ``wait_s``, not only after another thread's
        transaction: the writer connection's lock is free by then (taken and given back
        at once). A worker's batch takes milliseconds; a long transaction outlasts it."""
        if not self._db._lock.acquire(timeout=max(0.0, wait_s)):
            return False
        self._db._lock.release()
        return True

    def has_pending(self, scopes: Sequence[str] | None = None) -> bool:
        """Whether chunks (of ``scopes``; None: of any scope) wait for vectors. A
        search asks for its own scopes only (issue 25: another tenant's writes must not
        show in its answer); the queue is walked, it is short once the worker keeps up."""
        if not self._db._read("SELECT 1 FROM vector_queue LIMIT 1"):
            return False
        if scopes is None:
            return True
        return bool(
            self._db._read(
                "SELECT 1 FROM vector_queue q CROSS JOIN chunks c ON c.id = q.chunk_id "
                "CROSS JOIN memories m ON m.id = c.memory_id "
                f"WHERE m.scope IN ({placeholders(scopes)}) LIMIT 1",
                list(scopes),
            )
        )

    def cached(self, model: str, hashes: Sequence[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        unique = list(dict.fromkeys(hashes))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            out.update(
                self._db._read(
                    "SELECT text_hash, vector FROM embedding_cache "
                    f"WHERE model = ? AND text_hash IN ({placeholders(part)})",
                    [model, *part],
                )
            )
        return out

    def upsert(self, model: str, items: Sequence[tuple[PendingChunk, bytes]]) -> int:
        """Store the vectors of queued chunks (and cache them); returns how many were
        stored. Chunks no longer queued (deleted, or done by another process) and a
        model that is no longer the store's are skipped."""
        stored = 0
        with self._db.atomic():
            if self.recorded_identity() != model or not self._table_exists():
                return 0
            for chunk, blob in items:
                done = self._db._write(
                    "DELETE FROM vector_queue WHERE chunk_id = ?", [chunk.chunk_id]
                )
                if done.rowcount == 0:
                    continue
                self._db._write(
                    "INSERT OR IGNORE INTO embedding_cache (text_hash, model, vector) "
                    "VALUES (?, ?, ?)",
                    [chunk.text_hash, model, blob],
                )
                if self.exact_scan is None:
                    self._db._write(f"DELETE FROM {TABLE} WHERE chunk_id = ?", [chunk.chunk_id])
                    self._db._write(
                        f"INSERT INTO {TABLE} (chunk_id, scope, embedding) "
                        "VALUES (?, ?, vec_quantize_binary(?))",
                        [chunk.chunk_id, chunk.scope, bit_blob(blob)],
                    )
                self._db._write(
                    f"INSERT INTO {LOG} (scope, chunk_id) VALUES (?, ?)",
                    [chunk.scope, chunk.chunk_id],
                )
                stored += 1
        return stored

    @contextmanager
    def bulk(self, pending: int) -> Iterator[None]:
        """Nothing to change: sqlite-vec's table takes vectors as fast one by one."""
        yield

    def build_index(self) -> bool:
        return False  # the vec0 table is its own index: never missing

    @contextmanager
    def turn(self) -> Iterator[None]:
        """One embedding batch at a time across processes: an exclusive ``flock`` on
        ``<file>-embed`` (a lock only: empty, never read), released when the batch ends
        or its process dies. Processes serving one file (``serve-http --workers``) then
        embed each queued chunk once; the one that waited finds those chunks done. A
        ``:memory:`` store, or a system without ``flock``, has one process anyway."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover - Windows: no fork, one server process
            fcntl = None  # type: ignore[assignment]
        location = self._db.location
        if fcntl is None or location == ":memory:":
            yield
            return
        try:
            handle = open(f"{location}-embed", "ab")  # noqa: SIM115 - held across the yield
        except OSError:  # a read-only folder: nothing can be stored anyway
            yield
            return
        with handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def delete_chunks(self, chunk_ids: Sequence[int]) -> None:
        """Inside a write: drop the vectors of chunks about to be deleted."""
        if chunk_ids and self.exact_scan is None and self._table_exists():
            self._db._write(
                f"DELETE FROM {TABLE} WHERE chunk_id IN ({placeholders(chunk_ids)})",
                list(chunk_ids),
            )

    def count(self) -> int:
        if self.unavailable is not None or not self._table_exists():
            return 0
        if self.exact_scan is not None:
            return int(
                self._db._read(
                    f"SELECT COUNT(DISTINCT l.chunk_id) FROM {LOG} l "
                    "JOIN chunks c ON c.id = l.chunk_id"
                )[0][0]
            )
        return int(self._db._read(f"SELECT COUNT(*) FROM {TABLE}")[0][0])

    # ------------------------------------------------------------------ search

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
        """Up to ``fetch`` memories by their best chunk's cosine to ``vector`` (unit
        length), best first, among those that pass scope and filters.

        Per scope: Hamming KNN over the binary vectors for a pool of candidates (at
        least ``2 × fetch``), then filters, then exact cosine from the float vectors.
        When the filters drop too many, the pool widens (×4) up to 4096 per scope.
        """
        if self.unavailable is not None:
            return []
        state = None if self.exact_scan is not None else self._knn_state()
        if not (self._table_exists() if state is None else state[0]):
            return []
        blob = to_blob(vector)
        where, extra = self._db._filter_sql(query, now)
        filters = " AND ".join(["m.scope = ?", *where]) if where else "m.scope = ?"
        if state is None:
            return self._exact(scopes, vector, filters, extra, fetch, model)
        rows: list[Any] = []
        # The query's sign bits in numpy, as ``_quantised`` makes the scopes' (exactly
        # ``vec_quantize_binary``'s: tests/test_search_statements.py): no statement.
        padded = np.frombuffer(bit_blob(blob), dtype=np.float32)
        query_bits = to_words(np.packbits(padded > 0, bitorder="little"))
        for scope in scopes:
            cached = self._scope_bits(scope, model, state[1], state[2])
            k = max(pool, fetch * 2)
            while True:
                nearest = hamming_nearest(cached.words, query_bits, k)
                pairs = _listed(cached.ids[nearest], cached.cache_rows[nearest])
                if not pairs:
                    break
                passed = self._rows(pairs, model, filters, scope, extra)
                if len(passed) >= fetch or len(pairs) // 2 < k or k >= _KNN_MAX:
                    rows.extend(passed)
                    break
                k = min(k * 4, _KNN_MAX)
        return _best(rows, vector, fetch)

    def _rows(
        self, pairs: Sequence[Any], model: str, filters: str, scope: str, extra: Sequence[Any]
    ) -> list[Any]:
        """The KNN's chunks that pass ``filters``, in chunk id order, each with its
        memory, sequence, text and float vector: the rows of ``c.id IN (…)`` joined to
        ``embedding_cache`` by (text hash, model). ``pairs``: (chunk id, its cache row
        id) flattened, in chunk id order (``_listed``).

        Each vector is read by the row id the scope's copy noted for the chunk, checked
        against the chunk's text hash and the model (a purge may free a row id, and a
        later vector take it), which saves a descent of the cache's (text hash, model)
        index per chunk: one page read of a ~1 kB vector instead of two where the cache
        outgrows SQLite's page cache. Where a vector is not found so (none noted, or the
        check fails), the rows are read by the index as before: the same rows."""
        values = ", ".join(["(?, ?)"] * (len(pairs) // 2))
        rows = self._db._read(
            f"WITH x (chunk, row) AS (VALUES {values}) "
            "SELECT c.id, c.memory_id, c.seq, c.text, e.vector FROM x "
            "CROSS JOIN chunks c ON c.id = x.chunk CROSS JOIN memories m ON m.id = c.memory_id "
            "LEFT JOIN embedding_cache e ON e.id = x.row AND e.text_hash = c.text_hash "
            f"AND e.model = ? WHERE {filters}",
            [*pairs, model, scope, *extra],
        )
        if all(r[4] is not None for r in rows):
            return rows
        listed = pairs[::2]
        return self._db._read(
            "SELECT c.id, c.memory_id, c.seq, c.text, e.vector FROM chunks c "
            "CROSS JOIN memories m ON m.id = c.memory_id "
            "JOIN embedding_cache e ON e.text_hash = c.text_hash AND e.model = ? "
            f"WHERE c.id IN ({placeholders(listed)}) AND {filters}",
            [model, *listed, scope, *extra],
        )

    def _exact(
        self,
        scopes: Sequence[str],
        vector: np.ndarray,
        filters: str,
        extra: Sequence[Any],
        fetch: int,
        model: str,
    ) -> list[VectorMatch]:
        """Without sqlite-vec: every embedded chunk of each scope that passes the
        filters, scored by exact cosine in numpy."""
        rows: list[Any] = []
        for scope in scopes:
            rows.extend(
                self._db._read(
                    "SELECT c.id, c.memory_id, c.seq, c.text, e.vector FROM chunks c "
                    "CROSS JOIN memories m ON m.id = c.memory_id "
                    "JOIN embedding_cache e ON e.text_hash = c.text_hash AND e.model = ? "
                    f"WHERE {filters}",
                    [model, scope, *extra],
                )
            )
        return _best(rows, vector, fetch)

    def _knn_state(self) -> tuple[bool, str | None, int]:
        """(whether the KNN table exists, ``meta.vector_epoch``, the vector log's end) in
        one statement, kept until the file changes (``_read_memo``): three small reads
        every search asked again after any write (an access count, say). ``_create``
        makes the table and the log together; where neither exists yet the statement
        cannot compile, and the table is looked up alone (the lane then does not run)."""
        try:
            rows = self._db._read_memo(
                "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?), "
                "(SELECT value FROM meta WHERE key = ?), "
                f"(SELECT COALESCE(MAX(seq), 0) FROM {LOG})",
                [TABLE, EPOCH_KEY],
                raw=True,
            )
        except sqlite_driver.DatabaseError:
            if self._table_exists():
                raise
            return False, None, 0
        exists, epoch, newest = rows[0]
        return bool(exists), epoch, int(newest)

    def _scope_bits(self, scope: str, model: str, epoch: str | None, newest: int) -> _ScopeBits:
        """``scope``'s bit vectors, loaded on first use and brought up to date from
        ``vector_log`` on each call (see the module docstring).

        The first load quantises the scope's float vectors from ``embedding_cache``
        (sign bits, exactly ``vec_quantize_binary``'s) rather than scanning the ``vec0``
        partition: 2-12 ms instead of 30-38 ms for 500 kilobyte-long turns, the first
        search of a scope being the one a user waits for. A chunk still queued whose
        text was embedded before is found a little early, with the vector it will get."""
        # The snapshot first: a thread holds its read connection before it waits for the
        # cache, so a full read pool cannot deadlock against the cache's lock.
        with self._db.snapshot(), self._cache_lock:
            if epoch != self._epoch:
                self._bits.clear()
                self._epoch = epoch
            cached = self._bits.get(scope)
            if cached is None:
                rows = self._db._read(
                    "SELECT c.id, e.vector, e.id FROM memories m "
                    "CROSS JOIN chunks c ON c.memory_id = m.id "
                    "JOIN embedding_cache e ON e.text_hash = c.text_hash AND e.model = ? "
                    "WHERE m.scope = ?",
                    [model, scope],
                )
                cached = self._bits[scope] = _ScopeBits(
                    *_quantised(rows), newest, _cache_rows(rows, 2)
                )
            elif newest > cached.seq:
                rows = self._db._read(
                    f"SELECT v.chunk_id, v.embedding, e.id FROM {LOG} l "
                    f"CROSS JOIN {TABLE} v ON v.chunk_id = l.chunk_id "
                    "LEFT JOIN chunks c ON c.id = v.chunk_id "
                    "LEFT JOIN embedding_cache e ON e.text_hash = c.text_hash AND e.model = ? "
                    "WHERE l.scope = ? AND l.seq > ? AND l.seq <= ?",
                    [model, scope, cached.seq, newest],
                )
                ids, words = _to_arrays(rows)
                if len(ids):
                    cached.ids = np.concatenate([cached.ids, ids])
                    added = _cache_rows(rows, 2)
                    cached.cache_rows = np.concatenate([cached.cache_rows, added])
                    cached.lookup = _extended(cached.lookup, ids, added)
                    cached.words = (
                        np.concatenate([cached.words, words], axis=1)
                        if cached.words.size
                        else words
                    )
                cached.seq = newest
            return cached

    def cache_rows_of(self, scopes: Sequence[str], chunk_ids: Sequence[int]) -> dict[int, int]:
        """The ``embedding_cache`` row ids the scopes' bit-vector copies noted for these
        chunks (those a copy holds; no statement). A row may be stale (a purge, a model
        change): the caller reads it checked against the chunk's text hash and model,
        and by the index where the check fails (``candidates.read_with_context``)."""
        if not chunk_ids:
            return {}
        asked = np.fromiter(chunk_ids, dtype=np.int64, count=len(chunk_ids))
        out: dict[int, int] = {}
        with self._cache_lock:
            for scope in scopes:
                cached = self._bits.get(scope)
                if cached is None or not len(cached.ids):
                    continue
                if cached.lookup is None:
                    order = np.argsort(cached.ids, kind="stable")  # near sorted: ~linear
                    cached.lookup = (cached.ids[order], cached.cache_rows[order])
                ids, rows = cached.lookup
                at = np.minimum(np.searchsorted(ids, asked), len(ids) - 1)
                hit = ids[at] == asked
                for chunk_id, row in zip(asked[hit].tolist(), rows[at[hit]].tolist(), strict=True):
                    if row >= 0:
                        out.setdefault(chunk_id, row)
        return out

    def vectors(self, model: str, chunk_ids: Sequence[int]) -> dict[int, np.ndarray]:
        """The float vectors of the given chunks (those embedded), for diversification."""
        if not chunk_ids:
            return {}
        rows = self._db._read(
            "SELECT c.id, e.vector FROM chunks c JOIN embedding_cache e "
            "ON e.text_hash = c.text_hash AND e.model = ? "
            f"WHERE c.id IN ({placeholders(chunk_ids)})",
            [model, *chunk_ids],
        )
        return {r[0]: np.frombuffer(r[1], dtype=np.float32) for r in rows}


def _listed(ids: np.ndarray, cache_rows: np.ndarray) -> list[Any]:
    """(chunk id, cache row id) of each chunk once, in chunk id order (what ``c.id IN``
    walks), flattened: a chunk stored again (a re-index) has two columns in the copy."""
    order = np.argsort(ids, kind="stable")
    pairs: list[Any] = []
    for chunk_id, row in zip(ids[order].tolist(), cache_rows[order].tolist(), strict=True):
        if not pairs or pairs[-2] != chunk_id:
            pairs += [chunk_id, row]
    return pairs


def _extended(
    lookup: tuple[np.ndarray, np.ndarray] | None, ids: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """``_ScopeBits.lookup`` with chunks the copy just took: appended where they all come
    after it (chunk ids grow as chunks are written), else made again on next use."""
    if lookup is None:
        return None
    order = np.argsort(ids, kind="stable")
    ids, rows = ids[order], rows[order]
    if len(lookup[0]) and ids[0] < lookup[0][-1]:
        return None
    return np.concatenate([lookup[0], ids]), np.concatenate([lookup[1], rows])


def _cache_rows(rows: Sequence[Any], at: int) -> np.ndarray:
    """Column ``at`` of ``rows`` (an ``embedding_cache`` row id, None: none) as int64."""
    return np.fromiter(
        (-1 if r[at] is None else r[at] for r in rows), dtype=np.int64, count=len(rows)
    )


def _to_arrays(rows: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if not rows:
        return ids, np.zeros((0, 0), dtype=np.uint64)
    bits = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.uint8).reshape(len(rows), -1)
    return ids, to_words(bits)


def _quantised(rows: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """(chunk id, float32 vector blob) rows as ``_to_arrays`` would give them from the
    binary table: one bit per dimension, set when the value is positive, low bit first."""
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    if not rows:
        return ids, np.zeros((0, 0), dtype=np.uint64)
    floats = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    return ids, to_words(np.packbits(floats > 0, axis=1, bitorder="little"))


def _best(rows: Sequence[Any], vector: np.ndarray, fetch: int) -> list[VectorMatch]:
    """Each memory's best chunk by exact cosine (rows carry float32 vectors), best first.
    A memory's first row of its highest similarity stands for it; a ``VectorMatch`` is
    made for the ``fetch`` returned only (~30 of 64 rows)."""
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    similarities = (matrix @ np.asarray(vector, dtype=np.float32)).tolist()
    best: dict[str, int] = {}
    for i, row in enumerate(rows):
        current = best.get(row[1])
        if current is None or similarities[i] > similarities[current]:
            best[row[1]] = i
    ranked = sorted(best.values(), key=lambda i: (-similarities[i], rows[i][0]))[:fetch]
    return [
        VectorMatch(rows[i][0], rows[i][1], rows[i][2], rows[i][3], similarities[i], matrix[i])
        for i in ranked
    ]
