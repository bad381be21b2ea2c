"""The one place that picks a backend from a location: a file path or ``":memory:"``
opens SQLite, a ``postgresql://`` (or ``postgres://``) URL opens PostgreSQL.

Nothing else in HiveMem names a backend class (an import-linter contract in
``.importlinter`` holds it): the ``Store`` (``hivemem.facade.database``) gets its
backend here, and the protocol objects beside it (vault rows, tokens, export rows) are
built here too, for whichever backend it is. What is SQLite by nature (salvaging rows
from a damaged file) is reached through here as well.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..settings import Settings
from .postgres import NotOnPostgres as NotOnPostgres
from .postgres import admin as postgres_admin
from .postgres import is_url as is_url
from .postgres import local as local_postgres
from .postgres import open_backend as open_postgres
from .postgres import redact as redact_url
from .postgres.baseline import BarePostgres as BarePostgres
from .protocols import Backend, BackupRows, Tokens, UiSessions, VaultRows
from .sqlite import migrations as sqlite_migrations
from .sqlite.backend import SQLiteBackend
from .sqlite.backup import SQLiteBackupRows
from .sqlite.database import DRIVER_NAME, sqlite_driver
from .sqlite.salvage import RawRow as RawRow
from .sqlite.salvage import Salvage as Salvage
from .sqlite.salvage import SalvageReader as SalvageReader
from .sqlite.vault import SQLiteVault
from .tables import TableRows
from .tokens import TokenTable
from .ui_sessions import UiSessionTable


def open_backend(location: str | Path, settings: Settings, *, create: bool = True) -> Backend:
    """The backend for ``location`` (PostgreSQL needs the ``postgres`` extra: without it
    ``MissingDependency`` says how to install it). ``create=False``: a missing file is
    ``NotAStore`` and nothing is made; so is a PostgreSQL database with no HiveMem
    schema (the database itself always exists first)."""
    if is_url(location):
        return open_postgres(
            str(location), timeout_s=settings.busy_timeout_ms / 1000, create=create
        )
    return SQLiteBackend(
        location,
        busy_timeout_ms=settings.busy_timeout_ms,
        read_connections=settings.read_connections,
        mmap_mb=settings.mmap_mb,
        create=create,
    )


def vault_rows(backend: Any) -> VaultRows:
    """The vault table's reads and writes on ``backend`` (a backend with a vault of its
    own says so by a ``vault_rows()`` method)."""
    own = getattr(backend, "vault_rows", None)
    return own() if own is not None else SQLiteVault(backend)


def tokens(backend: Any, max_scope_chars: int = 200) -> Tokens:
    """The HTTP API's token table on ``backend`` (portable SQL: both backends)."""
    return TokenTable(backend, max_scope_chars=max_scope_chars)


def ui_sessions(backend: Any) -> UiSessions:
    """The web inspector's sign-in sessions on ``backend`` (portable SQL: both backends)."""
    return UiSessionTable(backend)


def backup_rows(backend: Any) -> BackupRows:
    """The rows an export carries beside the memories (vault, tokens, aliases, sessions)
    and the file's table list (``hivemem.lifecycle.backup``)."""
    return SQLiteBackupRows(backend)


def table_rows(backend: Any) -> TableRows:
    """Whole rows of the side tables, the same SQL on both backends (``hivemem copy``)."""
    return TableRows(backend)


def known_migrations(location: str) -> list[str]:
    """The migrations this HiveMem knows for the backend at ``location``."""
    if is_url(location):
        from .postgres import migrations as pg_migrations  # psycopg only when asked

        return pg_migrations.known_names()
    return sqlite_migrations.known_names()


def driver_info() -> dict[str, str]:
    """The SQLite driver and library version (bench reports record them)."""
    return {"sqlite": sqlite_driver.sqlite_version, "driver": DRIVER_NAME}


def analyze(backend: Any) -> None:
    """Refresh the planner's statistics (``ANALYZE``) on either backend (the bench runs
    it after a bulk load)."""
    if is_url(backend.location):
        backend._q("ANALYZE")
        return
    with backend.atomic():
        backend._write("ANALYZE")


__all__ = [
    "RawRow",
    "Salvage",
    "SalvageReader",
    "analyze",
    "backup_rows",
    "driver_info",
    "is_url",
    "known_migrations",
    "open_backend",
    "local_postgres",
    "postgres_admin",
    "BarePostgres",
    "redact_url",
    "tokens",
    "ui_sessions",
    "vault_rows",
]
