"""Two guards on the SQLite connection: the stand-in a closed backend keeps instead of
its connection, and a time limit on the statements of one call."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ...errors import StoreError


class ClosedConnection:
    """The connection of a closed backend: any use is a ``StoreError`` saying so (a handle
    used after ``store.close()`` raised ``AttributeError`` on ``None``)."""

    def __init__(self, location: str) -> None:
        self._location = location

    def __getattr__(self, name: str) -> Any:
        raise StoreError(f"the store {self._location} is closed; open it again to use it")


@contextmanager
def time_limit(conn: Any, seconds: float | None, stopped: list[bool]) -> Iterator[None]:
    """Statements run inside on ``conn`` are interrupted (``OperationalError``) once
    ``seconds`` have passed, through SQLite's progress handler (called every 1,000
    virtual-machine steps); ``stopped[0]`` says whether that happened. The caller holds
    the connection's lock."""
    if seconds is None:
        yield
        return
    deadline = time.monotonic() + seconds

    def check() -> int:
        stopped[0] = stopped[0] or time.monotonic() > deadline
        return 1 if stopped[0] else 0

    conn.set_progress_handler(check, 1000)
    try:
        yield
    finally:
        conn.set_progress_handler(None, 0)
