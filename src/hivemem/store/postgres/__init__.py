"""The PostgreSQL backend: many HiveMem nodes over one PostgreSQL with pgvector.

``hivemem.open("postgresql://user:password@host/db")`` (and ``--db``, ``HIVEMEM_DB``)
opens it through ``hivemem.store.factory``. It implements the storage protocol of
``hivemem.store.protocols`` (docs/postgres.md says which parts, and what is not there yet):

- ``backend``: connections (psycopg 3 with psycopg-pool), transactions, memories, sessions;
- ``keyword``: the keyword lane on ``tsvector`` + GIN with FTS5's BM25 and tokenizer;
- ``vectors``: the vector lane on pgvector (exact per scope, HNSW for big scopes);
- ``entities``, ``extras`` (vault, categories), ``migrations``.

Needs the ``postgres`` extra: ``pip install 'hivemem[postgres]'``.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any

from ...errors import MissingDependency, StoreError
from .conninfo import redact as redact
from .conninfo import secrets_of as secrets_of

SCHEMES = ("postgresql://", "postgres://")
INSTALL = "pip install 'hivemem[postgres]'"


class NotOnPostgres(StoreError):
    """A feature the PostgreSQL backend does not implement yet (it says which)."""

    def __init__(self, feature: str) -> None:
        super().__init__(
            f"{feature} is not implemented on the PostgreSQL backend yet "
            "(docs/postgres.md lists what is); use a SQLite store for it"
        )
        self.feature = feature


def text_array(values: Iterable[str | None]) -> str:
    """``values`` as one ``text[]`` literal, for a ``%s::text[]`` parameter. psycopg
    dumps a Python list element by element in Python (~1.3 µs an element: ~80 µs for
    the 60 ids of a search's pool); one string is dumped at once and the server parses
    it. Every element is quoted (backslash and double quote escaped), None is NULL."""
    return (
        "{"
        + ",".join(
            "NULL" if v is None else '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
            for v in values
        )
        + "}"
    )


def int_array(values: Iterable[int | None]) -> str:
    """``values`` as one ``bigint[]`` literal (see ``text_array``); None is NULL."""
    return "{" + ",".join("NULL" if v is None else str(int(v)) for v in values) + "}"


@functools.lru_cache(maxsize=1024)
def qmark(sql: str) -> str:
    """SQLite-style ``?`` placeholders as psycopg's ``%s`` (literal ``%`` doubled): the
    portable statements shared with the SQLite store run through it."""
    return sql.replace("%", "%%").replace("?", "%s")


def is_url(location: object) -> bool:
    """Whether ``location`` names a PostgreSQL database rather than a SQLite file."""
    return isinstance(location, str) and location.lower().startswith(SCHEMES)


def require_driver() -> Any:
    """The psycopg module, or ``MissingDependency`` with the install command."""
    try:
        import pgvector.psycopg  # noqa: F401
        import psycopg
        import psycopg_pool  # noqa: F401
    except ImportError:
        raise MissingDependency("a PostgreSQL store", INSTALL) from None
    return psycopg


def open_backend(
    url: str, *, pool_size: int = 8, timeout_s: float = 10.0, create: bool = True
) -> Any:
    """A ``PostgresBackend`` on ``url`` (migrations applied); one-line ``StoreError``s
    for an unreachable server, wrong credentials, a missing database or pgvector.
    ``NotAStore`` for a database of another program, and with ``create=False`` for one
    with no HiveMem schema (``opening.py``): nothing is written to either."""
    require_driver()
    from .backend import PostgresBackend

    return PostgresBackend(url, pool_size=pool_size, timeout_s=timeout_s, create=create)


def admin(url: str, sql: str) -> None:
    """Run one statement outside a transaction (CREATE/DROP DATABASE for the bench)."""
    psycopg = require_driver()
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(sql)
    except psycopg.OperationalError as exc:
        from .opening import connect_error

        raise connect_error(exc, url) from None
