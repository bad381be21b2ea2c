"""The PostgreSQL handle every PostgreSQL module shares, as a protocol (the twin of
``store/sqlite/database.py``).

The helpers beside the backend (vectors, entities, maintenance, purge, inspect, the
vault, the batched writes) are small classes or functions over this handle. They name
``PostgresDatabase`` in their annotations, never ``backend.py``, so the backend
composes them and nothing imports it back (``.importlinter``: only ``store.factory``
and the package's lazy ``open`` import the backend, annotations included).
``PostgresBackend`` is the one class that implements it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol, TypeVar

from ...types import Entity, ListFilter, Memory, Query
from ..protocols import EntityIndex, Health, KeywordIndex, Memories, Transactions

R = TypeVar("R")


class PgEntities(EntityIndex, Protocol):
    """The entity index (``entities.PgEntityIndex``) with what the batched writes and
    the shared SQL's reads use of it."""

    added: int  # memories this process inserted since the count was read

    def _entities(self, where: str, params: Sequence[Any], aliases: bool = True) -> list[Entity]:
        """Entities (with their aliases) matching ``where`` (``%s`` placeholders)."""
        ...


class PostgresDatabase(Transactions, Memories, KeywordIndex, Health, Protocol):
    """One PostgreSQL database: its connection pool, the transaction of this thread,
    the statement helpers, and the keyword lane's statistics that writes adjust."""

    location: str  # the URL without its password
    _url: str  # the URL as given (credentials included): never printed
    _local: threading.local  # this thread's transaction: ``conn`` and ``mode``
    # The keyword lane's statistics (``keyword.py``), which writes and purges adjust.
    _stats_lock: threading.Lock
    _doc_freq: dict[tuple[tuple[str, ...] | None, str], tuple[int, int]]
    _scope_stats: dict[tuple[str, ...], tuple[int, int, int]]
    _size_added: int

    @property
    def entities(self) -> PgEntities: ...

    def _q(self, sql: str, params: Any = (), *, prepare: bool | None = None) -> list[Any]:
        """Rows of one statement (``%s`` or ``%(name)s`` placeholders: a sequence or a
        mapping), in this thread's transaction or on a pooled connection; a lost
        connection is retried once. ``prepare=False``: never server-prepared."""
        ...

    def _q_batch(self, statements: Sequence[tuple[str, Any]]) -> list[list[Any]]:
        """Several statements in one round trip (a pipeline); the rows of each."""
        ...

    def _x(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """One statement inside ``atomic()`` (outside it: a bug, ``RuntimeError``)."""
        ...

    def _defer(self, sql: str, params: Sequence[Any] = ()) -> None:
        """A write inside ``atomic()`` whose result nobody reads: sent in one pipeline
        with the transaction's next statement (or before its commit)."""
        ...

    def _flush(self) -> None:
        """Send the deferred statements now (before anything else uses the connection)."""
        ...

    def _connection(self) -> AbstractContextManager[Any]:
        """This thread's transaction's connection, else one lent by the pool."""
        ...

    def _writer(self) -> Any:
        """This thread's write connection (outside ``atomic()``: a bug, ``RuntimeError``)."""
        ...

    def _read(self, sql: str, params: Sequence[Any] = (), *, raw: bool = False) -> list[Any]:
        """``_q`` of a statement written with SQLite's ``?`` placeholders."""
        ...

    def _index_size(self) -> int:
        """The keyword index's size (its highest chunk id), cached (``keyword.py``)."""
        ...

    def _scope_totals(self, scopes: tuple[str, ...] | None) -> tuple[int, float]:
        """(chunks, average length) of the scopes' keyword index, cached (``keyword.py``)."""
        ...

    def _write(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """``_x`` of a statement written with SQLite's ``?`` placeholders."""
        ...

    def _retrying(self, fn: Callable[[], R], attempts: int = 5) -> R:
        """``fn`` again on a serialization failure or deadlock (outside a transaction)."""
        ...

    def _memories(self, where: str, params: Sequence[Any], tail: str = "") -> list[Memory]:
        """``memories`` rows (alias ``m``) matching ``where``."""
        ...

    @staticmethod
    def _scope_clause(scopes: Sequence[str]) -> tuple[str, list[Any]]:
        """``m.scope = ANY(…)`` and its parameter; no scope is a bug."""
        ...

    def _filter_sql(self, flt: ListFilter | Query, now: datetime) -> tuple[list[str], list[Any]]:
        """The WHERE terms (alias ``m``) of a list filter or a query's filters."""
        ...

    def in_read_transaction(self, fn: Callable[[Any], R]) -> R:
        """``fn(connection)`` inside one read-only transaction."""
        ...
