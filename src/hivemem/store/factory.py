"""The one place that picks a backend from a location: a file path or ``":memory:"``
opens SQLite, a ``postgresql://`` (or ``postgres://``) URL opens PostgreSQL. Nothing
else in HiveMem needs to name a backend class to open a store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..settings import Settings
from .postgres import is_url
from .postgres import open_backend as open_postgres
from .protocols import Backend
from .sqlite.backend import SQLiteBackend
from .sqlite.vault import SQLiteVault


def open_backend(location: str | Path, settings: Settings) -> Backend:
    """The backend for ``location`` (PostgreSQL needs the ``postgres`` extra: without it
    ``MissingDependency`` says how to install it)."""
    if is_url(location):
        return open_postgres(str(location), timeout_s=settings.busy_timeout_ms / 1000)  # type: ignore[no-any-return]
    return SQLiteBackend(
        location,
        busy_timeout_ms=settings.busy_timeout_ms,
        read_connections=settings.read_connections,
    )


def vault_rows(backend: Any) -> Any:
    """The vault table's reads and writes on ``backend`` (a backend with a vault of its
    own says so by a ``vault_rows()`` method)."""
    own = getattr(backend, "vault_rows", None)
    return own() if own is not None else SQLiteVault(backend)
