"""What a driver error means for the caller: one ``StoreError`` (``StoreFull`` for a full
disk) with a message that says what happened and what to do, the driver's error chained
as its cause. Used by the SQLite backend wherever a statement can fail for reasons of the
file or the disk rather than of HiveMem's own SQL."""

from __future__ import annotations

from ...errors import InvalidInput, StoreError, StoreFull, TryAgain

# SQLite's primary result codes (https://sqlite.org/rescode.html) the mapping names.
SQLITE_BUSY, SQLITE_LOCKED, SQLITE_IOERR, SQLITE_CORRUPT, SQLITE_FULL = 5, 6, 10, 11, 13
SQLITE_CANTOPEN, SQLITE_NOTADB, SQLITE_READONLY = 14, 26, 8


def _code(exc: BaseException) -> int | None:
    code = getattr(exc, "sqlite_errorcode", None)
    return code & 0xFF if isinstance(code, int) else None


def is_full(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk or the quota is full."""
    text = str(exc).lower()
    return _code(exc) == SQLITE_FULL or "disk is full" in text or "no space left" in text


def is_locked(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's "database is locked" (or busy)."""
    return _category(exc) == "locked"


def is_file_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is about the file or the disk (full, damaged, locked, read-only,
    I/O) rather than about the statement (say, a user's FTS5 syntax)."""
    return is_full(exc) or _category(exc) is not None


def _category(exc: BaseException) -> str | None:
    text = (str(exc) or type(exc).__name__).lower()
    code = _code(exc)
    if (
        isinstance(exc, MemoryError)
        or code in (SQLITE_CORRUPT, SQLITE_NOTADB)
        or any(word in text for word in ("malformed", "not a database", "could not decode"))
    ):
        return "damaged"
    if code in (SQLITE_BUSY, SQLITE_LOCKED) or "locked" in text or "busy" in text:
        return "locked"
    if code == SQLITE_READONLY or "readonly" in text or "read-only" in text:
        return "readonly"
    if code == SQLITE_IOERR or "disk i/o error" in text:
        return "io"
    return None


def store_error(exc: BaseException, location: str, doing: str) -> StoreError:
    """The ``StoreError`` for a driver error met while ``doing`` (``"write"``,
    ``"read"``, ``"commit"``) on the store at ``location``. Raise it ``from exc``."""
    if isinstance(exc, StoreError):
        return exc
    text = str(exc) or type(exc).__name__
    category = _category(exc)
    if is_full(exc):
        return StoreFull(
            f"the disk holding {location} is full: the {doing} was rolled back and nothing "
            "of it was saved (earlier writes are intact); free some space and retry"
        )
    if category == "damaged":
        return StoreError(
            f"{location} is damaged ({text}); the {doing} did not happen. Run "
            "`hivemem doctor`; `hivemem export` saves every memory still readable"
        )
    if category == "locked":  # passing: TryAgain (not re-run by hivemem.write.retry)
        return TryAgain(
            f"{location} is locked by another writer ({text}); try again", reason="busy"
        )
    if category == "readonly":
        return StoreError(f"{location} cannot be written ({text}): check its permissions")
    if category == "io":
        return StoreError(
            f"the disk failed while HiveMem was trying to {doing} {location} ({text}); "
            "the write was rolled back"
        )
    return StoreError(f"cannot {doing} {location}: {text}")


def search_error(
    exc: BaseException,
    location: str,
    fts_syntax: bool,
    stopped: bool,
    time_limit_s: float | None,
) -> Exception:
    """What a failed keyword search raises: ``InvalidInput`` when the time limit stopped
    it or the user's FTS5 syntax is wrong, else the ``StoreError`` of the file."""
    if stopped:
        return InvalidInput(
            "query",
            f"stopped after {time_limit_s or 0:g} s: this FTS5 query costs too much "
            "(setting fts_time_limit_ms); use fewer words or fewer prefix* terms",
        )
    if fts_syntax and not isinstance(exc, StoreError) and not is_file_failure(exc):
        return InvalidInput("query", f"not valid FTS5 syntax: {exc}")
    return store_error(exc, location, "search")
