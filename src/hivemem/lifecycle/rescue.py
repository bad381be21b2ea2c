"""Export as a rescue: every memory that can still be read from a damaged store, in the
export format ``hivemem import`` reads, with the counts before and after.

``hivemem export`` uses it when the store cannot be opened or a full scan fails (and
``hivemem doctor`` recommends it for a damaged file). It reads the file on its own, row
by row (``hivemem.store.sqlite.salvage``), so one bad page costs only the rows on it; it never
writes to the damaged file. Two passes over one read snapshot: the first counts what can
be read, so the header's ``count`` is exact, the second writes. The report says how many
rows the table holds (when any b-tree can still count them), how many were exported and
how many could not be read: a readable row is never dropped silently (LESSONS 7).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from .. import arguments
from ..errors import HiveMemError, StoreError
from ..settings import Settings
from ..store.factory import RawRow, Salvage, SalvageReader
from ..write.redact import Scrubber
from .exported_rows import memory_from_dict
from .portability import FORMAT_VERSION, jsonl


@dataclass(frozen=True, slots=True)
class RescueReport:
    """What a rescue export found and wrote."""

    location: str
    counted: int | None  # rows the table holds by COUNT(*), None when it cannot count
    exported: int
    unreadable: int  # rows (rowids) on pages that could not be read
    undecodable: tuple[str, ...]  # ids of rows read whose fields cannot be decoded
    garbled: tuple[str, ...]  # ids of rows exported with U+FFFD for bytes that were not UTF-8
    rejected: tuple[tuple[str, str], ...]  # (id, why) of rows read that would not import
    unreadable_ranges: tuple[tuple[int, int], ...]
    secrets_redacted: bool  # False when the vault could not be read to redact its secrets

    @property
    def complete(self) -> bool:
        """Every row the table holds was exported."""
        return (
            not self.unreadable
            and not self.undecodable
            and not self.rejected
            and (self.counted is None or self.counted <= self.exported)
        )

    def summary(self) -> str:
        counted = "unknown (the table cannot be counted)" if self.counted is None else self.counted
        return (
            f"rows counted before: {counted}; exported: {self.exported}; unreadable: "
            f"{self.unreadable}; undecodable: {len(self.undecodable)}; set aside (would not "
            f"import, undecodable rows as read): {len(self.rejected)}; exported with garbled "
            f"text: {len(self.garbled)}"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "counted": self.counted,
            "exported": self.exported,
            "unreadable": self.unreadable,
            "undecodable": list(self.undecodable),
            "garbled": list(self.garbled),
            "rejected": [{"id": i, "reason": r} for i, r in self.rejected],
            "unreadable_ranges": [list(r) for r in self.unreadable_ranges],
            "secrets_redacted": self.secrets_redacted,
            "complete": self.complete,
        }


def rescue_jsonl(
    path: str | Path,
    fp: IO[str],
    scopes: Iterable[str] | None = None,
    progress: Callable[[int], None] | None = None,
    *,
    include_secrets: bool = False,
    rejects: IO[str] | None = None,
) -> RescueReport:
    """Write every readable memory of the store file at ``path`` (of ``scopes``, all when
    ``None``) to ``fp`` in the export format; returns the counts.

    A row that can be read but would not import (its text garbled into control
    characters, a vocabulary word damaged) goes to ``rejects`` instead, as
    ``{"reason": …, "row": …}`` lines, so the export imports whole and nothing read is
    dropped. Raises ``StoreError`` only when nothing of the file can be read (not a
    SQLite file, no memories table)."""
    progress = arguments.callback(progress, "progress")
    reader = SalvageReader(path)
    try:
        if not reader.readable():
            raise StoreError(
                f"{path} has no readable memories table (not a HiveMem store, or its first "
                "page is destroyed): nothing can be exported; restore from a backup"
            )
        chosen = None if scopes is None else set(scopes)
        reader.begin()
        try:
            secrets = None if include_secrets else reader.secret_values()
            scrubber = Scrubber(lambda: secrets or [])
            clean = (lambda r: r) if include_secrets else scrubber.scrubbed
            count = sum(
                1 for _, problem in _records(reader, Salvage(), chosen, clean) if not problem
            )
            header = {
                "hivemem_export": FORMAT_VERSION,
                "schema": reader.schema_version(),
                "exported_at": datetime.now(UTC).isoformat(),
                "count": count,
                "rescued_from": str(path),
            }
            fp.write(json.dumps(header) + "\n")
            second, written, rejected = Salvage(), 0, []
            for record, problem in _records(reader, second, chosen, clean):
                line = jsonl(record)
                if problem:
                    rejected.append((str(record.get("id")), problem))
                    if rejects is not None:
                        rejects.write(f'{{"reason": {json.dumps(problem)}, "row": {line}}}\n')
                    continue
                fp.write(line + "\n")
                written += 1
                if progress is not None:
                    progress(1)
            scrubber.close()
        finally:
            reader.end()
    finally:
        reader.close()
    if written != count:  # one snapshot: impossible; loud rather than a silent short file
        raise StoreError(f"rescue read {count} rows, then {written}: the file changed")
    return RescueReport(
        location=str(path),
        counted=second.counted,
        exported=written,
        unreadable=second.unreadable,
        undecodable=tuple(second.undecodable),
        garbled=tuple(second.garbled),
        rejected=tuple(rejected),
        unreadable_ranges=tuple(second.ranges),
        secrets_redacted=not include_secrets and secrets is not None,
    )


def _records(
    reader: SalvageReader,
    report: Salvage,
    scopes: set[str] | None,
    clean: Callable[[Any], Any],
) -> Iterator[tuple[dict[str, Any], str | None]]:
    """Each readable row as an export record, and why it would not import (or None)."""
    settings = Settings()
    for memory in reader.rows(report):
        if isinstance(memory, RawRow):  # saved as read, set aside: it cannot be imported
            if scopes is None or memory.fields.get("scope") in scopes:
                yield clean(memory.fields), memory.why
            continue
        if scopes is not None and memory.scope not in scopes:
            continue
        record = clean(memory.to_dict())
        try:
            memory_from_dict(record, settings)
        except HiveMemError as exc:
            yield record, str(exc)
            continue
        yield record, None
