"""Reading what is left of a damaged SQLite store, row by row (``hivemem export`` as a
rescue, ``hivemem.lifecycle.rescue``).

The reader opens the file on its own, read-only, with ``writable_schema`` on (so a schema
entry that points past a truncated end does not make the whole file unreadable), and
never through ``hivemem.open``: a store too damaged to open is still read. It walks the
``memories`` table by rowid ranges, which need only the table's own b-tree; a range that
fails is split in halves down to single rows, so one bad page costs the rows on it and
no others. A row whose fields cannot be decoded into a memory (a damaged time, status or
JSON field) is still saved: ``rows`` yields it as a ``RawRow``, its columns as read (text
with U+FFFD for bytes that are not UTF-8), for the rescue to set aside. Nothing is
written to the damaged file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import StoreError
from ...types import Memory
from ..rows import COLUMNS, SELECT, row_to_memory

try:  # pragma: no cover - which driver is present depends on the install
    import sqlean as sqlite_driver
except ImportError:  # pragma: no cover
    import sqlite3 as sqlite_driver

_RANGE = 512  # rowids per read; a failing range is split down to single rows
_GIVE_UP = 64  # empty ranges in a row past the last row, when MAX(rowid) is unknown
_FAILURES = (sqlite_driver.DatabaseError, MemoryError)


@dataclass
class Salvage:
    """What one pass over the rows found (filled in while ``rows`` is iterated)."""

    counted: int | None = None  # COUNT(*) of memories, when any b-tree could answer it
    read: int = 0  # rows read and decoded
    unreadable: int = 0  # rowids at or below the highest row seen whose read failed
    undecodable: list[str] = field(default_factory=list)  # ids of rows that cannot be decoded
    garbled: list[str] = field(default_factory=list)  # ids of rows read with U+FFFD for bad bytes
    ranges: list[tuple[int, int]] = field(default_factory=list)  # rowid ranges that failed
    highest: int = 0  # the highest rowid read
    seen: set[int] = field(default_factory=set)  # every rowid read


@dataclass(frozen=True)
class RawRow:
    """A row read whose fields do not make a memory: every column as read, and why."""

    id: str
    fields: dict[str, Any]
    why: str


class SalvageReader:
    """A read-only connection to a (possibly damaged) store file."""

    def __init__(self, path: str | Path) -> None:
        self.location = str(path)
        if not os.path.exists(self.location):
            raise StoreError(f"cannot read {self.location}: no such file")
        try:
            self._conn = sqlite_driver.connect(
                f"file:{Path(self.location).resolve()}?mode=ro", uri=True
            )
            # Text that is not valid UTF-8 (a flipped byte) is read with U+FFFD in place of
            # the bad bytes, and the row is counted as garbled, rather than lost.
            self._garbled: list[str] = []
            self._conn.text_factory = self._text
            self._conn.execute("PRAGMA writable_schema = ON")  # read-only: nothing is written
            self._conn.execute("PRAGMA query_only = ON")
        except _FAILURES as exc:
            raise StoreError(f"cannot read {self.location} at all: {exc}") from exc

    def _text(self, raw: bytes) -> str:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            self._garbled.append(text)
            return text

    def close(self) -> None:
        self._conn.close()

    def _one(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        try:
            row = self._conn.execute(sql, params).fetchone()
        except _FAILURES:
            return None
        return row[0] if row else None

    def readable(self) -> bool:
        """Whether the file has a ``memories`` table this reader can see."""
        found = self._one("SELECT name FROM sqlite_master WHERE name = 'memories'")
        return found == "memories"

    def begin(self) -> None:
        """Read one snapshot from here to ``end`` (both passes see the same rows)."""
        try:
            self._conn.execute("BEGIN")
        except _FAILURES as exc:
            raise StoreError(f"cannot read {self.location}: {exc}") from exc

    def end(self) -> None:
        with suppress(*_FAILURES):
            self._conn.execute("COMMIT")

    def secret_values(self) -> list[str] | None:
        """The vault's secret values, or ``None`` when the vault cannot be read."""
        try:
            rows = self._conn.execute("SELECT value FROM vault WHERE is_secret = 1").fetchall()
            return [json.loads(r[0]) for r in rows]
        except (*_FAILURES, ValueError, TypeError):
            return None

    def schema_version(self) -> list[str]:
        try:
            return [r[0] for r in self._conn.execute("SELECT name FROM migrations ORDER BY name")]
        except _FAILURES:
            return []

    def _upper_bound(self) -> tuple[int, bool]:
        """The highest rowid to probe and whether it is exact: MAX(rowid), or, when the
        table's right edge is damaged, a bound no row can pass (a row takes more than 8
        bytes of a page), probed until ``_GIVE_UP`` ranges in a row hold nothing."""
        highest = self._one("SELECT MAX(rowid) FROM memories")
        if isinstance(highest, int):
            return highest, True
        return max(os.path.getsize(self.location) // 8, 1), False

    def rows(self, report: Salvage) -> Iterator[Memory | RawRow]:
        """Every row that can be read, in rowid order: a ``Memory``, or a ``RawRow`` when
        its fields cannot be decoded; ``report`` counts the rest."""
        counted = self._one("SELECT COUNT(*) FROM memories")
        report.counted = counted if isinstance(counted, int) else None
        bound, exact = self._upper_bound()
        failed: list[int] = []
        start, empty = 1, 0
        while start <= bound and (exact or empty < _GIVE_UP):
            stop = min(start + _RANGE - 1, bound)
            before = report.read + len(report.undecodable)
            yield from self._range(start, stop, report, failed)
            empty = empty + 1 if report.read + len(report.undecodable) == before else 0
            start = stop + 1
        # A damaged page can also end a range scan early without an error (a bad cell
        # pointer): every rowid up to the last one known that was neither read nor failed
        # is sought once more, on its own (none in a store without gaps).
        known_failed = set(failed)
        for rowid in range(1, (bound if exact else report.highest) + 1):
            if rowid not in report.seen and rowid not in known_failed:
                yield from self._range(rowid, rowid, report, failed)
        # When MAX(rowid) is unknown the probes ran past the table's end: a failed rowid
        # past the last row read is most likely no row at all, and is not counted.
        last = bound if exact else report.highest
        report.unreadable = sum(1 for rowid in failed if rowid <= last)
        report.ranges = _ranges([rowid for rowid in failed if rowid <= last])

    def _range(
        self, lo: int, hi: int, report: Salvage, failed: list[int]
    ) -> Iterator[Memory | RawRow]:
        self._garbled.clear()
        try:
            rows = self._select("rowid BETWEEN ? AND ?", (lo, hi))
        except _FAILURES:
            if lo == hi:
                # A range scan steps on to the next leaf after its last row and fails
                # there when that leaf is the damaged one; a seek by equality does not.
                try:
                    rows = self._select("rowid = ?", (lo,))
                except _FAILURES:
                    failed.append(lo)
                    return
                yield from self._decode(rows, report)
                return
            mid = (lo + hi) // 2
            yield from self._range(lo, mid, report, failed)
            yield from self._range(mid + 1, hi, report, failed)
            return
        yield from self._decode(rows, report)

    def _select(self, where: str, params: tuple[int, ...]) -> list[Any]:
        return self._conn.execute(
            f"SELECT rowid, {SELECT} FROM memories m WHERE {where} ORDER BY rowid", params
        ).fetchall()

    def _decode(self, rows: list[Any], report: Salvage) -> Iterator[Memory | RawRow]:
        garbled = list(self._garbled)
        for row in rows:
            report.highest = max(report.highest, row[0])
            report.seen.add(row[0])
            if garbled and any(v is g for v in row for g in garbled):
                report.garbled.append(str(row[1]))
            try:
                memory = row_to_memory(row[1:])
            except Exception as exc:  # garbled fields: any decoding error of any field
                report.undecodable.append(str(row[1]))
                fields = {
                    name: _plain(value) for name, value in zip(COLUMNS, row[1:], strict=False)
                }
                why = f"undecodable ({type(exc).__name__}: {str(exc)[:200]})"
                yield RawRow(str(row[1]), fields, why)
                continue
            report.read += 1
            yield memory


def _plain(value: Any) -> Any:
    """A column as JSON can hold it (a blob as text with U+FFFD for bad bytes)."""
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, float) and value != value:  # NaN: not JSON
        return None
    return value


def _ranges(rowids: list[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for rowid in sorted(rowids):
        if out and rowid == out[-1][1] + 1:
            out[-1] = (out[-1][0], rowid)
        else:
            out.append((rowid, rowid))
    return out
