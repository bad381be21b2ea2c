"""The one error hierarchy of HiveMem.

Every failure the library raises on purpose is a ``HiveMemError``. Each front end
translates it once: the CLI prints ``error: <message>`` and exits with ``exit_code``;
the HTTP API and the MCP server map it to their own error shape. Nothing returns error
strings to be sniffed.
"""

from __future__ import annotations

from typing import Any


class HiveMemError(Exception):
    """Base class. ``exit_code`` is what the CLI exits with."""

    exit_code = 1

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def __str__(self) -> str:
        return self.message


class InvalidInput(HiveMemError):
    """A value given by the caller is wrong. ``field`` names it."""

    exit_code = 2

    def __init__(self, field: str, message: str, **details: Any) -> None:
        super().__init__(f"{field}: {message}", field=field, **details)
        self.field = field


class NotFound(HiveMemError):
    """No memory (or session, or key) with that identity in the scopes this handle sees."""

    exit_code = 3


class Conflict(HiveMemError):
    """The write would break a rule, e.g. a key that already has an active memory.

    ``current`` holds the memory in the way, so the caller can show it.
    """

    exit_code = 4

    def __init__(self, message: str, current: Any = None, **details: Any) -> None:
        super().__init__(message, **details)
        self.current = current


class Forbidden(HiveMemError):
    """The handle may read the memory or scope but has no right to change it: a worker
    deleting in the swarm scope it only reads, a learning injected into a scope the
    handle does not lead. Rights come from configuration and tokens, never from a
    model's arguments (``hivemem.write.rights``)."""

    exit_code = 7


class MissingDependency(HiveMemError):
    """An optional extra is needed; the message carries the install command."""

    exit_code = 5

    def __init__(self, what: str, install: str) -> None:
        super().__init__(f"{what} needs an optional dependency: run `{install}`", install=install)
        self.install = install


class StoreError(HiveMemError):
    """The database cannot be used: wrong file, newer schema, corruption, locked too long."""

    exit_code = 6


class NotAStore(StoreError):
    """The path holds no HiveMem store and nothing was made there: a missing file opened
    for reading (``hivemem.open(path, create=False)``; the CLI's reads), or a file of
    another program (a SQLite database with tables of its own, a text file), which is
    left byte for byte as it was. Not a damaged store: nothing to rescue."""


class StoreFull(StoreError):
    """The disk (or the filesystem quota) holding the store is full: the write was rolled
    back whole, nothing of it was saved, and everything acknowledged before is intact.
    Free space and retry. The driver's own error is chained as ``__cause__``."""


class TryAgain(StoreError):
    """The database gave up on the call for a passing reason: a deadlock or a
    serialization failure (PostgreSQL aborted the transaction), a lock not granted in
    time, the connection lost before the commit, or (SQLite) another writer holding the
    file past ``busy_timeout``. Nothing of the call's transaction was saved, so running
    the same call again is safe. ``reason`` names the cause (``deadlock``,
    ``serialization``, ``lock_timeout``, ``connection``, ``busy``); ``retry_after`` is a
    hint in seconds. The library re-runs its own units of work a few times first
    (``hivemem.write.retry``): this reaches the caller only when those runs failed too.
    A subclass of ``StoreError``, so ``except StoreError`` still catches it."""

    exit_code = 8

    def __init__(self, message: str, *, reason: str, retry_after: float = 1.0) -> None:
        super().__init__(message, reason=reason, retry_after=retry_after)
        self.reason = reason
        self.retry_after = retry_after
