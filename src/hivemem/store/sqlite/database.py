"""The SQLite handle every SQLite module shares: the driver, and the contract of the
connection that ``SQLiteBackend`` owns (its lock, its transactions, its reads and writes).

The helpers beside the backend (entities, vectors, maintenance, runlog, crossrefs,
vault, purge, inspect, stats, backup, tokens, repair) are small classes over this handle.
They import this module, never ``backend.py``, so the backend composes them and nothing
imports it back: the import graph of ``store/sqlite/`` has no loop.

``SQLiteDatabase`` is the handle as a protocol. ``SQLiteBackend`` is the one class that
implements it today (the connection code stays in ``backend.py`` while the read pool of
``pool.py`` lands there); ``SQLiteStore`` is the handle plus the backend's protocols, for
the helpers that call other parts of the backend (maintenance retires rows through
``set_status``, the inspector reads entities).

The driver is ``sqlean`` (``sqlean.py`` on PyPI): the stdlib ``sqlite3`` module compiled
with a current SQLite, FTS5 and extension loading on every platform; stdlib ``sqlite3``
is used when sqlean is missing and the system SQLite has FTS5.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from ...types import ListFilter, Memory, Query
from ..protocols import EntityIndex, Health, Memories, Transactions, VectorIndex

if TYPE_CHECKING:  # pragma: no cover
    import threading

try:  # pragma: no cover - which driver is present depends on the install
    import sqlean as sqlite_driver
except ImportError:  # pragma: no cover
    import sqlite3 as sqlite_driver

DRIVER_NAME = sqlite_driver.__name__
OperationalError = sqlite_driver.OperationalError
IntegrityError = sqlite_driver.IntegrityError


class SQLiteDatabase(Transactions, Protocol):
    """One SQLite file's connection, its lock and its transactions, with the row
    helpers every statement over ``memories`` shares."""

    location: str
    _conn: Any  # the writer connection (a driver connection)
    _lock: threading.RLock  # held by every statement on ``_conn``

    @property
    def closed(self) -> bool: ...

    def _read(self, sql: str, params: Sequence[Any] = (), *, raw: bool = False) -> list[Any]:
        """Rows of one statement; a driver error becomes ``StoreError``."""
        ...

    def _read_memo(
        self, sql: str, params: Sequence[Any] = (), *, raw: bool = False, view_only: bool = False
    ) -> list[Any]:
        """``_read``, kept until the file changes (``pool.py``); rows must not be changed."""
        ...

    def _write(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """One statement inside ``atomic()`` (outside it: a bug, ``RuntimeError``)."""
        ...

    def data_version(self) -> int:
        """A number that changes when another connection has committed (``pool.py``)."""
        ...

    def writer_version(self) -> int | None:
        """``data_version`` of the writer connection (others' commits only), or ``None``
        while another thread writes (``pool.py``)."""
        ...

    def viewed_version(self, since: float) -> int | None:
        """The counter this thread's last search view began under, if it ended at
        ``since`` or later; taken once (``pool.py``)."""
        ...

    def on_writer(self) -> AbstractContextManager[None]:
        """Reads inside go through the writer connection (``pool.py``)."""
        ...

    def _memories(self, where: str, params: Sequence[Any], tail: str = "") -> list[Memory]:
        """``memories`` rows (alias ``m``) matching ``where``."""
        ...

    @staticmethod
    def _scope_clause(scopes: Sequence[str]) -> tuple[str, list[Any]]:
        """``m.scope IN (…)`` and its parameters; no scope is a bug."""
        ...

    def _filter_sql(self, flt: ListFilter | Query, now: datetime) -> tuple[list[str], list[Any]]:
        """The WHERE terms (alias ``m``) of a list filter or a query's filters."""
        ...


class SQLiteStore(SQLiteDatabase, Memories, Health, Protocol):
    """The handle with the backend's own protocols and indexes beside it."""

    @property
    def vectors(self) -> VectorIndex: ...

    @property
    def entities(self) -> EntityIndex: ...
