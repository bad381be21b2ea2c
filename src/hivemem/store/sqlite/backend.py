"""The SQLite backend: one file, WAL, FTS5. The only module that issues SQL.

Connection rules (DESIGN §1, LESSONS 6): WAL journal, ``busy_timeout``, foreign keys on,
``synchronous=NORMAL`` (durable across a process crash; a power loss may drop the last
transactions, never corrupt). Writes go through ``atomic()``: ``BEGIN IMMEDIATE`` so two
processes never deadlock upgrading a read lock, savepoints when nested. One connection per
store, guarded by a lock, so one process is one writer.

The driver is ``sqlean`` (``sqlean.py`` on PyPI): the stdlib ``sqlite3`` module compiled
with a current SQLite, FTS5 and extension loading on every platform; stdlib ``sqlite3`` is
used when sqlean is missing and the system SQLite has FTS5.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

from ... import text as textmod
from ...clock import from_text, to_text
from ...errors import Conflict, StoreError
from ...providers.entities import Mention
from ...types import ListFilter, Memory, Query, Status
from .. import scratch
from ..protocols import ChunkMatch, SessionInfo, TermStats
from ..rows import (
    INSERT,
    JSON_FIELDS,
    SELECT,
    TIME_FIELDS,
    UPDATABLE,
    memory_to_row,
    placeholders,
    row_to_memory,
)
from . import migrations, termcounts
from .database import DRIVER_NAME as DRIVER_NAME
from .database import IntegrityError as IntegrityError
from .database import OperationalError, sqlite_driver
from .entities import SQLiteEntityIndex, link_mentions
from .failures import is_full, search_error, store_error
from .inspect import SQLiteInspection
from .keyword import KeywordPlans
from .limits import ClosedConnection, time_limit
from .maintenance import SQLiteMaintenance
from .purge import SQLitePurge
from .repair import RepairMixin
from .resolutions import SQLiteResolutions
from .stats import scope_stats
from .vectors import SQLiteVectorIndex, load_extension


def _is_driver_failure(exc: BaseException) -> bool:
    """A failure of the file or the disk (a full disk, I/O, a damaged page), not of
    HiveMem's SQL: ``IntegrityError`` (a broken rule, translated where it can happen) and
    programming errors pass through as they are."""
    return isinstance(exc, OperationalError | MemoryError) or type(exc) is (
        sqlite_driver.DatabaseError
    )


class SQLiteBackend(KeywordPlans, RepairMixin):
    """See ``hivemem.store.protocols.Backend`` for the contract of each method."""

    def __init__(self, path: str | Path, *, busy_timeout_ms: int = 10_000) -> None:
        self.location = str(path)
        if self.location != ":memory:":
            parent = Path(self.location).expanduser().resolve().parent
            if not parent.exists():
                raise StoreError(f"cannot open {self.location}: folder {parent} does not exist")
            self.location = str(Path(self.location).expanduser())
        self._lock = threading.RLock()
        self._depth = 0
        self._doc_freq: dict[str, tuple[int, int]] = {}  # stem -> (chunks with it, index size)
        try:
            self._conn = sqlite_driver.connect(
                self.location,
                isolation_level=None,
                check_same_thread=False,
                timeout=busy_timeout_ms / 1000,
            )
        except sqlite_driver.DatabaseError as exc:
            raise StoreError(f"cannot open {self.location} as a HiveMem store: {exc}") from exc
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            self._conn.execute("PRAGMA foreign_keys = ON")
            self.vectors = SQLiteVectorIndex(self, load_extension(self._conn))
            self.entities = SQLiteEntityIndex(self)
            self.resolutions = SQLiteResolutions(self)
            self.journal_mode = self._prepare_file(busy_timeout_ms)
        except (sqlite_driver.DatabaseError, MemoryError) as exc:
            # MemoryError: SQLite answers SQLITE_NOMEM on some damaged pages.
            self._conn.close()
            if is_full(exc):
                raise store_error(exc, self.location, "open") from exc
            raise StoreError(
                f"cannot open {self.location} as a HiveMem store: {exc or 'damaged file'}"
            ) from exc
        except BaseException:
            self._conn.close()  # a refused file (newer schema, failed migration) stays closed
            raise

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
                mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
                self._conn.execute("PRAGMA synchronous = NORMAL")
                migrations.refuse_newer(self._conn, self.location)
                migrations.apply(self._conn, to_text(datetime.now().astimezone()))
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
            try:
                yield
            except BaseException as exc:
                self._depth -= 1
                self._undo()
                if _is_driver_failure(exc):
                    raise store_error(exc, self.location, "write") from exc
                raise
            self._depth -= 1
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

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        with self._lock:
            if self._depth > 0:  # inside a write transaction the view is already stable
                yield
                return
            # WAL: a deferred transaction reads one snapshot and blocks no writer.
            try:
                self._conn.execute("BEGIN DEFERRED")
            except (sqlite_driver.DatabaseError, MemoryError) as exc:
                raise store_error(exc, self.location, "read") from exc
            try:
                yield
            finally:  # a read transaction: ending it cannot lose anything; on a damaged
                # file it may fail, and must not hide the error that ended the block
                with suppress(sqlite_driver.DatabaseError, MemoryError):
                    self._conn.execute("COMMIT")
                if self._conn.in_transaction:
                    with suppress(sqlite_driver.DatabaseError, MemoryError):
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
        raise StoreError(f"{self.location} is locked by another writer; try again")

    def _commit(self) -> None:
        try:
            self._conn.execute("COMMIT")
        except (sqlite_driver.DatabaseError, MemoryError) as exc:
            self._undo()
            raise store_error(exc, self.location, "write") from exc

    def _read(self, sql: str, params: Sequence[Any] = (), *, raw: bool = False) -> list[Any]:
        """Rows of one statement. A driver error means a damaged or foreign file (the
        SQL here is ours) and becomes ``StoreError``; ``raw=True`` lets the caller
        translate it (a user's FTS5 syntax)."""
        with self._lock:
            try:
                return self._conn.execute(sql, params).fetchall()
            except (sqlite_driver.DatabaseError, MemoryError) as exc:
                if raw and not isinstance(exc, MemoryError):
                    raise
                raise store_error(exc, self.location, "read") from exc

    def _write(self, sql: str, params: Sequence[Any] = ()) -> Any:
        if self._depth == 0:
            raise RuntimeError("write outside atomic()")  # a bug in HiveMem, not user error
        return self._conn.execute(sql, params)

    @property
    def closed(self) -> bool:
        return isinstance(self._conn, ClosedConnection)

    def close(self) -> None:
        with self._lock:
            if not self.closed:
                with suppress(sqlite_driver.DatabaseError, MemoryError):  # damaged: skip it
                    self._conn.execute("PRAGMA optimize")
                self._conn.close()
                self._conn = ClosedConnection(self.location)

    # ------------------------------------------------------------------ reads

    def _memories(self, where: str, params: Sequence[Any], tail: str = "") -> list[Memory]:
        rows = self._read(f"SELECT {SELECT} FROM memories m WHERE {where} {tail}", params)
        return [row_to_memory(r) for r in rows]

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
        found = self._memories(
            "m.scope = ? AND m.content_hash = ? AND m.kind = ? AND m.status = 'active' "
            "AND m.key IS NULL",
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
        terms: Sequence[str],
        limit: int,
        now: datetime,
        *,
        newest_first: bool = False,
        time_limit_s: float | None = None,
    ) -> list[ChunkMatch]:
        """The ``limit`` best chunks by BM25 among those that pass scope and filters, best
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

        Both statements fix their join order (``CROSS JOIN``: index first, then chunks,
        then memories by id). Without it, a connection that has no planner statistics yet
        (a store created by this process) walks every memory of the scope through the
        ``(scope, status, created_at)`` index instead of looking rows up by id.
        """
        match = query.text if query.fts_syntax else textmod.fts_or_query(list(terms))
        if not match:
            return []
        clause, params = self._scope_clause(scopes)
        where, extra = self._filter_sql(query, now)
        filters = " AND ".join([clause, *where])
        filter_params = [*params, *extra]
        stopped = [False]
        try:
            with self._lock, time_limit(self._conn, time_limit_s, stopped):
                return self._keyword_plans(
                    query, match, filters, filter_params, limit, newest_first
                )
        except (sqlite_driver.DatabaseError, StoreError) as exc:
            raise search_error(
                exc, self.location, query.fts_syntax, stopped[0], time_limit_s
            ) from exc

    def session_neighbours(
        self, scopes: Sequence[str], memory_ids: Sequence[str], query: Query, now: datetime
    ) -> dict[str, list[tuple[str, bool]]]:
        """For each episode among ``memory_ids``: the episodes written just before and
        just after it in its session (insertion order), those that pass the filters, as
        (id, whether it comes after)."""
        if not memory_ids:
            return {}
        ids = list(dict.fromkeys(memory_ids))
        side = (
            "(SELECT n.id FROM memories n WHERE n.scope = a.scope"
            " AND n.session_id = a.session_id AND n.kind = 'episode'"
            " AND n.rowid {op} a.rowid ORDER BY n.rowid {order} LIMIT 1)"
        )
        pairs = self._read(
            f"SELECT a.id, {side.format(op='<', order='DESC')}, "
            f"{side.format(op='>', order='ASC')} FROM memories a "
            f"WHERE a.id IN ({placeholders(ids)}) AND a.kind = 'episode' "
            "AND a.session_id IS NOT NULL",
            ids,
        )
        found = {n for row in pairs for n in row[1:] if n is not None}
        if not found:
            return {}
        passing = self.passing(scopes, list(found), query, now)
        out: dict[str, list[tuple[str, bool]]] = {}
        for anchor, before, after in pairs:
            sides = [(n, later) for n, later in ((before, False), (after, True)) if n in passing]
            if sides:
                out[anchor] = sides
        return out

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

    def _stems(self, terms: Sequence[str]) -> dict[str, list[str]]:
        """Each term as the keyword index tokenizes it (porter stems)."""
        return {term: list(scratch.stems(term)) for term in terms}

    def term_stats(self, terms: Sequence[str], scopes: Sequence[str] | None = None) -> TermStats:
        """Document frequencies of ``terms`` (a term's count is its most frequent stem's).

        With ``scopes`` the frequencies and the chunk total are those of these scopes
        (``store/termcounts.py``: scores never depend on other tenants), and
        ``postings`` are the whole index's (what a MATCH walks, for plan choices).
        Whole-index counts are cached per stem: counting a stem's chunks walks its
        postings list (~0.2 ms for a common term at 100k chunks); a cached count is
        reused until the index has grown or shrunk by more than 1% since it was read."""
        if not terms:
            return TermStats(0, {})
        stems = self._stems(terms)
        total = self._read("SELECT COALESCE(MAX(id), 0) FROM chunks")[0][0]
        tolerance = max(50, total // 100)
        freq: dict[str, int] = {}
        stale = []
        for stem in sorted({s for group in stems.values() for s in group}):
            cached = self._doc_freq.get(stem)
            if cached is not None and abs(total - cached[1]) <= tolerance:
                freq[stem] = cached[0]
            else:
                stale.append(stem)
        if stale:
            rows = dict(
                self._read(
                    f"SELECT term, doc FROM chunks_vocab WHERE term IN ({placeholders(stale)})",
                    stale,
                )
            )
            if len(self._doc_freq) > 50_000:
                self._doc_freq.clear()
            for stem in stale:
                freq[stem] = rows.get(stem, 0)
                self._doc_freq[stem] = (freq[stem], total)

        postings = termcounts.per_term(stems, freq)
        if scopes is None:
            return TermStats(total, postings, postings)
        with self._lock:
            scoped_total, scoped = termcounts.read(self._conn, scopes, stems)
        return TermStats(scoped_total, scoped, postings)

    def matched_terms(self, chunk_ids: Sequence[int], terms: Sequence[str]) -> dict[int, set[str]]:
        """Which of ``terms`` each chunk matches, as the keyword index would decide (FTS5
        phrase match of the quoted term). The chunks' texts are matched in a scratch index
        with the same tokenizer: asking the big index per chunk makes FTS5 seek every
        term's whole doclist once per chunk (about a millisecond each at 100k chunks)."""
        out: dict[int, set[str]] = {cid: set() for cid in chunk_ids}
        if not chunk_ids or not terms:
            return out
        ids = list(chunk_ids)
        texts = self._read(f"SELECT id, text FROM chunks WHERE id IN ({placeholders(ids)})", ids)
        for cid, found in scratch.matches(texts, terms).items():
            out[cid] |= found
        return out

    def memory_chunks(self, memory_ids: Sequence[str]) -> list[ChunkMatch]:
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

    def sessions(self, scope: str) -> list[SessionInfo]:
        rows = self._read(
            "SELECT scope, session_id, started_at, last_event_at, episode_count, "
            "consolidated_at FROM sessions WHERE scope = ? ORDER BY started_at",
            [scope],
        )
        return [
            SessionInfo(r[0], r[1], from_text(r[2]), from_text(r[3]), r[4], from_text(r[5]))  # type: ignore[arg-type]
            for r in rows
        ]

    def scopes(self) -> list[str]:
        return [r[0] for r in self._read("SELECT DISTINCT scope FROM memories ORDER BY scope")]

    # ------------------------------------------------------------------ writes

    def insert(
        self, memory: Memory, chunks: Sequence[str], mentions: Sequence[Mention] = ()
    ) -> None:
        try:
            self._write(INSERT, memory_to_row(memory))
        except IntegrityError as exc:
            message = str(exc)
            if "memories.scope, memories.key" in message:
                raise Conflict(
                    f"key {memory.key!r} already has an active memory in scope {memory.scope!r}"
                ) from None
            if "memories.id" in message:
                raise Conflict(f"a memory with id {memory.id} already exists") from None
            raise
        migrations.insert_chunks(self._conn, memory.id, list(chunks))
        termcounts.settle(self._conn)
        termcounts.add(self._conn, memory.scope, list(chunks))
        if mentions:
            link_mentions(self._conn, memory.scope, memory.id, mentions, to_text(memory.created_at))

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

    def touch(self, scopes: Sequence[str], memory_ids: Sequence[str], now: datetime) -> None:
        if not memory_ids:
            return
        clause, params = self._scope_clause(scopes)
        try:
            with self.atomic():
                self._write(
                    "UPDATE memories AS m SET access_count = access_count + 1, "
                    f"last_accessed = ? WHERE {clause} AND m.id IN ({placeholders(memory_ids)})",
                    [to_text(now), *params, *memory_ids],
                )
        except (StoreError, OperationalError):
            pass  # access counts are a ranking hint: a busy database skips them (reads fail open)

    def note_session(self, scope: str, session_id: str, when: datetime, episodes: int) -> bool:
        """Inside a write: count a session's episodes; True when the session is new (its
        count is then exactly these episodes: a known session had at least one)."""
        stamp = to_text(when)
        count = self._write(
            "INSERT INTO sessions (scope, session_id, started_at, last_event_at, episode_count) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (scope, session_id) DO UPDATE SET "
            "last_event_at = MAX(last_event_at, excluded.last_event_at), "
            "started_at = MIN(started_at, excluded.started_at), "
            "episode_count = episode_count + excluded.episode_count RETURNING episode_count",
            [scope, session_id, stamp, stamp, episodes],
        ).fetchone()[0]
        return bool(count == episodes)

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

    def schema_version(self) -> list[str]:
        with self._lock:
            return migrations.applied(self._conn)

    @property
    def maintenance(self) -> SQLiteMaintenance:  # the maintenance jobs' SQL (stateless)
        return SQLiteMaintenance(self)

    @property
    def purges(self) -> SQLitePurge:  # hard deletes (stateless)
        return SQLitePurge(self)

    @property
    def inspection(self) -> SQLiteInspection:  # the web inspector's reads (stateless)
        return SQLiteInspection(self)
