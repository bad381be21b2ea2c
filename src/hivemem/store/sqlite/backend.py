"""The SQLite backend: one file, WAL, FTS5. The only module that issues SQL.

Connection rules (DESIGN §1, LESSONS 6): WAL journal, ``busy_timeout``, foreign keys on,
``synchronous=NORMAL`` (durable across a process crash; a power loss may drop the last
transactions, never corrupt). Writes go through ``atomic()``: ``BEGIN IMMEDIATE`` so two
processes never deadlock upgrading a read lock, savepoints when nested. One connection per
store, guarded by a lock, so one process is one writer; reads run beside it on a small
pool of WAL read connections (``pool.py``), and the access counts of reads are queued and
written in batches (``access.py``).

The driver is ``sqlean`` (``sqlean.py`` on PyPI): the stdlib ``sqlite3`` module compiled
with a current SQLite, FTS5 and extension loading on every platform; stdlib ``sqlite3`` is
used when sqlean is missing and the system SQLite has FTS5.
"""

from __future__ import annotations

import builtins
import json
import threading
import time
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

from ...clock import from_text, to_text
from ...errors import NotAStore, StoreError, TryAgain
from ...providers.entities import Mention
from ...types import ListFilter, Memory, Query, Status
from ..fts5 import to_fts5
from ..inspect import InspectionStatements
from ..keyword_query import KeywordQuery
from ..pool_reads import Neighbours, PoolRow
from ..protocols import ChunkMatch, SessionInfo
from ..resolutions import Resolutions
from ..rows import (
    JSON_FIELDS,
    SELECT,
    TIME_FIELDS,
    UPDATABLE,
    placeholders,
    row_to_memory,
)
from ..stats import scope_stats
from . import candidates, inserts, migrations, neighbours, termcounts
from .access import AccessLog
from .database import DRIVER_NAME as DRIVER_NAME
from .database import IntegrityError as IntegrityError
from .database import OperationalError, sqlite_driver
from .entities import SQLiteEntityIndex
from .failures import is_full, is_locked, search_error, store_error
from .keyword import KeywordPlans, KeywordStats
from .keyword_scope import KeywordScope
from .limits import ClosedConnection, time_limit
from .maintenance import SQLiteMaintenance
from .pool import WAL_AUTOCHECKPOINT_PAGES, PooledReads, ReadPool, ThreadRole
from .purge import SQLitePurge
from .repair import RepairMixin
from .scoped_bm25 import ALL_MATCHES_MAX, ScopedBM25
from .vectors import SQLiteVectorIndex, load_extension


def _is_driver_failure(exc: BaseException) -> bool:
    """A failure of the file or the disk (a full disk, I/O, a damaged page), not of
    HiveMem's SQL: ``IntegrityError`` (a broken rule, translated where it can happen) and
    programming errors pass through as they are."""
    return isinstance(exc, OperationalError | MemoryError) or type(exc) is (
        sqlite_driver.DatabaseError
    )


def _no_store_yet(file: Path) -> bool:
    """Nothing at ``file`` a read could open: no file, or an empty one (``touch``) with no
    write-ahead log holding a store's first pages beside it."""
    if not file.exists():
        return True
    if file.is_dir() or file.stat().st_size > 0:
        return False
    wal = file.with_name(file.name + "-wal")
    return not (wal.exists() and wal.stat().st_size > 0)


class SQLiteBackend(PooledReads, KeywordPlans, KeywordStats, KeywordScope, ScopedBM25, RepairMixin):
    """See ``hivemem.store.protocols.Backend`` for the contract of each method.

    ``read_connections``: the size of the read pool (``pool.py``); 0 reads through the
    writer connection under its lock (the only way for a ``:memory:`` store).
    ``mmap_mb``: how much of the file every connection maps (``PRAGMA mmap_size``).
    Trigger: a search reads FTS5 doclists and rows scattered over the file, and with 20%
    writes under load each commit empties the other connections' page caches. Why: a
    mapped page is read where the OS cache holds it; a ``pread`` copies it per page
    (``hivemem bench --load --workers 2``, three rounds each: 130 -> 146 requests/s,
    library CPU 11.4 -> 10.0 ms a request; 20,000 memories in process ~7-13% less CPU a
    search). Outcome: the same results; a disk error on a mapped page stops the process
    (SIGBUS) instead of raising, hence the setting (0: off)."""

    _driver_errors = (sqlite_driver.DatabaseError, MemoryError)

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout_ms: int = 10_000,
        read_connections: int = 2,
        mmap_mb: int = 1024,
        create: bool = True,
    ) -> None:
        self.location = str(path)
        self.created = False  # this open made the store (its first migration ran here)
        if self.location != ":memory:":
            file = Path(self.location).expanduser()
            try:
                absent = _no_store_yet(file)
                parent = file.resolve().parent
            except OSError as exc:  # a name too long, a folder that may not be looked at
                raise StoreError(f"cannot open {self.location}: {exc.strerror}") from None
            if not create and absent:
                raise NotAStore(
                    f"no HiveMem store at {self.location} (nothing was created): check the "
                    "path, or create one with `hivemem --db PATH init` "
                    "(hivemem.open(path) in Python)"
                )
            if not parent.exists():
                raise StoreError(f"cannot open {self.location}: folder {parent} does not exist")
            self.location = str(file)
        self._lock = threading.RLock()
        self._stats_lock = threading.RLock()  # the keyword statistics' caches
        self._depth = 0
        self._role = ThreadRole()
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._mmap_bytes = int(mmap_mb) << 20
        self._pool: ReadPool | None = None
        self._access = AccessLog(self._write_access)
        self._doc_freq: dict[str, tuple[int, int]] = {}  # stem -> (chunks with it, index size)
        # (scopes, stem) -> (chunks of the scopes with it, the scopes' chunks): term_stats
        self._scope_freq: dict[tuple[tuple[str, ...], str], tuple[int, int]] = {}
        self._postings = termcounts.Postings()  # small scopes' rows per term
        self._pairs = neighbours.PairMemo()  # session_neighbours' pairs
        self._scope_lengths: dict[tuple[str, ...], tuple[int, int]] = {}  # scoped_bm25.py
        self._phrase_hits: dict[tuple[Any, tuple[str, ...], str], int] = {}
        self._term_cache: dict[tuple[int, int], dict[str, int]] = {}
        self._commits = 0  # this connection's commits (data_version counts the others')
        try:
            self._conn = sqlite_driver.connect(
                self.location,
                isolation_level=None,
                check_same_thread=False,
                timeout=busy_timeout_ms / 1000,
                # Every statement of the write path stays prepared, whatever reads ran
                # on this connection in between (the driver's default keeps 128).
                cached_statements=inserts.WRITER_STATEMENTS,
            )
        except sqlite_driver.DatabaseError as exc:
            raise StoreError(f"cannot open {self.location} as a HiveMem store: {exc}") from exc
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self._conn.execute(f"PRAGMA mmap_size = {self._mmap_bytes}")
            self.vectors = SQLiteVectorIndex(self, load_extension(self._conn))
            self.entities = SQLiteEntityIndex(self)
            self.resolutions = Resolutions(self)
            self.journal_mode = self._prepare_file(busy_timeout_ms)
            if self.location != ":memory:" and read_connections > 0:
                self._pool = ReadPool(
                    self.location, lambda: self._open_reader(busy_timeout_ms), read_connections
                )
        except (sqlite_driver.DatabaseError, MemoryError) as exc:
            # MemoryError: SQLite answers SQLITE_NOMEM on some damaged pages.
            self._conn.close()
            if is_full(exc) or is_locked(exc):  # a full disk; another writer (TryAgain)
                raise store_error(exc, self.location, "open") from exc
            raise StoreError(
                f"cannot open {self.location} as a HiveMem store: {exc or 'damaged file'}"
            ) from exc
        except BaseException:
            self._conn.close()  # a refused file (newer schema, failed migration) stays closed
            raise

    def _open_reader(self, busy_timeout_ms: int) -> Any:
        """A read connection of the pool: read-only, the writer's busy timeout, sqlite-vec
        when the writer has it (a search quantises its query with it)."""
        conn = sqlite_driver.connect(
            self.location,
            isolation_level=None,
            check_same_thread=False,  # lent to one thread at a time
            timeout=busy_timeout_ms / 1000,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            conn.execute("PRAGMA query_only = ON")
            conn.execute(f"PRAGMA mmap_size = {self._mmap_bytes}")
            if self.vectors.exact_scan is None:
                load_extension(conn)
        except BaseException:
            conn.close()
            raise
        return conn

    def _prepare_file(self, busy_timeout_ms: int) -> str:
        """Switch the file to WAL and apply pending migrations; return the journal mode.

        ``PRAGMA journal_mode = WAL`` needs an exclusive lock and SQLite answers "database
        is locked" at once instead of waiting on busy_timeout, which happens when several
        processes open a new store together. Every step here is idempotent (migrations
        are re-checked under the write lock), so a busy file is retried until
        busy_timeout has passed.
        """
        deadline = time.monotonic() + busy_timeout_ms / 1000
        delay = 0.005
        while True:
            try:
                # Before anything writes: another program's database stays as it was.
                migrations.refuse_foreign(self._conn, self.location)
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                self._conn.execute("PRAGMA synchronous = NORMAL")
                self._conn.execute(f"PRAGMA wal_autocheckpoint = {WAL_AUTOCHECKPOINT_PAGES}")
                migrations.refuse_newer(self._conn, self.location)
                done = migrations.apply(self._conn, to_text(datetime.now().astimezone()))
                self.created = migrations.FIRST in done
                return str(mode)
            except OperationalError as exc:
                busy = "locked" in str(exc) or "busy" in str(exc)
                if not busy or time.monotonic() >= deadline:
                    raise
                time.sleep(delay)
                delay = min(delay * 2, 0.1)

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def atomic(self) -> Iterator[None]:
        """One transaction (a savepoint when nested). Any failure rolls it back whole;
        a driver error (a full disk, an I/O error, a damaged page) leaves as one
        ``StoreError`` (``StoreFull``) with the driver's error as its cause, never as
        the error of the rollback that followed it."""
        with self._lock:
            if self._depth == 0:
                self._begin()
            else:
                self._conn.execute(f"SAVEPOINT sp{self._depth}")
            self._depth += 1
            self._role.writing += 1  # this thread's reads go to the writer connection
            try:
                yield
            except BaseException as exc:
                self._depth -= 1
                self._role.writing -= 1
                self._undo()
                if _is_driver_failure(exc):
                    raise store_error(exc, self.location, "write") from exc
                raise
            self._depth -= 1
            self._role.writing -= 1
            if self._depth == 0:
                self._commit()
            else:
                self._conn.execute(f"RELEASE sp{self._depth}")

    def _undo(self) -> None:
        """Roll back the innermost transaction or savepoint. SQLite may already have
        rolled the whole transaction back itself (SQLITE_FULL, SQLITE_IOERR, …): then
        there is nothing left to undo, and the caller sees the error that caused it."""
        if not self._conn.in_transaction:
            return
        try:
            if self._depth == 0:
                self._conn.execute("ROLLBACK")
            else:
                self._conn.execute(f"ROLLBACK TO sp{self._depth}")
                self._conn.execute(f"RELEASE sp{self._depth}")
        except sqlite_driver.DatabaseError:
            if self._depth == 0 and self._conn.in_transaction:
                with suppress(sqlite_driver.DatabaseError):
                    self._conn.execute("ROLLBACK")

    def _begin(self) -> None:
        # busy_timeout already waits; a few more tries cover the rare case where SQLite
        # gives up early (e.g. a checkpoint holding the lock), so the caller never sees
        # "database is locked" while another writer is merely slow.
        for attempt in range(5):
            try:
                self._conn.execute("BEGIN IMMEDIATE")
                return
            except OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise store_error(exc, self.location, "start a write on") from exc
                time.sleep(0.05 * (attempt + 1))
        raise TryAgain(f"{self.location} is locked by another writer; try again", reason="busy")

    def _cache_lock(self) -> Any:
        """The lock of the keyword statistics' caches: their own with the read pool, so a
        search never waits for a write; the writer's lock without it, as every read then
        takes that lock anyway (two locks taken in either order could deadlock)."""
        return self._lock if self._pool is None else self._stats_lock

    def _version(self) -> tuple[int, int]:
        """Changes since: another connection's commits (data_version) or this one's."""
        return self.data_version(), self._commits

    def _commit(self) -> None:
        self._commits += 1
        try:
            self._conn.execute("COMMIT")
        except (sqlite_driver.DatabaseError, MemoryError) as exc:
            self._undo()
            raise store_error(exc, self.location, "write") from exc
        self._bound_wal()

    def _read(self, sql: str, params: Sequence[Any] = (), *, raw: bool = False) -> list[Any]:
        """Rows of one statement. A driver error means a damaged or foreign file (the
        SQL here is ours) and becomes ``StoreError``; ``raw=True`` lets the caller
        translate it (a user's FTS5 syntax)."""
        with self._reading() as conn:
            try:
                return conn.execute(sql, params).fetchall()
            except (sqlite_driver.DatabaseError, MemoryError) as exc:
                if raw and not isinstance(exc, MemoryError):
                    raise
                raise store_error(exc, self.location, "read") from exc

    def _read_raw(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """``_read`` leaving driver errors to the caller (``keyword_search`` translates)."""
        return self._read(sql, params, raw=True)

    def _write(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if self._depth == 0:
            raise RuntimeError("write outside atomic()")  # a bug in HiveMem, not user error
        return self._conn.execute(sql, params)

    @property
    def closed(self) -> bool:
        return isinstance(self._conn, ClosedConnection)

    def close(self) -> None:
        if not self.closed:
            self._access.close()  # the writer writes the queued access counts first
        with self._lock:
            if self._pool is not None:
                self._pool.close()
            if not self.closed:
                with suppress(sqlite_driver.DatabaseError, MemoryError):  # damaged: skip it
                    self._conn.execute("PRAGMA optimize")
                self._conn.close()
                self._conn = ClosedConnection(self.location)

    # ------------------------------------------------------------------ reads

    def _memories(self, where: str, params: Sequence[Any], tail: str = "") -> list[Memory]:
        rows = self._read(f"SELECT {SELECT} FROM memories m WHERE {where} {tail}", params)
        return self._access.overlay([row_to_memory(r) for r in rows])

    @staticmethod
    def _scope_clause(scopes: Sequence[str]) -> tuple[str, list[Any]]:
        if not scopes:
            raise RuntimeError("no scope given")  # every read is scoped; a HiveMem bug
        return f"m.scope IN ({placeholders(scopes)})", list(scopes)

    def get(self, scopes: Sequence[str], memory_id: str) -> Memory | None:
        clause, params = self._scope_clause(scopes)
        found = self._memories(f"{clause} AND m.id = ?", [*params, memory_id])
        return found[0] if found else None

    def get_many(self, scopes: Sequence[str], memory_ids: Sequence[str]) -> list[Memory]:
        if not memory_ids:
            return []
        clause, params = self._scope_clause(scopes)
        found = self._memories(
            f"{clause} AND m.id IN ({placeholders(memory_ids)})", [*params, *memory_ids]
        )
        order = {mid: i for i, mid in enumerate(memory_ids)}
        return sorted(found, key=lambda m: order[m.id])

    def candidate_rows(
        self, scopes: Sequence[str], wanted: Mapping[str, int | None], model: str | None
    ) -> builtins.list[tuple[Memory, Any]]:
        return candidates.read(self, scopes, wanted, model, self._access.overlay)

    def pool_rows(
        self,
        scopes: Sequence[str],
        wanted: Mapping[str, int | None],
        model: str | None,
        anchors: Sequence[str],
        chunk_of: Callable[[str], int | None],
        keep: Callable[[Neighbours], Collection[str]],
        query: Query,
        now: datetime,
        have: Collection[str] = (),
    ) -> builtins.list[PoolRow]:
        """One statement (``candidates.read_with_context``); the pairs kept as
        ``session_neighbours`` keeps them."""
        return candidates.read_with_context(
            self, self._pairs, self._pairs_version(), scopes, wanted, model,
            self._access.queued, anchors, chunk_of, keep, query, now, have,
            lambda ids: self.vectors.cache_rows_of(scopes, ids),
        )  # fmt: skip

    def by_key(
        self, scopes: Sequence[str], key: str, as_of: datetime | None = None
    ) -> Memory | None:
        clause, params = self._scope_clause(scopes)
        if as_of is None:
            cond, extra = "m.status = 'active'", []
        else:
            cond = "m.valid_from <= ? AND (m.valid_until IS NULL OR m.valid_until > ?)"
            extra = [to_text(as_of), to_text(as_of)]
        found = self._memories(
            f"{clause} AND m.key = ? AND {cond}",
            [*params, key, *extra],
            "ORDER BY m.valid_from DESC, m.id DESC",
        )
        if not found:
            return None
        own = [m for m in found if m.scope == scopes[0]]
        return (own or found)[0]

    def versions_of_key(self, scopes: Sequence[str], key: str) -> list[Memory]:
        clause, params = self._scope_clause(scopes)
        return self._memories(
            f"{clause} AND m.key = ?", [*params, key], "ORDER BY m.created_at, m.id"
        )

    def successors(self, scopes: Sequence[str], memory_id: str) -> list[Memory]:
        clause, params = self._scope_clause(scopes)
        # "+m.scope": the supersedes_id index, not a walk of the whole scope (70 ms at 100k)
        return self._memories(
            f"+{clause} AND m.supersedes_id = ?", [*params, memory_id], "ORDER BY m.created_at"
        )

    def scopes_of(self, memory_ids: Sequence[str]) -> dict[str, str]:
        out: dict[str, str] = {}
        ids = list(dict.fromkeys(memory_ids))
        for start in range(0, len(ids), 500):  # stay under SQLite's variable limit
            batch = ids[start : start + 500]
            rows = self._read(
                f"SELECT id, scope FROM memories WHERE id IN ({placeholders(batch)})", batch
            )
            out.update(dict(rows))
        return out

    def find_duplicate(self, scope: str, kind: str, content_hash: str) -> Memory | None:
        lean = "" if kind == "episode" else " AND m.kind <> 'episode'"  # 0024's hash index
        found = self._memories(
            "m.scope = ? AND m.content_hash = ? AND m.kind = ? AND m.status = 'active' "
            f"AND m.key IS NULL{lean}",
            [scope, content_hash, kind],
            "LIMIT 1",
        )
        return found[0] if found else None

    def _filter_sql(
        self,
        flt: ListFilter | Query,
        now: datetime,
    ) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if flt.as_of is not None:
            where.append("m.valid_from <= ? AND (m.valid_until IS NULL OR m.valid_until > ?)")
            params += [to_text(flt.as_of)] * 2
        elif flt.statuses:
            where.append(f"m.status IN ({placeholders(flt.statuses)})")
            params += [s.value for s in flt.statuses]
        if not flt.include_expired:
            where.append("(m.expires_at IS NULL OR m.expires_at > ?)")
            params.append(to_text(now))
        if flt.kinds:
            where.append(f"m.kind IN ({placeholders(flt.kinds)})")
            params += [k.value for k in flt.kinds]
        if flt.types:
            where.append(f"m.type IN ({placeholders(flt.types)})")
            params += [t.value for t in flt.types]
        if flt.categories:
            where.append(f"m.category IN ({placeholders(flt.categories)})")
            params += list(flt.categories)
        if flt.tags:
            where.append(
                "EXISTS (SELECT 1 FROM json_each(m.tags) j "
                f"WHERE j.value IN ({placeholders(flt.tags)}))"
            )
            params += list(flt.tags)
        if flt.sessions:
            where.append(f"m.session_id IN ({placeholders(flt.sessions)})")
            params += list(flt.sessions)
        if flt.exclude_sessions:
            where.append(
                f"(m.session_id IS NULL OR m.session_id NOT IN "
                f"({placeholders(flt.exclude_sessions)}))"
            )
            params += list(flt.exclude_sessions)
        if flt.since is not None:
            where.append("COALESCE(m.event_time, m.created_at) >= ?")
            params.append(to_text(flt.since))
        if flt.until is not None:
            where.append("COALESCE(m.event_time, m.created_at) < ?")
            params.append(to_text(flt.until))
        return where, params

    def list(
        self, scopes: Sequence[str], flt: ListFilter, limit: int, offset: int, now: datetime
    ) -> list[Memory]:
        clause, params = self._scope_clause(scopes)
        where, extra = self._filter_sql(flt, now)
        if flt.key is not None:
            where.append("m.key = ?")
            extra.append(flt.key)
        sql_where = " AND ".join([clause, *where])
        return self._memories(
            sql_where,
            [*params, *extra, limit, offset],
            "ORDER BY m.created_at DESC, m.id DESC LIMIT ? OFFSET ?",
        )

    def iter_all(self, scopes: Sequence[str] | None) -> Iterator[Memory]:
        params: list[Any]
        if scopes is None:
            where, params = "1 = 1", []
        else:
            where, params = self._scope_clause(scopes)
        last = ""
        while True:  # keyset pagination: memory stays flat on big stores
            page = self._memories(
                f"{where} AND m.id > ?", [*params, last], "ORDER BY m.id LIMIT 1000"
            )
            if not page:
                return
            yield from page
            last = page[-1].id

    def keyword_search(
        self,
        scopes: Sequence[str],
        query: Query,
        keywords: KeywordQuery,
        limit: int,
        now: datetime,
        *,
        time_limit_s: float | None = None,
    ) -> builtins.list[ChunkMatch]:
        """The ``limit`` best chunks by BM25 among those ``keywords`` (compiled to FTS5,
        ``fts5.to_fts5``) finds that pass scope and filters, best
        first (ties: lower chunk id first). With ``time_limit_s`` (a caller's FTS5 syntax,
        whose cost has no other bound) the statements stop once it has passed, and the
        search raises ``InvalidInput`` naming the query.

        Two plans, one result. BM25 has to be computed for every chunk the query matches,
        and joining each of them to ``chunks`` and ``memories`` to filter costs more than
        the BM25 itself, so the first plan ranks on the FTS index alone (SQLite keeps the
        top rows of the sort, nothing else), then filters just those rows: the first
        ``limit`` that pass are the answer. When filters drop too many (other scopes hold
        most of the matches, a narrow time filter), it widens the page; when even a wide
        page would not do, the second plan (MATCH, joins and filters in one statement,
        BM25 only for rows that pass) answers instead. Session and tag filters, narrow by
        nature, go to the second plan at once.

        When the visible scopes hold at most half of the index, the MATCH itself is
        confined to them (``termcounts.scope_filter``): FTS5 walks and scores their rows
        only. ``bm25`` weighs the scope key column 0, so it never changes a score. FTS5's
        statistics are the whole index's: when the scopes do not hold all of it, the
        chunks found are scored again over theirs (``scoped_bm25.py``, issue 25).

        Both statements fix their join order (``CROSS JOIN``: index first, then chunks,
        then memories by id). Without it, a connection that has no planner statistics yet
        (a store created by this process) walks every memory of the scope through the
        ``(scope, status, created_at)`` index instead of looking rows up by id.
        """
        match = to_fts5(keywords)
        if not match:
            return []
        newest_first = keywords.newest_first
        clause, params = self._scope_clause(scopes)
        where, extra = self._filter_sql(query, now)
        filters = " AND ".join([clause, *where])
        filter_params = [*params, *extra]
        stopped = [False]
        try:
            # one snapshot and one connection for both plans (the time limit is set on it)
            with self.snapshot(), self._reading() as conn, time_limit(conn, time_limit_s, stopped):
                if termcounts.confines(self._read_memo_raw, scopes):
                    # Trigger: the visible scopes hold at most half the index. Why: an
                    # unconfined MATCH walks and scores every tenant's rows. Outcome:
                    # the MATCH is confined to the scopes' keys (same hits, same scores).
                    match = f"{termcounts.scope_filter(scopes)} AND ({match})"
                # FTS5's bm25 is the whole index's: scored again over the scopes, every
                # match of theirs when they are few (issue 25, ``scoped_bm25.py``).
                stats = self._scope_stats(self._read_raw, scopes, keywords)
                wanted = limit
                if (
                    stats is not None
                    and not newest_first
                    and stats.matches_at_most <= ALL_MATCHES_MAX
                ):
                    wanted = max(limit, stats.matches_at_most)
                found = self._keyword_plans(
                    query, match, filters, filter_params, wanted, newest_first
                )
                if stats is None:
                    return found
                return self._scoped_bm25(self._read_raw, stats, found)[:limit]
        except (sqlite_driver.DatabaseError, StoreError) as exc:
            raise search_error(
                exc, self.location, keywords.expression is not None, stopped[0], time_limit_s
            ) from exc

    def session_neighbours(
        self, scopes: Sequence[str], memory_ids: Sequence[str], query: Query, now: datetime
    ) -> dict[str, builtins.list[tuple[str, bool]]]:
        """The pairs are kept until the file changes (``neighbours.py``: a search asks
        twice, for its keyword candidates and for its best hits)."""
        return neighbours.read(
            self, self._pairs, self._pairs_version(), scopes, memory_ids, query, now
        )

    def _pairs_version(self) -> Any:
        """The version neighbour pairs are kept under: inside a read view only, where it
        is free (None: read, keep nothing)."""
        role = self._role
        kept = self._pool is not None and role.reader is not None and role.version is not None
        return self._version() if kept and not role.writing else None

    def passing(
        self, scopes: Sequence[str], memory_ids: Sequence[str], query: Query, now: datetime
    ) -> set[str]:
        if not memory_ids:
            return set()
        clause, params = self._scope_clause(scopes)
        where, extra = self._filter_sql(query, now)
        filters = " AND ".join([clause, *where])
        listed = list(dict.fromkeys(memory_ids))
        return {
            r[0]
            for r in self._read(
                f"SELECT m.id FROM memories m WHERE m.id IN ({placeholders(listed)}) AND {filters}",
                [*listed, *params, *extra],
            )
        }

    def memory_chunks(self, memory_ids: Sequence[str]) -> builtins.list[ChunkMatch]:
        if not memory_ids:
            return []
        ids = list(memory_ids)
        rows = self._read(
            f"SELECT id, memory_id, seq, text FROM chunks WHERE memory_id IN ({placeholders(ids)})"
            " ORDER BY memory_id, seq",
            ids,
        )
        return [ChunkMatch(r[0], r[1], r[2], r[3], 0.0) for r in rows]

    def stats(self, scopes: Sequence[str] | None, now: datetime) -> dict[str, Any]:
        return scope_stats(self, scopes, now)

    def sessions(self, scope: str) -> builtins.list[SessionInfo]:
        rows = self._read(
            "SELECT scope, session_id, started_at, last_event_at, episode_count, "
            "consolidated_at FROM sessions WHERE scope = ? ORDER BY started_at",
            [scope],
        )
        return [
            SessionInfo(r[0], r[1], from_text(r[2]), from_text(r[3]), r[4], from_text(r[5]))
            for r in rows
        ]

    def scopes(self) -> builtins.list[str]:
        return [r[0] for r in self._read("SELECT DISTINCT scope FROM memories ORDER BY scope")]

    # ------------------------------------------------------------------ writes

    def insert(
        self, memory: Memory, chunks: Sequence[str], mentions: Sequence[Mention] = ()
    ) -> None:
        if self._depth == 0:
            raise RuntimeError("write outside atomic()")  # a bug in HiveMem, not user error
        inserts.insert_one(self._conn, memory, chunks, mentions)

    def reads_in_parallel(self) -> bool:
        return False  # a read is a function call here: threads would only add overhead

    def insert_many(self, items: Sequence[tuple[Memory, Sequence[str], Sequence[Mention]]]) -> None:
        if self._depth == 0:
            raise RuntimeError("write outside atomic()")  # a bug in HiveMem, not user error
        inserts.insert_many(self._conn, items)

    def set_status(
        self,
        scope: str,
        memory_id: str,
        status: Status,
        valid_until: datetime | None,
        now: datetime,
        updated_by: str | None,
    ) -> None:
        self._write(
            "UPDATE memories SET status = ?, valid_until = ?, updated_at = ?, "
            "updated_by = COALESCE(?, updated_by) WHERE scope = ? AND id = ?",
            [
                status.value,
                to_text(valid_until) if valid_until else None,
                to_text(now),
                updated_by,
                scope,
                memory_id,
            ],
        )

    def update(self, scope: str, memory_id: str, now: datetime, **fields: Any) -> None:
        unknown = set(fields) - UPDATABLE
        if unknown:
            raise RuntimeError(f"fields not updatable: {sorted(unknown)}")
        sets, params = ["updated_at = ?"], [to_text(now)]
        for name, value in fields.items():
            if name in TIME_FIELDS and value is not None:
                value = to_text(value)
            elif name in JSON_FIELDS:
                value = json.dumps(
                    list(value) if isinstance(value, tuple | list) else dict(value),
                    ensure_ascii=False,
                    sort_keys=True,
                )
            elif hasattr(value, "value"):
                value = value.value
            sets.append(f"{name} = ?")
            params.append(value)
        self._write(
            f"UPDATE memories SET {', '.join(sets)} WHERE scope = ? AND id = ?",
            [*params, scope, memory_id],
        )

    def touch(
        self, scopes: Sequence[str], memory_ids: Sequence[str], now: datetime, count: int = 1
    ) -> None:
        """Queue the access (``access.py``): written in batches off the read path. With
        the pool off (one connection, as before it) the counts are written at once.
        ``count=0`` sets ``last_accessed`` only."""
        if self._pool is not None:
            self._access.record(scopes, memory_ids, now, count)
            return
        # access counts are a ranking hint: a busy database skips them (reads fail open)
        with suppress(StoreError, OperationalError):
            batch = {(tuple(scopes), m): (count, now) for m in dict.fromkeys(memory_ids)}
            self._write_access(batch)

    def flush_access(self) -> int:
        """Write the queued access counts now; returns how many memories they touched."""
        return self._access.flush()

    def _write_access(self, batch: dict[tuple[tuple[str, ...], str], tuple[int, datetime]]) -> None:
        groups: dict[tuple[str, ...], list[list[Any]]] = {}
        for (scopes, memory_id), (count, when) in batch.items():
            groups.setdefault(scopes, []).append([count, to_text(when), *scopes, memory_id])
        with self.atomic():
            for scopes, rows in groups.items():
                clause, _ = self._scope_clause(scopes)
                self._conn.executemany(
                    "UPDATE memories AS m SET access_count = access_count + ?, "
                    f"last_accessed = ? WHERE {clause} AND m.id = ?",
                    rows,
                )

    def note_session(
        self, scope: str, session_id: str, when: datetime, last: datetime, episodes: int
    ) -> bool:
        """Inside a write: count a session's episodes; True when the session is new."""
        if self._depth == 0:
            raise RuntimeError("write outside atomic()")  # a bug in HiveMem, not user error
        return inserts.note_session(
            self._conn, scope, session_id, to_text(when), to_text(last), episodes
        )

    # ------------------------------------------------------------------ meta and health

    def meta(self) -> dict[str, str]:
        return dict(self._read("SELECT key, value FROM meta"))

    def set_meta(self, key: str, value: str) -> None:
        with self.atomic():
            self._write(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [key, value],
            )

    def schema_version(self) -> builtins.list[str]:
        with self._reading() as conn:
            return migrations.applied(conn)

    @property
    def maintenance(self) -> SQLiteMaintenance:  # the maintenance jobs' SQL (stateless)
        return SQLiteMaintenance(self)

    @property
    def purges(self) -> SQLitePurge:  # hard deletes (stateless)
        return SQLitePurge(self)

    @property
    def inspection(self) -> InspectionStatements:  # the web inspector's reads (stateless)
        return InspectionStatements(self)
