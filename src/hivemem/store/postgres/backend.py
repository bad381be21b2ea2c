"""``PostgresBackend``: the storage protocol of ``hivemem.store.protocols`` on PostgreSQL.

Connections. A psycopg-pool ``ConnectionPool`` of autocommit connections (``pool.py``:
its reconnection backoff capped), each checked on checkout (a restarted server is
reconnected to, not reported). A read outside a
transaction borrows a connection for one statement. ``atomic()`` pins one connection to
the calling thread for the whole transaction (nested calls are savepoints), and so does
``snapshot()`` (a ``REPEATABLE READ READ ONLY`` transaction): every read on that thread
inside them goes through the pinned connection and sees what the transaction sees.

Concurrency. Transactions are ``READ COMMITTED``. The write rules read before they
write (the active row of a key, a keyless duplicate), so two nodes writing one key must
not both read the same "current" row: inside a write, ``by_key`` and ``find_duplicate``
first take a transaction-scoped advisory lock on (scope, key) or (scope, kind, hash),
so the second writer waits for the first to commit and then reads its row, exactly as
SQLite's single writer would. The partial unique index ``memories_active_key`` still
holds the rule if any path forgets the lock (its violation becomes ``Conflict``). The
backend's own short transactions (access counts, vector upserts, meta) are retried on
serialization failures and deadlocks; a caller's transaction that the server aborts (a
deadlock victim, a serialization failure, a lock timeout, the connection lost before
the commit) fails with ``TryAgain`` (``transient.py``), which the unit of work that
opened it runs again (``hivemem.write.retry``): its body cannot be re-run from here.

Secrets. ``location`` is the URL with its password replaced by ``***``; connection
errors are translated to one line naming the fix, with any password scrubbed from them.

SQL. Methods here write PostgreSQL SQL (``%s``). ``_read``/``_write`` also accept the
``?`` placeholders of the SQLite helpers (vault, tokens): their SQL is portable, so
they run unchanged on this backend.
"""

from __future__ import annotations

import builtins
import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from datetime import datetime
from typing import Any, TypeVar

import psycopg

from ...clock import from_text, to_text
from ...errors import Conflict, StoreError, TryAgain
from ...providers.entities import Mention
from ...types import ListFilter, Memory, Query, Status
from .. import pool_reads
from ..protocols import SessionInfo
from ..resolutions import Resolutions
from ..rows import COLUMNS, JSON_FIELDS, SELECT, TIME_FIELDS, UPDATABLE, row_to_memory
from ..rows import INSERT as SQLITE_INSERT
from ..stats import scope_stats
from . import (
    NotOnPostgres,
    int_array,
    migrations,
    postings,
    qmark,
    redact,
    secrets_of,
    text_array,
)
from .entities import PgEntityIndex, link_mentions
from .extras import PostgresVault
from .inspect import PgInspection
from .keyword import KeywordMixin
from .maintenance import PgMaintenance
from .opening import connect_error as connect_error
from .opening import prepare
from .pool import Pool
from .portable import Portable
from .purge import PgPurge
from .server import server_health
from .transient import translate
from .vectors import PgVectorIndex, register_types
from .writes import insert_many

R = TypeVar("R")
INSERT = SQLITE_INSERT.replace("?", "%s")
_ASYNC_COMMIT = "SELECT set_config('synchronous_commit', 'off', true)"


def _lock_key(*parts: str) -> int:
    """A signed 64-bit advisory lock key for ``parts`` (stable across nodes)."""
    digest = hashlib.blake2b("\x1f".join(parts).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresBackend(KeywordMixin):
    """See ``hivemem.store.protocols.Backend`` for the contract of each method."""

    def __init__(
        self, url: str, *, pool_size: int = 8, timeout_s: float = 10.0, create: bool = True
    ) -> None:
        self.location = redact(url)
        self._url = url
        self._local = threading.local()
        # ``create=False``: a database with no HiveMem schema is ``NotAStore``, unchanged.
        self.created = prepare(url, timeout_s, create=create)
        self._pool = Pool(
            url,
            min_size=1,
            max_size=max(1, pool_size),
            kwargs={"autocommit": True},
            configure=register_types,
            timeout=timeout_s,
            open=False,
            name="hivemem",
        )
        try:
            self._pool.open(wait=True, timeout=timeout_s)
        except Exception as exc:
            self._pool.close()
            raise connect_error(exc, url) from None
        self.vectors = PgVectorIndex(self)
        self.entities = PgEntityIndex(self)
        self.maintenance = PgMaintenance(self)
        self.purges = PgPurge(self)
        self.inspection = PgInspection(self)
        self.resolutions = Resolutions(self)
        KeywordMixin.__init__(self)

    # ------------------------------------------------------------------ connections

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """The thread's pinned connection inside a transaction, else one from the pool."""
        held = getattr(self._local, "conn", None)
        if held is not None:
            self._flush()
            yield held
            return
        try:
            with self._pool.connection() as conn:
                yield conn
        except psycopg.OperationalError as exc:
            raise self._lost(exc) from None

    def _lost(self, exc: Exception, *, at_commit: bool = False) -> StoreError:
        """The error for a driver failure: ``TryAgain`` when it is passing."""
        return translate(exc, self.location, secrets_of(self._url), at_commit=at_commit)

    def _q(self, sql: str, params: Any = (), *, prepare: bool | None = None) -> list[Any]:
        """Rows of one statement (PostgreSQL placeholders). ``prepare=False``: never a
        server-side prepared statement, so never a generic plan (psycopg prepares a
        statement on its 5th run on a connection; see ``keyword_search``)."""
        for attempt in (1, 2):
            try:
                with self._connection() as conn:
                    cur = conn.execute(sql, params, prepare=prepare)
                    return cur.fetchall() if cur.description else []
            except psycopg.DataError as exc:
                # PostgreSQL text cannot hold NUL, so no stored row can equal a value
                # with one: SQLite finds nothing for it, and so does this backend.
                if "NUL" in str(exc) and any("\x00" in str(p) for p in params):
                    return []
                raise
            except TryAgain as exc:
                # A pooled connection the server dropped (a restart): the pool discards
                # it, and a read outside a transaction is safe to run again once.
                if (
                    exc.reason != "connection"
                    or attempt == 2
                    or getattr(self._local, "conn", None) is not None
                ):
                    raise
                self._pool.check()  # drops every idle connection the server closed
        raise AssertionError("unreachable")

    def _q_batch(self, statements: Sequence[tuple[str, Any]]) -> list[list[Any]]:
        """The rows of each statement, sent together in pipeline mode: one round trip.
        Outside a transaction they share one implicit transaction (so ``set_config(…,
        true)`` in one holds for the next, as ``SET LOCAL``); inside a caller's
        transaction they are part of it."""
        for attempt in (1, 2):
            try:
                with self._connection() as conn, conn.pipeline() as pipeline:
                    cursors = [conn.execute(sql, params) for sql, params in statements]
                    pipeline.sync()  # one Sync after them all: the results are in
                    return [cur.fetchall() if cur.description else [] for cur in cursors]
            except TryAgain as exc:
                if (
                    exc.reason != "connection"
                    or attempt == 2
                    or getattr(self._local, "conn", None) is not None
                ):
                    raise
                self._pool.check()  # a connection the server dropped, as in ``_q``
        raise AssertionError("unreachable")

    def _x(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """One write statement inside ``atomic()``; returns the cursor. Statements
        ``_defer``red before it go to the server with it, in one round trip."""
        conn = self._writer()
        pending = self._local.pending
        if not pending:
            return conn.execute(sql, params)
        self._local.pending = []
        with conn.pipeline():
            for deferred in pending:
                conn.execute(*deferred)
            cursor = conn.execute(sql, params)
        return cursor

    def _defer(self, sql: str, params: Sequence[Any] = ()) -> None:
        """A write statement inside ``atomic()`` whose result nobody reads: sent with
        the transaction's next statement (or before its commit), in one pipeline. Its
        error, if any, is raised there, still inside the transaction."""
        self._writer()
        self._local.pending.append((sql, params))

    def _flush(self) -> None:
        """Send the deferred statements now (before anything else uses the connection)."""
        pending = getattr(self._local, "pending", None)
        if pending:
            self._local.pending = []
            conn = self._local.conn
            with conn.pipeline():
                for deferred in pending:
                    conn.execute(*deferred)

    def _writer(self) -> Any:
        conn = getattr(self._local, "conn", None)
        if conn is None or self._local.mode != "write":
            raise RuntimeError("write outside atomic()")  # a bug in HiveMem
        return conn

    def _read(self, sql: str, params: Sequence[Any] = (), *, raw: bool = False) -> list[Any]:
        """``_q`` for SQL written with SQLite's ``?`` placeholders (portable helpers)."""
        return self._q(qmark(sql), params)

    def _write(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self._x(qmark(sql), params)

    def reads_in_parallel(self) -> bool:
        """Outside a transaction on this thread: each lane's reads are round trips that
        another pooled connection can serve meanwhile."""
        return getattr(self._local, "conn", None) is None

    def in_write(self) -> bool:
        return getattr(self._local, "mode", None) == "write"

    # ------------------------------------------------------------------ transactions

    @contextmanager
    def atomic(self) -> Iterator[None]:
        local = self._local
        conn = getattr(local, "conn", None)
        if conn is not None:
            if local.mode != "write":
                raise RuntimeError("write inside snapshot()")  # a bug in HiveMem
            self._flush()
            try:
                with conn.transaction():  # a savepoint
                    yield
                    self._flush()
            except BaseException:
                local.pending = []  # deferred inside the savepoint: rolled back with it
                raise
            return
        ran = False  # the body finished: an error after it is met while committing
        try:
            with ExitStack() as stack:
                local.conn, local.mode, local.pending = self._begin(stack), "write", []
                try:
                    yield
                    self._flush()  # before the commit: its errors are the body's
                    ran = True
                finally:
                    local.conn = local.mode = local.pending = None
        except psycopg.OperationalError as exc:  # deadlocks and serialization too
            raise self._lost(exc, at_commit=ran) from None

    def _begin(self, stack: ExitStack) -> Any:
        """A pooled connection in a new transaction, entered on ``stack``. A connection
        the server dropped (a restart, an idle timeout) fails at ``BEGIN``, before the
        caller's body has run: it is discarded and a fresh one tried, once."""
        for attempt in (1, 2):
            inner = ExitStack()
            try:
                conn = inner.enter_context(self._pool.connection())
                inner.enter_context(conn.transaction())
            except psycopg.OperationalError as exc:
                inner.__exit__(type(exc), exc, exc.__traceback__)  # the pool drops it
                if attempt == 2:
                    raise
                self._pool.check()  # and every other idle one the server closed
                continue
            stack.enter_context(inner)
            return conn
        raise AssertionError("unreachable")

    def in_read_transaction(self, fn: Callable[[Any], R]) -> R:
        """``fn(connection)`` inside a transaction (for ``SET LOCAL``): the caller's when
        there is one (as a savepoint), else a new one on a live pooled connection."""
        held = getattr(self._local, "conn", None)
        try:
            if held is not None:
                self._flush()
                with held.transaction():
                    return fn(held)
            with ExitStack() as stack:
                return fn(self._begin(stack))
        except psycopg.OperationalError as exc:
            raise self._lost(exc) from None

    def _retrying(self, fn: Callable[[], R], attempts: int = 5) -> R:
        """Run ``fn`` (which opens its own ``atomic()``) again on a serialization failure
        or deadlock; the backend's own short transactions use it."""
        if getattr(self._local, "conn", None) is not None:
            return fn()  # inside a caller's transaction: its outcome is the caller's
        for attempt in range(attempts):
            try:
                return fn()
            except TryAgain as exc:
                if exc.reason == "busy" or attempt == attempts - 1:  # busy: waited already
                    raise
                time.sleep(0.01 * (attempt + 1))
        raise AssertionError("unreachable")

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        local = self._local
        if getattr(local, "conn", None) is not None:
            yield  # inside a transaction the view is already stable
            return
        try:
            with ExitStack() as stack:
                conn = self._begin(stack)
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                local.conn, local.mode = conn, "read"
                try:
                    yield
                finally:
                    local.conn = local.mode = None
        except psycopg.OperationalError as exc:
            raise self._lost(exc) from None

    def close(self) -> None:
        vectors = getattr(self, "vectors", None)
        if vectors is not None:
            vectors.scope_indexes.close()  # a build under way first: it needs the pool
        pool = getattr(self, "_pool", None)
        if pool is not None:
            pool.close()
            self._pool = None  # type: ignore[assignment]

    def _advisory(self, *parts: str) -> None:
        """Inside a write: wait for any other writer holding the same (scope, key)."""
        if self.in_write():
            self._x("SELECT pg_advisory_xact_lock(%s)", [_lock_key(*parts)])

    # ------------------------------------------------------------------ reads

    def _memories(self, where: str, params: Sequence[Any], tail: str = "") -> list[Memory]:
        rows = self._q(f"SELECT {SELECT} FROM memories m WHERE {where} {tail}", params)
        return [row_to_memory(r) for r in rows]

    @staticmethod
    def _scope_clause(scopes: Sequence[str]) -> tuple[str, list[Any]]:
        if not scopes:
            raise RuntimeError("no scope given")  # every read is scoped; a HiveMem bug
        return "m.scope = ANY(%s)", [list(scopes)]

    def get(self, scopes: Sequence[str], memory_id: str) -> Memory | None:
        clause, params = self._scope_clause(scopes)
        found = self._memories(f"{clause} AND m.id = %s", [*params, memory_id])
        return found[0] if found else None

    def get_many(self, scopes: Sequence[str], memory_ids: Sequence[str]) -> list[Memory]:
        if not memory_ids:
            return []
        clause, params = self._scope_clause(scopes)
        found = self._memories(
            f"{clause} AND m.id = ANY(%s::text[])", [*params, text_array(memory_ids)]
        )
        order = {mid: i for i, mid in enumerate(memory_ids)}
        return sorted(found, key=lambda m: order[m.id])

    def candidate_rows(
        self, scopes: Sequence[str], wanted: Mapping[str, int | None], model: str | None
    ) -> builtins.list[tuple[Memory, Any]]:
        """The rows, each with the vector of its chunk (the one asked for, else the
        memory's first): one statement, one round trip (SQLite's twin is one statement
        too). Three reads before (rows, first chunks, vectors) cost two more round trips
        a search, the load bench's largest share on this backend. A vector the index
        keeps in memory (``vectors.cached``) is not sent again: the row says its chunk."""
        if not wanted:
            return []
        if model is None:
            return [(m, None) for m in self.get_many(scopes, list(wanted))]
        ids, chunks = list(wanted), [cid or None for cid in wanted.values()]
        kept = self.vectors.cached_vectors(model, [c for c in chunks if c is not None])
        clause, params = self._scope_clause(scopes)
        rows = self._q(
            f"SELECT {SELECT}, c.id, CASE WHEN c.id = ANY(%s::bigint[]) THEN NULL "
            "ELSE e.vector END "
            "FROM unnest(%s::text[], %s::bigint[]) WITH ORDINALITY AS w(id, chunk, n) "
            f"JOIN memories m ON m.id = w.id AND {clause} "
            # The chunk asked for, else the memory's first: each branch one index probe
            # (a join on COALESCE(…) was planned as a hash over every chunk: 10 ms at 2k).
            "LEFT JOIN LATERAL (SELECT c.id, c.text_hash FROM chunks c WHERE c.id = w.chunk "
            "UNION ALL (SELECT c.id, c.text_hash FROM chunks c WHERE w.chunk IS NULL "
            "AND c.memory_id = w.id ORDER BY c.seq LIMIT 1)) c ON TRUE "
            "LEFT JOIN embedding_cache e ON e.text_hash = c.text_hash AND e.model = %s "
            "ORDER BY w.n",
            [int_array(kept), text_array(ids), int_array(chunks), *params, model],
        )
        width = len(COLUMNS)
        read = {r[width]: r[width + 1] for r in rows if r[width + 1] is not None}
        vectors = {**kept, **self.vectors.remember(model, read)}
        return [(row_to_memory(r[:width]), vectors.get(r[width])) for r in rows]

    # ``session_neighbours``, then ``candidate_rows`` (SQLite's is one statement)
    pool_rows = pool_reads.in_two_reads

    def by_key(
        self, scopes: Sequence[str], key: str, as_of: datetime | None = None
    ) -> Memory | None:
        clause, params = self._scope_clause(scopes)
        if as_of is None:
            self._advisory("key", scopes[0], key)
            cond, extra = "m.status = 'active'", []
        else:
            cond = "m.valid_from <= %s AND (m.valid_until IS NULL OR m.valid_until > %s)"
            extra = [to_text(as_of), to_text(as_of)]
        found = self._memories(
            f"{clause} AND m.key = %s AND {cond}",
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
            f"{clause} AND m.key = %s", [*params, key], "ORDER BY m.created_at, m.id"
        )

    def successors(self, scopes: Sequence[str], memory_id: str) -> list[Memory]:
        clause, params = self._scope_clause(scopes)
        return self._memories(
            f"{clause} AND m.supersedes_id = %s", [*params, memory_id], "ORDER BY m.created_at"
        )

    def scopes_of(self, memory_ids: Sequence[str]) -> dict[str, str]:
        ids = list(dict.fromkeys(memory_ids))
        if not ids:
            return {}
        return dict(self._q("SELECT id, scope FROM memories WHERE id = ANY(%s)", [ids]))

    def find_duplicate(self, scope: str, kind: str, content_hash: str) -> Memory | None:
        self._advisory("dup", scope, kind, content_hash)
        lean = "" if kind == "episode" else " AND m.kind <> 'episode'"  # 0025's hash index
        found = self._memories(
            "m.scope = %s AND m.content_hash = %s AND m.kind = %s AND m.status = 'active' "
            f"AND m.key IS NULL{lean}",
            [scope, content_hash, kind],
            "LIMIT 1",
        )
        return found[0] if found else None

    def _filter_sql(self, flt: ListFilter | Query, now: datetime) -> tuple[list[str], list[Any]]:
        where: list[str] = []
        params: list[Any] = []
        if flt.as_of is not None:
            where.append("m.valid_from <= %s AND (m.valid_until IS NULL OR m.valid_until > %s)")
            params += [to_text(flt.as_of)] * 2
        elif flt.statuses:
            where.append("m.status = ANY(%s)")
            params.append([s.value for s in flt.statuses])
        if not flt.include_expired:
            where.append("(m.expires_at IS NULL OR m.expires_at > %s)")
            params.append(to_text(now))
        if flt.kinds:
            where.append("m.kind = ANY(%s)")
            params.append([k.value for k in flt.kinds])
        if flt.types:
            where.append("m.type = ANY(%s)")
            params.append([t.value for t in flt.types])
        if flt.categories:
            where.append("m.category = ANY(%s)")
            params.append(list(flt.categories))
        if flt.tags:
            where.append(
                "EXISTS (SELECT 1 FROM jsonb_array_elements_text(m.tags::jsonb) j(v) "
                "WHERE j.v = ANY(%s))"
            )
            params.append(list(flt.tags))
        if flt.sessions:
            where.append("m.session_id = ANY(%s)")
            params.append(list(flt.sessions))
        if flt.exclude_sessions:
            where.append("(m.session_id IS NULL OR NOT m.session_id = ANY(%s))")
            params.append(list(flt.exclude_sessions))
        if flt.since is not None:
            where.append("COALESCE(m.event_time, m.created_at) >= %s")
            params.append(to_text(flt.since))
        if flt.until is not None:
            where.append("COALESCE(m.event_time, m.created_at) < %s")
            params.append(to_text(flt.until))
        return where, params

    def list(
        self, scopes: Sequence[str], flt: ListFilter, limit: int, offset: int, now: datetime
    ) -> list[Memory]:
        clause, params = self._scope_clause(scopes)
        where, extra = self._filter_sql(flt, now)
        if flt.key is not None:
            where.append("m.key = %s")
            extra.append(flt.key)
        return self._memories(
            " AND ".join([clause, *where]),
            [*params, *extra, limit, offset],
            "ORDER BY m.created_at DESC, m.id DESC LIMIT %s OFFSET %s",
        )

    def passing(
        self, scopes: Sequence[str], memory_ids: Sequence[str], query: Query, now: datetime
    ) -> set[str]:
        if not memory_ids:
            return set()
        clause, params = self._scope_clause(scopes)
        where, extra = self._filter_sql(query, now)
        filters = " AND ".join([clause, "m.id = ANY(%s::text[])", *where])
        rows = self._q(
            f"SELECT m.id FROM memories m WHERE {filters}",
            [*params, text_array(dict.fromkeys(memory_ids)), *extra],
        )
        return {r[0] for r in rows}

    def iter_all(self, scopes: Sequence[str] | None) -> Iterator[Memory]:
        params: list[Any]
        if scopes is None:
            where, params = "TRUE", []
        else:
            where, params = self._scope_clause(scopes)
        last = ""
        while True:  # keyset pagination
            page = self._memories(
                f"{where} AND m.id > %s", [*params, last], "ORDER BY m.id LIMIT 1000"
            )
            if not page:
                return
            yield from page
            last = page[-1].id

    def session_neighbours(
        self, scopes: Sequence[str], memory_ids: Sequence[str], query: Query, now: datetime
    ) -> dict[str, builtins.list[tuple[str, bool]]]:
        """The episodes just before and after each one in its session, by ``seq`` (the
        insertion order), that pass the filters, as (id, whether it comes after)."""
        if not memory_ids:
            return {}
        side = (
            "(SELECT n.id FROM memories n WHERE n.scope = a.scope"
            " AND n.session_id = a.session_id AND n.kind = 'episode'"
            " AND n.seq {op} a.seq ORDER BY n.seq {order} LIMIT 1)"
        )
        clause, params = self._scope_clause(scopes)
        where, extra = self._filter_sql(query, now)
        filters = " AND ".join([clause, *where])
        # One statement: each anchor's neighbours, kept only where they pass the filters.
        passing = f"(SELECT m.id FROM memories m WHERE m.id = {{}} AND {filters})"
        rows = self._q(
            f"SELECT p.id, {passing.format('p.before')}, {passing.format('p.after')} FROM ("
            f"SELECT a.id, {side.format(op='<', order='DESC')} AS before, "
            f"{side.format(op='>', order='ASC')} AS after FROM memories a "
            "WHERE a.id = ANY(%s::text[]) AND a.scope = ANY(%s) AND a.kind = 'episode' "
            "AND a.session_id IS NOT NULL) p",
            [*params, *extra, *params, *extra, text_array(dict.fromkeys(memory_ids)), *params],
        )
        out: dict[str, list[tuple[str, bool]]] = {}
        for anchor, before, after in rows:
            sides = [(n, later) for n, later in ((before, False), (after, True)) if n is not None]
            if sides:
                out[anchor] = sides
        return out

    def stats(self, scopes: Sequence[str] | None, now: datetime) -> dict[str, Any]:
        """The counts both backends share (``store/stats.py``: portable SQL)."""
        return scope_stats(Portable(self), scopes, now)

    def sessions(self, scope: str) -> builtins.list[SessionInfo]:
        rows = self._q(
            "SELECT scope, session_id, started_at, last_event_at, episode_count, "
            "consolidated_at FROM sessions WHERE scope = %s ORDER BY started_at",
            [scope],
        )
        return [
            SessionInfo(r[0], r[1], from_text(r[2]), from_text(r[3]), r[4], from_text(r[5]))
            for r in rows
        ]

    def scopes(self) -> builtins.list[str]:
        return [r[0] for r in self._q("SELECT DISTINCT scope FROM memories ORDER BY scope")]

    # ------------------------------------------------------------------ writes

    def insert(
        self, memory: Memory, chunks: Sequence[str], mentions: Sequence[Mention] = ()
    ) -> None:
        from ..rows import memory_to_row

        # ON CONFLICT DO NOTHING instead of a savepoint: a refused row leaves the
        # caller's transaction usable, at one round trip instead of three.
        if self._x(INSERT + " ON CONFLICT DO NOTHING", memory_to_row(memory)).rowcount == 0:
            if self._q("SELECT 1 FROM memories WHERE id = %s", [memory.id]):
                raise Conflict(f"a memory with id {memory.id} already exists")
            raise Conflict(
                f"key {memory.key!r} already has an active memory in scope {memory.scope!r}"
            )
        self.entities.added += 1
        self.insert_chunks(memory.id, memory.scope, list(chunks))
        if mentions:
            link_mentions(self, memory.scope, memory.id, mentions, to_text(memory.created_at))

    def insert_many(self, items: Sequence[tuple[Memory, Sequence[str], Sequence[Mention]]]) -> None:
        """``insert`` of each item, in a few round trips for the whole batch
        (``writes.py``)."""
        insert_many(self, items)

    def set_status(
        self,
        scope: str,
        memory_id: str,
        status: Status,
        valid_until: datetime | None,
        now: datetime,
        updated_by: str | None,
    ) -> None:
        self._x(
            "UPDATE memories SET status = %s, valid_until = %s, updated_at = %s, "
            "updated_by = COALESCE(%s, updated_by) WHERE scope = %s AND id = %s",
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
        import json

        unknown = set(fields) - UPDATABLE
        if unknown:
            raise RuntimeError(f"fields not updatable: {sorted(unknown)}")
        sets, params = ["updated_at = %s"], [to_text(now)]
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
            assert name in COLUMNS
            sets.append(f"{name} = %s")
            params.append(value)
        self._x(
            f"UPDATE memories SET {', '.join(sets)} WHERE scope = %s AND id = %s",
            [*params, scope, memory_id],
        )

    def flush_access(self) -> int:
        """Nothing is queued: ``touch`` writes at once."""
        return 0

    def touch(
        self, scopes: Sequence[str], memory_ids: Sequence[str], now: datetime, count: int = 1
    ) -> None:
        """Best effort: rows another transaction holds are skipped, never waited for.
        ``count=0`` sets ``last_accessed`` only."""
        if not memory_ids:
            return
        clause, params = self._scope_clause(scopes)
        sql = (
            "UPDATE memories AS u SET access_count = u.access_count + %s, "
            "last_accessed = %s FROM (SELECT m.id FROM memories m WHERE "
            f"{clause} AND m.id = ANY(%s::text[]) ORDER BY m.id FOR UPDATE SKIP LOCKED) s "
            "WHERE u.id = s.id"
        )
        values = [count, to_text(now), *params, text_array(memory_ids)]
        if self.in_write():  # the caller's transaction holds it
            self._x(sql, values)
            return
        # One implicit transaction, one round trip (instead of BEGIN / UPDATE / COMMIT),
        # committed without waiting for the WAL flush: access counts are a ranking hint,
        # and a search should not wait for a disk sync (a crash may lose the last few).
        for attempt in range(5):
            try:
                self._q_batch([(_ASYNC_COMMIT, ()), (sql, values)])
                return
            except TryAgain as exc:
                if exc.reason not in ("deadlock", "serialization"):
                    return  # access counts are a ranking hint: reads fail open
                time.sleep(0.01 * (attempt + 1))
            except StoreError:
                return  # access counts are a ranking hint: reads fail open

    def note_session(
        self, scope: str, session_id: str, when: datetime, last: datetime, episodes: int
    ) -> bool:
        """Register a session on first sight; count its episodes; True when new."""
        stamp = to_text(when)
        row = self._x(
            "INSERT INTO sessions (scope, session_id, started_at, last_event_at, episode_count) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (scope, session_id) DO UPDATE SET "
            "last_event_at = GREATEST(sessions.last_event_at, excluded.last_event_at), "
            "started_at = LEAST(sessions.started_at, excluded.started_at), "
            "episode_count = sessions.episode_count + excluded.episode_count "
            "RETURNING (xmax = 0 OR sessions.episode_count = %s)",  # a row of no episodes:
            [scope, session_id, stamp, to_text(last), episodes, episodes],  # new, as on SQLite
        ).fetchone()
        return bool(row[0])

    # ------------------------------------------------------------------ meta and health

    def meta(self) -> dict[str, str]:
        return dict(self._q("SELECT key, value FROM meta"))

    def set_meta(self, key: str, value: str) -> None:
        def run() -> None:
            with self.atomic():
                self._x(
                    "INSERT INTO meta (key, value) VALUES (%s, %s) "
                    "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                    [key, value],
                )

        self._retrying(run)

    def schema_version(self) -> builtins.list[str]:
        with self._connection() as conn:
            return migrations.applied(conn)

    def health(self) -> dict[str, Any]:
        one = lambda sql: self._q(sql)[0][0]  # noqa: E731
        postings_error = postings.check(self)
        return {
            "vectors": self.vectors.count(),
            "chunks_awaiting_vectors": self.vectors.pending_count(),
            "vector_index_unavailable": self.vectors.unavailable,
            "vector_index_missing": self.vectors.index_missing(),
            "integrity": ["ok"],
            "fts_ok": postings_error is None,
            "fts_error": postings_error,
            "memories_without_chunks": len(self.unchunked_ids()),
            "broken_supersede_links": one(
                "SELECT COUNT(*) FROM memories m WHERE m.supersedes_id IS NOT NULL AND NOT "
                "EXISTS (SELECT 1 FROM memories p WHERE p.id = m.supersedes_id)"
            ),
            "keys_with_several_active": one(
                "SELECT COUNT(*) FROM (SELECT scope, key FROM memories WHERE status = 'active' "
                "AND key IS NOT NULL GROUP BY scope, key HAVING COUNT(*) > 1) d"
            ),
            "sessions_not_consolidated": one(
                "SELECT COUNT(*) FROM sessions WHERE consolidated_at IS NULL"
            ),
            "journal_mode": "postgresql",
            "driver": f"psycopg {psycopg.__version__}",
            **server_health(self),  # versions, index validity, migrations (doctor)
        }

    def vault_rows(self) -> PostgresVault:
        """The vault's reads and writes on this store (``store.factory.vault_rows``)."""
        return PostgresVault(self)

    def unchunked_ids(self) -> builtins.list[str]:
        return [
            r[0]
            for r in self._q(
                "SELECT m.id FROM memories m WHERE NOT EXISTS "
                "(SELECT 1 FROM chunks c WHERE c.memory_id = m.id)"
            )
        ]

    def __getattr__(self, name: str) -> Any:
        # Helpers some SQLite-only modules reach for (a later restructure removes them).
        if name in {"_conn", "journal_mode"}:
            raise NotOnPostgres(f"the SQLite internal {name!r}")
        raise AttributeError(name)
