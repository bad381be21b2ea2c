"""One HNSW index per big scope: a scope's vector results never depend on another
scope's vectors (issue #25).

Why. With one HNSW graph over every tenant's vectors, a scoped search walks a graph
built from all of them and filters after the walk (pgvector's iterative scans go on
until enough rows of the scope passed, or ``hnsw.max_scan_tuples``): which of a scope's
true neighbours it finds depends on what other tenants stored. Near-duplicates written
by another tenant could push a scope's own neighbours out of its answer, and so tell
that tenant something about the scope's data. Measured on 50 scopes of 2,000 vectors
beside one of 20,000 (docs/postgres.md, "Tenants and the vector lane"): recall@10 0.994
against 0.951, p95 37 ms against 108 ms.

How. A scope above ``EXACT_MAX`` vectors gets a partial index of its own,
``chunk_vectors_hnsw_<hash of the scope>`` ``WHERE scope = '<scope>'``: its graph holds
that scope's vectors only. A search uses it when it is there and valid; until then the
scope is searched exactly (slower, never different). So a scope's answer is a function
of its own rows, whatever its size.

Who builds. ``CREATE INDEX CONCURRENTLY`` (writers of every scope go on meanwhile), on
a background thread of the node that saw a big scope without its index (a search, or
an upsert that made a scope big), one build at a time per database (an advisory lock).
A build that fails leaves an invalid index, dropped by the next attempt; a user without
the right to create it gets exact scans and one log line. ``doctor --repair``, a
re-index and the end of a bulk load build every missing one in the foreground.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import psycopg
from psycopg import sql

from .migrations import SCHEMA_LOCK

log = logging.getLogger("hivemem.store.postgres")

if TYPE_CHECKING:  # pragma: no cover
    from .database import PostgresDatabase

TABLE = "chunk_vectors"
PREFIX = f"{TABLE}_hnsw_"
BUILD_LOCK = SCHEMA_LOCK + 1  # one HNSW build at a time per database
_TTL = 5.0  # seconds a scope's "has its index" is trusted (another node may drop it)
_POLL_S = 0.05  # between tries of the build lock
_INDEXES_SQL = (
    "SELECT i.relname, x.indisvalid AND x.indisready FROM pg_index x "
    "JOIN pg_class i ON i.oid = x.indexrelid "
    "WHERE x.indrelid = to_regclass(%s) AND i.relname LIKE %s"
)


def index_name(scope: str) -> str:
    """The name of ``scope``'s own HNSW index (a hash: any scope, 63 bytes at most)."""
    return PREFIX + hashlib.blake2b(scope.encode(), digest_size=8).hexdigest()


def scope_literal(scope: str) -> str:
    """``scope`` as an SQL literal: the partial index's predicate, and the search's
    (the planner matches a partial index on the literal it was made with)."""
    return sql.Literal(scope).as_string(None)


class ScopeIndexes:
    """The per-scope HNSW indexes of one store's vector table."""

    def __init__(self, db: PostgresDatabase, memory_for: Callable[[int], int]) -> None:
        self._db = db
        self._memory_for = memory_for  # maintenance_work_mem (bytes) for n vectors
        self._seen: dict[str, tuple[bool, float]] = {}
        self._wanted: set[str] = set()
        self._refused: set[str] = set()  # scopes whose build this user may not run
        self._lock = threading.Lock()
        self._builder: threading.Thread | None = None
        self._paused = 0
        self.closed = False

    def forget(self) -> None:
        with self._lock:
            self._seen.clear()

    def valid(self) -> dict[str, bool]:
        """Index name -> usable, of every per-scope index there is."""
        rows = self._db._q(_INDEXES_SQL, [TABLE, PREFIX.replace("_", r"\_") + "%"])
        return {r[0]: bool(r[1]) for r in rows}

    def has(self, scope: str) -> bool:
        """Whether ``scope`` has a valid index of its own (cached ``_TTL`` seconds)."""
        now = time.monotonic()
        with self._lock:
            seen = self._seen.get(scope)
        if seen is not None and now - seen[1] < _TTL:
            return seen[0]
        found = bool(
            self._db._q(
                "SELECT EXISTS (SELECT 1 FROM pg_index x WHERE x.indexrelid = to_regclass(%s) "
                "AND x.indisvalid AND x.indisready)",
                [index_name(scope)],
            )[0][0]
        )
        with self._lock:
            self._seen[scope] = (found, now)
        return found

    def missing(self, exact_max: int) -> list[str]:
        """Scopes above ``exact_max`` vectors without a valid index of their own."""
        big = self._db._q(
            f"SELECT scope FROM {TABLE} GROUP BY scope HAVING COUNT(*) > %s ORDER BY scope",
            [exact_max],
        )
        usable = self.valid()
        return [r[0] for r in big if not usable.get(index_name(r[0]), False)]

    def drop_all(self) -> list[str]:
        """Inside a transaction (a bulk load's first step): drop every per-scope index."""
        names = list(self.valid())
        for name in names:
            self._db._x(f"DROP INDEX IF EXISTS {name}")
        self.forget()
        return names

    def want(self, scope: str) -> None:
        """Build ``scope``'s index on the background thread (started when none runs)."""
        with self._lock:
            if self.closed or self._paused or scope in self._refused or scope in self._wanted:
                return
            self._wanted.add(scope)
            if self._builder is not None and self._builder.is_alive():
                return
            self._builder = threading.Thread(
                target=self._build_wanted, name="hivemem-scope-index", daemon=True
            )
            self._builder.start()

    def wait(self, timeout: float | None = None) -> None:
        """Until the background builds asked for so far are done (tests, close)."""
        builder = self._builder
        if builder is not None:
            builder.join(timeout)

    @contextmanager
    def quiet(self) -> Iterator[None]:
        """No build runs, of this node or another, while the body drops or recreates
        the vector table's indexes (a bulk load, a re-index).

        Why not a lock wait: ``CREATE INDEX CONCURRENTLY`` waits for every transaction
        older than its snapshot, so a session blocked on the build lock (or a DDL
        transaction blocked on the table) while a build runs is a deadlock PostgreSQL
        breaks by aborting one side. So this node's builder is stopped and waited for,
        and the lock is taken by polling ``pg_try_advisory_lock`` on autocommit
        statements, none of which holds a snapshot while it waits."""
        with self._lock:
            self._paused += 1
            self._wanted.clear()
        try:
            self.wait()
            with self._db._connection() as conn:
                _take_build_lock(conn)
                try:
                    yield
                finally:
                    conn.execute("SELECT pg_advisory_unlock(%s)", [BUILD_LOCK])
        finally:
            with self._lock:
                self._paused -= 1

    def close(self) -> None:
        with self._lock:
            self.closed = True
            self._wanted.clear()
        # A short build (a scope just grown past EXACT_MAX: ~2 s) finishes; a longer one
        # is cut when the process ends and left invalid, dropped and rebuilt next time.
        self.wait(5.0)

    def _build_wanted(self) -> None:
        while True:
            with self._lock:
                if self.closed or not self._wanted:
                    self._builder = None
                    return
                scope = self._wanted.pop()
            try:
                self.build(scope)
            except Exception as exc:  # a lost connection, a closed pool: the next search asks again
                log.warning("building the vector index of a scope failed: %s", exc)

    def build(self, scope: str) -> dict[str, Any] | None:
        """Build ``scope``'s index (``CREATE INDEX CONCURRENTLY``: outside any
        transaction, writers go on) unless it has a valid one; its figures, or None
        when there was nothing to build or this user may not build it."""
        name = index_name(scope)
        started = time.perf_counter()
        with self._db._connection() as conn:
            _take_build_lock(conn)
            try:
                usable = conn.execute(
                    "SELECT x.indisvalid AND x.indisready FROM pg_index x "
                    "WHERE x.indexrelid = to_regclass(%s)",
                    [name],
                ).fetchone()
                if usable is not None and usable[0]:
                    return None
                rows = int(
                    conn.execute(
                        f"SELECT COUNT(*) FROM {TABLE} WHERE scope = %s", [scope]
                    ).fetchone()[0]
                )
                memory = self._memory_for(rows)
                conn.execute(
                    "SELECT set_config('maintenance_work_mem', %s, false)", [f"{memory >> 20}MB"]
                )
                try:
                    if usable is not None:  # an invalid one, of a build that failed
                        conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
                    conn.execute(
                        f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {TABLE} "
                        "USING hnsw (embedding vector_cosine_ops) "
                        f"WHERE scope = {scope_literal(scope)}"
                    )
                except psycopg.errors.InsufficientPrivilege:
                    with self._lock:
                        self._refused.add(scope)
                    log.warning(
                        "this database user may not build %s: the scope is searched exactly "
                        "(build it as the table's owner: hivemem doctor --repair)",
                        name,
                    )
                    return None
                finally:
                    conn.execute("RESET maintenance_work_mem")
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", [BUILD_LOCK])
        seconds = time.perf_counter() - started
        with self._lock:
            self._seen[scope] = (True, time.monotonic())
        log.info("built %s over %s vectors in %.1f s", name, rows, seconds)
        return {
            "vectors": rows,
            "seconds": round(seconds, 1),
            "maintenance_work_mem_mb": memory >> 20,
        }


def _take_build_lock(conn: Any) -> None:
    """Take the session's build lock, polling (see ``ScopeIndexes.quiet``)."""
    while not conn.execute("SELECT pg_try_advisory_lock(%s)", [BUILD_LOCK]).fetchone()[0]:
        time.sleep(_POLL_S)
