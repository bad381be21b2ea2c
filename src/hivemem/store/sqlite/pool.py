"""Reads in parallel on one SQLite file: a small pool of WAL read connections beside the
one writer connection (datasette's ``Database``: one write connection, a read
connection per worker thread).

Contract (issue #13, item 5):

- **One writer.** The backend's own connection, guarded by its lock, does every write
  (``atomic()``). Reads never take that lock, so a search never waits for a write, and
  sixteen HTTP readers do not queue behind one another.
- **Which connection a read uses** (``ReadRouting.reading``), in this order: the writer
  connection when this thread is inside a write transaction (a write reads its own
  uncommitted rows); the connection bound to this thread by ``snapshot()`` (one search
  reads one consistent snapshot, start to end, on one connection); otherwise a pooled
  connection for just that statement.
- **Read your writes.** Pooled connections run in autocommit mode, so each read (or each
  snapshot) starts a new WAL read transaction, which sees every transaction committed
  before it began: a write acknowledged to a client is visible to the next read through
  any connection of the pool.
- **Read-only.** Pooled connections run ``PRAGMA query_only``: a bug that writes through
  one fails loudly instead of racing the writer.
- **Where the pool is off** (``read_connections = 0``, or a ``:memory:`` store, whose
  database exists on its one connection only), every read goes through the writer
  connection under its lock, as before.
- **The WAL stays bounded.** SQLite restarts the WAL only when no reader holds an older
  snapshot, which a steady stream of overlapping searches never allows: under 16 HTTP
  clients it grew to 70 MB in 30 s. So every ``WAL_CHECK_EVERY`` commits the writer looks
  at its size and past ``WAL_RESTART_BYTES`` holds back new reads, waits for those in
  flight (``WAL_DRAIN_S`` at most, else it tries again later), and runs
  ``wal_checkpoint(TRUNCATE)``, which then finds no reader and empties the WAL; reads and
  writes wait about one search's length, once per 16 MB of WAL. Other processes'
  readers (``serve-http --workers``) are waited for by the checkpoint itself, up to
  ``WAL_DRAIN_S``.
- **Closed store.** ``close()`` closes the idle connections at once and each busy one when
  its reader hands it back; a read after close is ``StoreError`` (the backend checks).

Connections are opened on first need (a store that never reads in parallel opens none)
and each passes through the backend's ``prepare`` hook (sqlite-vec, busy timeout), the
way datasette passes every connection through ``prepare_connection``.
"""

from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from ...errors import StoreError
from .failures import store_error

log = logging.getLogger("hivemem.store.sqlite")

# The WAL past which the writer restarts it (see ``PooledReads._bound_wal``), and how often
# (in commits) it looks at the WAL's size.
WAL_RESTART_BYTES = 16 * 1024 * 1024
WAL_CHECK_EVERY = 64
# The writer's automatic checkpoint, in WAL pages (SQLite's default: 1,000). Each copies
# every page the WAL holds back into the file; a write dirties ~27 pages, many the same
# ones (index roots, the keyword index's structure, the scope counts), so checkpointing
# a third as often copies those once instead of three times: 3-8% of a write's CPU
# (issue 24). Kept under WAL_RESTART_BYTES (4 kB pages: ~12 MB), so the bound above
# still acts only when readers keep SQLite from restarting the WAL.
WAL_AUTOCHECKPOINT_PAGES = 3_000
# Counters of snapshots that began after a commit they were not noted under: below
# any real one (``PRAGMA data_version`` counts up from 1), never used twice.
_UNSETTLED = itertools.count(-1, -1)
_MEMO_MAX = 256  # statements ``_read_memo`` keeps for one version of the file
WAL_DRAIN_S = 2.0  # longest wait for the searches in flight before a restart is skipped


class ReadPool:
    """Up to ``2 × size`` read connections to one file (``size`` for snapshots), lent to
    one thread at a time."""

    def __init__(self, location: str, connect: Callable[[], Any], size: int) -> None:
        if size < 1:
            raise ValueError("a read pool needs at least one connection")
        self.location = location
        self.size = size
        self._connect = connect
        self._idle: list[Any] = []
        self._opened = 0
        self._snapshots = 0  # connections lent to snapshots now
        self._lent = 0  # connections lent now
        self._waiting = [0, 0]  # threads waiting for a loan: [single statement, snapshot]
        self._generation = 0  # bumped by ``reset``: older connections are closed on return
        self._born: dict[int, int] = {}  # id(connection) -> its generation
        # id(connection) -> (its own data_version, the pool's) as a snapshot of it last
        # settled (``PooledReads._settle``); dropped with the connection
        self.settled: dict[int, tuple[int, int]] = {}
        self._draining = False  # the writer waits for every connection to come back
        self._closed = False
        # One lock, three queues of waiters: a loan that comes back wakes one waiter for
        # a single statement and one for a snapshot (not all of them: sixteen threads
        # woken per release, each taking the GIL to find nothing and sleep again, were
        # ~10% of a loaded server's Python time), and the writer draining the pool.
        mutex = threading.Lock()
        self._cond = threading.Condition(mutex)  # the pool's state; drained() waits on it
        self._for_single = threading.Condition(mutex)
        self._for_snapshot = threading.Condition(mutex)
        self._watcher: Any = None
        self._watch_lock = threading.Lock()
        self.tracer: Callable[[str], None] | None = None  # see ``PooledReads.tracing``
        self._traced = False  # ``trace`` was ever called: a lend sets the current tracer

    def acquire(self, *, snapshot: bool = False) -> Any:
        """An idle connection, a new one while fewer than ``2 × size`` are open, else wait
        for one to come back. At most ``size`` are lent to snapshots (a whole search
        holds one): the other half stays for single statements, so the writer thread's
        reads before its transaction (a duplicate check, a key's current row) never
        queue behind whole searches.

        First come, first served: a thread that has not waited yet queues behind those
        that wait for the same kind of loan. Else a thread that hands a connection back
        and asks again at once (a loop of searches) took it before the waiter it woke
        could run, and a third thread's search waited for as long as that loop went on
        (``test_parallel_reads``: two threads holding snapshots back to back)."""
        kind = self._for_snapshot if snapshot else self._for_single
        waited = False
        with self._cond:
            while True:
                if self._closed:
                    raise StoreError(
                        f"the store {self.location} is closed; open it again to use it"
                    )
                queued = not waited and self._waiting[snapshot] > 0
                if not (self._draining or queued or (snapshot and self._snapshots >= self.size)):
                    if self._idle:
                        conn = self._idle.pop()
                        self._snapshots += snapshot
                        self._lent += 1
                        if self._traced:  # lent while ``trace`` changed: its tracer now
                            conn.set_trace_callback(self.tracer)
                        self._next_in_line(snapshot)
                        return conn
                    if self._opened < 2 * self.size:
                        self._opened += 1
                        self._snapshots += snapshot
                        self._lent += 1
                        generation = self._generation
                        self._next_in_line(snapshot)
                        break
                self._waiting[snapshot] += 1
                try:
                    kind.wait()
                except BaseException:  # (Ctrl-C) its wake-up, if it had one, goes on
                    self._waiting[snapshot] -= 1
                    self._next_in_line(snapshot)
                    raise
                self._waiting[snapshot] -= 1
                waited = True
        try:
            conn = self._connect()
            if self.tracer is not None:
                conn.set_trace_callback(self.tracer)
            with self._cond:
                self._born[id(conn)] = generation
            return conn
        except BaseException:
            with self._cond:
                self._opened -= 1
                self._snapshots -= snapshot
                self._lent -= 1
                self._wake_all()
            raise

    def _next_in_line(self, snapshot: bool) -> None:
        """Under the lock, after a loan: the next waiter of that kind looks too, where
        another such loan can be made now (it queued behind this one)."""
        free = bool(self._idle) or self._opened < 2 * self.size
        if self._waiting[snapshot] and free and not (snapshot and self._snapshots >= self.size):
            (self._for_snapshot if snapshot else self._for_single).notify()

    def release(self, conn: Any, *, snapshot: bool = False, broken: bool = False) -> None:
        """Hand ``conn`` back (closed instead when the pool is closed or it is broken)."""
        with self._cond:
            self._snapshots -= snapshot
            self._lent -= 1
            stale = self._born.get(id(conn)) != self._generation
            if self._closed or broken or stale:
                self._born.pop(id(conn), None)
                self.settled.pop(id(conn), None)
                self._opened -= 1
                with suppress(Exception):
                    conn.close()
            else:
                if conn.in_transaction:  # a reader left a snapshot open: end it
                    with suppress(Exception):
                        conn.execute("ROLLBACK")
                self._idle.append(conn)
            self._for_single.notify()
            if self._snapshots < self.size:
                self._for_snapshot.notify()
            if self._draining:
                self._cond.notify_all()

    def _wake_all(self) -> None:
        """Under the lock: every waiter looks again (the pool closed, was reset, or
        stopped draining)."""
        self._cond.notify_all()
        self._for_single.notify_all()
        self._for_snapshot.notify_all()

    def reset(self) -> None:
        """Close every connection (idle ones now, lent ones when they come back): FTS5
        caches its index structure per connection, and after a ``rebuild`` on the writer
        a read connection went on reporting the old index as malformed."""
        with self._cond:
            self._generation += 1
            idle, self._idle = self._idle, []
            self._opened -= len(idle)
            for conn in idle:
                self._born.pop(id(conn), None)
                self.settled.pop(id(conn), None)
            self._wake_all()
        for conn in idle:
            with suppress(Exception):
                conn.close()

    @contextmanager
    def drained(self, timeout_s: float) -> Iterator[bool]:
        """Hold back new loans and wait (up to ``timeout_s``) for every lent connection to
        come back; yields whether they all did. Loans resume on exit."""
        deadline = time.monotonic() + timeout_s
        try:  # (an exception in the wait, Ctrl-C, must not leave the loans held back)
            with self._cond:
                self._draining = True
                while self._lent > 0 and (left := deadline - time.monotonic()) > 0:
                    self._cond.wait(left)
                empty = self._lent == 0
            yield empty
        finally:
            with self._cond:
                self._draining = False
                self._wake_all()

    def data_version(self) -> int:
        """``PRAGMA data_version`` of one connection kept for it alone: it changes when
        any other connection commits, this process's writer included (a change reported
        too often costs a re-read; one missed would not be safe)."""
        with self._watch_lock:
            if self._closed:
                raise StoreError(f"the store {self.location} is closed; open it again to use it")
            if self._watcher is None:
                self._watcher = self._connect()
                if self.tracer is not None:
                    self._watcher.set_trace_callback(self.tracer)
            return int(self._watcher.execute("PRAGMA data_version").fetchone()[0])

    def close(self) -> None:
        with self._watch_lock:
            watcher, self._watcher = self._watcher, None
        if watcher is not None:
            with suppress(Exception):
                watcher.close()
        with self._cond:
            self._closed = True
            idle, self._idle = self._idle, []
            self._opened -= len(idle)
            self._wake_all()
        for conn in idle:
            with suppress(Exception):
                conn.close()

    def trace(self, callback: Callable[[str], None] | None) -> None:
        """``callback`` gets every statement of the idle connections, the change-counter
        watcher and those opened or lent from now on (None: no longer). A connection lent
        out as it begins (the embedding worker's) gets it at its next lend: a search that
        took it next went untraced, and statement counts in tests came up short."""
        with self._cond:
            self._traced = True
            self.tracer = callback
            for conn in self._idle:
                conn.set_trace_callback(callback)
        with self._watch_lock:
            if self._watcher is not None:
                self._watcher.set_trace_callback(callback)

    @property
    def opened(self) -> int:
        """How many connections are open now (idle or lent)."""
        return self._opened


class ThreadRole(threading.local):
    """What the current thread holds of one backend: the depth of its write transaction
    (> 0 while it owns the writer connection) and the read connection a snapshot bound."""

    writing = 0
    reader: Any = None
    version: int | None = None  # the snapshot's change counter (``PooledReads._settle``)
    # The counter this thread's last search view began under, and when the view ended
    # (``time.monotonic``): the vault's check of that search's output (``viewed_version``).
    viewed: tuple[int, float] | None = None


class PooledReads:
    """The read routing of ``SQLiteBackend`` (a mixin; see the module docstring). The
    backend provides ``_conn`` (the writer connection), ``_lock`` (the write lock),
    ``_role`` (a ``ThreadRole``), ``_pool`` (a ``ReadPool`` or None), ``location``,
    ``closed`` and ``_driver_errors``."""

    _conn: Any
    _lock: Any
    _role: ThreadRole
    _pool: ReadPool | None
    location: str
    _read: Any
    _commits = 0  # commits since the store opened (for the WAL check)
    _busy_timeout_ms = 10_000
    _driver_errors: tuple[type[BaseException], ...]
    _version: Any  # the backend's: (data_version, own commits)
    _cache_lock: Any
    _memo: dict[tuple[str, tuple[Any, ...]], list[Any]] | None = None
    _memo_version: Any = None

    @property
    def closed(self) -> bool:  # the host's
        raise NotImplementedError

    @contextmanager
    def _reading(self) -> Iterator[Any]:
        """The connection this thread reads through now (see the module docstring)."""
        role = self._role
        if role.writing or self._pool is None:
            with self._lock:
                yield self._conn  # a closed store's stand-in raises StoreError on use
            return
        if role.reader is not None:
            yield role.reader
            return
        with self._lent() as conn:
            yield conn

    @contextmanager
    def _lent(self, *, snapshot: bool = False) -> Iterator[Any]:
        assert self._pool is not None
        if self.closed:
            raise StoreError(f"the store {self.location} is closed; open it again to use it")
        try:
            conn = self._pool.acquire(snapshot=snapshot)
        except self._driver_errors as exc:
            raise store_error(exc, self.location, "read") from exc
        try:
            yield conn
        finally:
            self._pool.release(conn, snapshot=snapshot)

    def _read_memo(
        self, sql: str, params: Sequence[Any] = (), *, raw: bool = False, view_only: bool = False
    ) -> list[Any]:
        """``_read``, kept until the file changes: for the small statements a search asks
        more than once, or every search asks while nothing is written (the scopes' chunk
        counts, the vector log's end, the meta rows). Keyed on the file's change counter
        and this connection's commits (``_version``: inside a search's read view, the
        counter its snapshot began under, so no extra statement); never inside a write
        transaction, whose own uncommitted rows that counter does not see. The rows are
        shared: callers must not change them. ``raw`` as ``_read``'s. ``view_only``: kept
        only inside a read view (elsewhere the counter itself is a statement, as much as
        the read: the vector queue, read before the view and again inside it)."""
        role = self._role
        viewed = role.reader is not None and role.version is not None
        if role.writing or (view_only and not viewed):
            return list(self._read(sql, params, raw=raw))
        version = self._version()
        key = (sql, tuple(params))
        with self._cache_lock():
            memo = self._memo
            if memo is None or self._memo_version != version or len(memo) > _MEMO_MAX:
                memo = self._memo = {}
                self._memo_version = version
            rows = memo.get(key)
        if rows is None:
            rows = self._read(sql, params, raw=raw)
            if not self._still(version):
                return rows  # read across a commit: not the rows of ``version``
            with self._cache_lock():
                if self._memo_version == version and self._memo is not None:
                    self._memo[key] = rows
        return rows

    def _read_memo_raw(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        """``_read_memo`` leaving driver errors to the caller (as ``_read_raw``)."""
        return self._read_memo(sql, params, raw=True)

    @contextmanager
    def tracing(self, callback: Callable[[str], None]) -> Iterator[None]:
        """``callback(sql)`` for every statement run inside, on any connection of this
        store (the writer and the read pool; sqlite3's ``set_trace_callback``), on
        whichever thread runs it: the measuring seam of ``hivemem bench``'s statements
        per search. A connection lent out as it begins is traced from its next lend."""
        with self._lock:
            self._conn.set_trace_callback(callback)
        if self._pool is not None:
            self._pool.trace(callback)
        try:
            yield
        finally:
            if self._pool is not None:
                self._pool.trace(None)
            with self._lock:
                self._conn.set_trace_callback(None)

    @contextmanager
    def on_writer(self) -> Iterator[None]:
        """Reads inside go through the writer connection, outside any transaction: for the
        statements a read-only connection refuses (FTS5's integrity-check command)."""
        with self._lock:
            self._role.writing += 1
            try:
                yield
            finally:
                self._role.writing -= 1

    def data_version(self) -> int:
        """A number that changes when another connection has committed to the file
        (SQLite's ``PRAGMA data_version``; with the pool, this process's writer counts as
        another: a change may be reported that was this process's own)."""
        if self._pool is None or self._role.writing:
            return int(self._read("PRAGMA data_version")[0][0])
        if self._role.reader is not None and self._role.version is not None:
            return self._role.version  # inside a snapshot: the counter it began under
        return self._watched()

    def _watched(self) -> int:
        """The pool's own change counter, as the file is now."""
        assert self._pool is not None
        try:
            return self._pool.data_version()
        except self._driver_errors as exc:
            raise store_error(exc, self.location, "read") from exc

    def _still(self, version: Any) -> bool:
        """Whether rows read just now may be kept under ``version`` (``_version()``, read
        before them): always inside a settled snapshot, whose reads are all that
        version's; elsewhere only if no commit has come since (a read outside a snapshot
        may see a commit the counter read before it did not count)."""
        role = self._role
        if role.reader is not None and role.version is not None and not role.writing:
            return True
        return self._current_version() == version

    def _current_version(self) -> tuple[int, int]:
        """``_version`` as the file is now, whatever view this thread reads in."""
        if self._pool is None or self._role.writing:
            return self._version()
        return self._watched(), self._commits

    def writer_version(self) -> int | None:
        """``PRAGMA data_version`` of the writer connection: it moves only when another
        connection commits, never for this store's own writes (which, with the pool,
        move every pooled connection's). ``None`` while another thread holds the writer:
        the caller asks ``data_version`` then, as a read never waits for a write."""
        if not self._lock.acquire(blocking=False):
            return None
        try:
            return int(self._conn.execute("PRAGMA data_version").fetchone()[0])
        except self._driver_errors as exc:
            raise store_error(exc, self.location, "read") from exc
        finally:
            self._lock.release()

    def _bound_wal(self) -> None:
        """After a commit, under the write lock: restart the WAL when readers let it grow
        past ``WAL_RESTART_BYTES`` (see the module docstring). A checkpoint that fails or
        finds the file busy is skipped; the next check tries again."""
        if self._pool is None or self._role.writing or self._role.reader is not None:
            return  # one connection: SQLite's own auto-checkpoint restarts the WAL (and a
            # thread that holds a snapshot itself must not wait for its own to end)
        if self._commits % WAL_CHECK_EVERY:  # the host's _commit counted this commit
            return
        try:
            if os.path.getsize(f"{self.location}-wal") < WAL_RESTART_BYTES:
                return
        except OSError:
            return
        # Searches in flight finish, new ones wait for the restart (a few ms with no
        # reader left). Another process's readers (serve-http --workers) cannot be held
        # back from here: the checkpoint waits for their snapshots instead, WAL_DRAIN_S
        # at most (TRUNCATE holds the write lock, so no frame is added meanwhile, and
        # their new snapshots read the file alone once it is backfilled).
        with self._pool.drained(WAL_DRAIN_S) as empty:
            if not empty:
                return
            try:
                self._conn.execute(f"PRAGMA busy_timeout = {int(WAL_DRAIN_S * 1000)}")
                try:
                    self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                finally:
                    self._conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
            except self._driver_errors as exc:  # a busy or full file: the data is safe
                log.warning("could not restart the WAL of %s: %s", self.location, exc)

    def _reset_readers(self) -> None:
        """After a rebuild of the keyword index: read connections start afresh."""
        if self._pool is not None:
            self._pool.reset()

    @contextmanager
    def search_view(
        self,
        before: Callable[[], object] | None = None,
        queued: Callable[[], bool] | None = None,
    ) -> Iterator[None]:
        """What one search reads through: with the pool, a snapshot (one read connection
        for the whole search); with the pool off, nothing (each statement takes the lock,
        as before the pool: a search must not hold the one connection for its length).

        ``before``: the facade's embedding of the scopes' newest queued chunks, which
        the search must then see; it runs outside any snapshot (it writes, and may wait
        for the writer: a lent snapshot would pin the WAL and hold back the writer's
        drain of the pool). ``queued``: whether ``before`` has anything to do, asked
        first inside the snapshot, where its read of the queue is kept (no statement
        while nothing was written); only when it says yes is that snapshot left,
        ``before`` run, and a new one begun that sees the vectors it stored."""
        role = self._role
        role.viewed = None
        if self._pool is None or role.writing or role.reader is not None:
            if before is not None:
                before()
            if self._pool is None:
                yield
            else:
                with self.snapshot():  # already stable: nothing to begin
                    yield
            return
        version: int | None = None
        if before is not None and queued is None:  # nothing to ask first: it runs now
            before()
            before = None
        with self.snapshot():
            work = before is not None and queued is not None and queued()
            if not work:
                version = role.version
                yield
        if work:
            assert before is not None
            before()
            with self.snapshot():
                version = role.version
                yield
        # (not after a failed search: no output)
        role.viewed = None if version is None or version < 0 else (version, time.monotonic())

    def viewed_version(self, since: float) -> int | None:
        """The change counter this thread's last search view began under, if the view
        ended at ``since`` (``time.monotonic``) or later, else ``None``; taken once (a
        second call answers ``None``). The vault's check of that search's output
        (``vault.py``): where the counter has not moved since the vault last looked, no
        connection has committed in between, and the secrets it holds are the
        snapshot's, the statement that check was is saved."""
        role = self._role
        viewed, role.viewed = role.viewed, None
        if viewed is None or viewed[1] < since:
            return None
        return viewed[0]

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Every read inside sees one snapshot: inside a write, the write's own view;
        otherwise a WAL read transaction on one connection bound to this thread, which
        blocks no writer (with the pool off: on the writer connection, under its lock).
        With the pool, the snapshot's change counter (``_settle``) keys the reads kept
        inside it."""
        role = self._role
        if role.writing or role.reader is not None:  # the view is already stable
            yield
            return
        if self._pool is None:
            with self._lock:
                if self._conn.in_transaction:  # this thread's own snapshot, held on it
                    yield
                    return
                with self._read_transaction(self._conn):
                    yield
            return
        with self._lent(snapshot=True) as conn, self._read_transaction(conn):
            role.reader, role.version = conn, self._settle(conn)
            try:
                yield
            finally:
                role.reader, role.version = None, None

    def _settle(self, conn: Any) -> int:
        """The change counter of the snapshot ``conn`` has just begun (and begins now):
        the pool's counter (``PRAGMA data_version`` of its watcher connection) of exactly
        the file this snapshot sees, or a negative number of its own that keys nothing.

        Every kept read is keyed on it, so it must be the snapshot's own: a counter read
        before the snapshot began missed a commit in between (the kept chunk totals
        counted one chunk of a scope where the snapshot found two, and BM25's idf took
        the log of a negative number: HTTP 500 under two serve-http processes); read
        after, it counted a commit the snapshot did not see (kept rows then hid it from
        every later search; tests/test_read_caches.py). The connection's own
        ``data_version``, asked first, begins the snapshot and moves only when it finds
        the file changed: unmoved since it last settled, the snapshot is that one's. Else
        the pool's counter is read between this snapshot and a new one on the same
        connection; if that one finds nothing changed either, the counter is theirs."""
        pool = self._pool
        assert pool is not None
        try:
            own = int(conn.execute("PRAGMA data_version").fetchone()[0])
            known = pool.settled.get(id(conn))
            if known is not None and known[0] == own:
                return known[1]  # nothing written since: no statement more
            counter = self._watched()
            conn.execute("COMMIT")
            conn.execute("BEGIN DEFERRED")
            again = int(conn.execute("PRAGMA data_version").fetchone()[0])
        except self._driver_errors as exc:
            raise store_error(exc, self.location, "read") from exc
        if again != own:  # a commit came in between: this snapshot keys nothing
            return next(_UNSETTLED)
        pool.settled[id(conn)] = (own, counter)
        return counter

    @contextmanager
    def _read_transaction(self, conn: Any) -> Iterator[None]:
        try:
            conn.execute("BEGIN DEFERRED")
        except self._driver_errors as exc:
            raise store_error(exc, self.location, "read") from exc
        try:
            yield
        finally:  # a read transaction: ending it cannot lose anything; on a damaged
            # file it may fail, and must not hide the error that ended the block
            with suppress(*self._driver_errors):
                conn.execute("COMMIT")
            if conn.in_transaction:
                with suppress(*self._driver_errors):
                    conn.execute("ROLLBACK")
