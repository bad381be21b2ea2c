"""The one place that picks a backend from a location: a file path or ``":memory:"``
opens SQLite, a ``postgresql://`` (or ``postgres://``) URL opens PostgreSQL. Nothing
else in HiveMem needs to name a backend class to open a store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..settings import Settings
from .base import Backend
from .postgres import is_url


def open_backend(location: str | Path, settings: Settings) -> Backend:
    """The backend for ``location`` (PostgreSQL needs the ``postgres`` extra)."""
    if is_url(location):
        from .postgres import open_backend as open_postgres

        return open_postgres(str(location), timeout_s=settings.busy_timeout_ms / 1000)  # type: ignore[no-any-return]
    from .sqlite import SQLiteBackend

    return SQLiteBackend(location, busy_timeout_ms=settings.busy_timeout_ms)


def vault_rows(backend: Any) -> Any:
    """The vault table's reads and writes on ``backend``."""
    if type(backend).__name__ == "PostgresBackend":
        from .postgres.extras import PostgresVault

        return PostgresVault(backend)
    from .vault import SQLiteVault

    return SQLiteVault(backend)
