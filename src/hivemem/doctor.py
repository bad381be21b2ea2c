"""Health checks of a store, and the one repair that is always safe.

``diagnose`` reads; it never writes and never raises for a damaged store: whatever it
cannot read becomes a failed check. ``repair`` re-derives what can be re-derived from
``memories`` alone (missing chunks, and so the keyword index) and never deletes or
changes a memory row; its report carries the row counts before and after, so a repair
that lost rows could not go unnoticed (LESSONS 7).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import StoreError
from .store import migrations

if TYPE_CHECKING:
    from .database import Store


@dataclass(frozen=True, slots=True)
class Check:
    """One finding. ``ok`` false means something is wrong; ``fix`` says what to do."""

    name: str
    ok: bool
    detail: str
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix}


@dataclass(frozen=True, slots=True)
class Report:
    """Every check of one store, in a fixed order."""

    location: str
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.checks)

    @property
    def failed(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if not c.ok)

    def to_dict(self) -> dict[str, Any]:
        return {
            "location": self.location,
            "ok": self.ok,
            "checks": [c.to_dict() for c in self.checks],
        }


@dataclass(frozen=True, slots=True)
class RepairReport:
    """What ``repair`` did. ``memories_before == memories_after`` always holds."""

    memories_before: int
    memories_after: int
    unchunked_before: int
    unchunked_after: int
    rebuilt: int
    index_rebuilt: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "memories_before": self.memories_before,
            "memories_after": self.memories_after,
            "unchunked_before": self.unchunked_before,
            "unchunked_after": self.unchunked_after,
            "rebuilt": self.rebuilt,
            "index_rebuilt": self.index_rebuilt,
        }


_REPAIR = "run `hivemem doctor --repair`"
_RESTORE = "restore from a backup or an export (`hivemem import`)"
_REBUILD_INDEX = "run `hivemem doctor --repair` (rebuilds the index from the memories)"


def diagnose(store: Store) -> Report:
    """Check the file, the schema, the derived index and the write rules' invariants."""
    try:
        checks = _checks(store)
    except Exception as exc:  # a damaged file: report it, whatever the driver raised
        checks = [Check("readable", False, f"cannot run the checks: {exc}", _RESTORE)]
    return Report(store.location, tuple(checks))


def _vectors(store: Store, health: dict[str, Any]) -> Check:
    """The vector lane: on, with this store's model, and how much is still queued.
    Off by choice (no embedder) is fine; off because the store's vectors are another
    model's, or sqlite-vec cannot load, is a finding."""
    indexer = store.indexer
    pending = health["chunks_awaiting_vectors"]
    if indexer.embedder is None:
        return Check("vectors", True, "no embedder configured: keyword and entity lanes only")
    if health["vector_index_unavailable"]:
        return Check(
            "vectors", False, str(health["vector_index_unavailable"]), "pip install sqlite-vec"
        )
    if not indexer.enabled:
        return Check("vectors", False, str(indexer.disabled), "run `hivemem reindex`")
    detail = f"{health['vectors']} chunk vectors by {indexer.identity}; {pending} queued"
    if health.get("vector_exact_scan"):
        detail += (
            f"; exact scan, no KNN index ({health['vector_exact_scan']}; "
            "pip install sqlite-vec for large stores)"
        )
    if indexer.last_error:
        return Check(
            "vectors",
            False,
            f"{detail}; the embedder failed: {indexer.last_error}",
            "check the embedder (endpoint, model); queued chunks are embedded once it works",
        )
    return Check("vectors", True, detail)


def _checks(store: Store) -> list[Check]:
    health = store.backend.health()
    checks: list[Check] = []
    checks.append(_integrity(list(health["integrity"])))
    checks.append(_schema(store))
    checks.append(
        Check(
            "keyword_index",
            bool(health["fts_ok"]),
            "FTS5 index consistent" if health["fts_ok"] else f"FTS5: {health['fts_error']}",
            "" if health["fts_ok"] else _REBUILD_INDEX,
        )
    )
    unchunked = health["memories_without_chunks"]
    checks.append(
        Check(
            "chunks",
            unchunked == 0,
            f"{unchunked} memories without chunks (not keyword-searchable)"
            if unchunked
            else "every memory has its chunks",
            _REPAIR if unchunked else "",
        )
    )
    broken = health["broken_supersede_links"]
    checks.append(
        Check(
            "supersede_links",
            broken == 0,
            f"{broken} memories supersede a row that does not exist"
            if broken
            else "every supersede link points to a stored memory",
            "import the export that holds the missing versions; history stops at the gap"
            if broken
            else "",
        )
    )
    several = health["keys_with_several_active"]
    checks.append(
        Check(
            "active_keys",
            several == 0,
            f"{several} (scope, key) pairs with more than one active memory"
            if several
            else "at most one active memory per key",
            "keep one with `hivemem forget` on the others (the unique index is damaged: "
            + _RESTORE
            + ")"
            if several
            else "",
        )
    )
    checks.append(_vectors(store, health))
    checks.append(_journal(store, health["journal_mode"]))
    pending = health["sessions_not_consolidated"]
    checks.append(Check("sessions", True, f"{pending} sessions not consolidated yet"))
    checks.append(_maintenance(store))
    checks.append(
        Check(
            "driver",
            True,
            f"SQLite {health['sqlite_version']} via {health['driver']}",
        )
    )
    checks.append(_size(store, health))
    checks.append(_counts(store))
    return checks


def _maintenance(store: Store) -> Check:
    """The newest run of each maintenance job: a job whose last run failed is a problem
    (its error is shown); jobs never run are only listed."""
    from .maintenance import job_names, run_log

    latest: dict[str, Any] = {}
    for run in run_log(store, limit=500):  # newest first
        latest.setdefault(run.job, run)
    failed = [r for r in latest.values() if r.status == "failed"]
    if failed:
        detail = "; ".join(
            f"{r.job} failed at {r.started_at:%Y-%m-%d %H:%M}: {r.error}" for r in failed
        )
        jobs = " ".join(sorted(r.job for r in failed))
        return Check(
            "maintenance",
            False,
            detail,
            f"see `hivemem maintain --log`, then `hivemem maintain {jobs}`",
        )
    never = [name for name in job_names() if name not in latest]
    detail = f"last runs of {len(latest)} jobs ok" if latest else "no job has run yet"
    if never:
        detail += f"; never run: {', '.join(never)}"
    return Check("maintenance", True, detail)


def _integrity(results: list[str]) -> Check:
    if results == ["ok"]:
        return Check("integrity", True, "PRAGMA integrity_check: ok")
    problems = [
        line for entry in results for line in entry.splitlines() if not line.startswith("***")
    ]
    return Check(
        "integrity",
        False,
        f"the file is damaged: {len(problems)} problems, first: {problems[0] if problems else '?'}",
        "`hivemem export` saves every memory still readable; import it into a new file, "
        "or restore from a backup",
    )


def _schema(store: Store) -> Check:
    applied = store.backend.schema_version()
    known = migrations.known_names()
    if applied == known:
        return Check("schema", True, f"{len(applied)} migrations, latest {applied[-1]}")
    missing = [n for n in known if n not in applied]
    unknown = [n for n in applied if n not in known]
    detail = f"applied {applied}; this HiveMem knows {known}"
    if unknown:
        return Check("schema", False, detail, "upgrade hivemem: the file has a newer schema")
    return Check(
        "schema", False, f"{detail}; missing {missing}", "reopen the store to apply migrations"
    )


def _journal(store: Store, mode: str) -> Check:
    if store.location == ":memory:" or mode == "wal":
        return Check("journal_mode", True, mode)
    return Check(
        "journal_mode",
        False,
        f"{mode} (not WAL: concurrent readers and writers will block each other)",
        "keep the file on a local disk; network filesystems cannot use WAL",
    )


def _size(store: Store, health: dict[str, Any]) -> Check:
    logical = health["page_count"] * health["page_size"]
    if store.location == ":memory:":
        return Check("file_size", True, f"in memory, {_human(logical)}")
    path = Path(store.location)
    sizes = {
        suffix: os.path.getsize(f"{path}{suffix}")
        for suffix in ("", "-wal")
        if os.path.exists(f"{path}{suffix}")
    }
    detail = f"{_human(sizes.get('', 0))} ({path})"
    if sizes.get("-wal"):
        detail += f", WAL {_human(sizes['-wal'])}"
    return Check("file_size", True, detail)


def _counts(store: Store) -> Check:
    stats = store.stats()
    parts = ", ".join(f"{n} {status}" for status, n in sorted(stats["by_status"].items()))
    return Check("memories", True, f"{stats['total']} memories ({parts or 'none'})")


def _human(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    value = size / 1024
    for unit in ("KiB", "MiB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def repair(store: Store) -> RepairReport:
    """Rebuild the chunks (and keyword index entries) of memories that have none, and the
    whole keyword index when it is inconsistent.

    Only derived tables are written; every memory row stays as it was. Raises
    ``StoreError`` if the row count changed, which would be a bug in HiveMem.
    """
    backend = store.backend
    before = store.stats()["total"]
    missing = backend.unchunked_ids()
    rebuilt = backend.rebuild_chunks(
        missing, store.settings.chunk_tokens, store.settings.chunk_overlap_tokens
    )
    index_rebuilt = not backend.health()["fts_ok"]
    if index_rebuilt:
        backend.rebuild_keyword_index()
    after = store.stats()["total"]
    if after != before:
        raise StoreError(f"repair changed the number of memories from {before} to {after}")
    return RepairReport(
        memories_before=before,
        memories_after=after,
        unchunked_before=len(missing),
        unchunked_after=len(backend.unchunked_ids()),
        rebuilt=rebuilt,
        index_rebuilt=index_rebuilt,
    )
