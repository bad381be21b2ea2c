"""Maintenance jobs: the store keeps itself tidy, off the write path (DESIGN §5).

Each job is a function ``run(ctx) -> counts`` over one scope, registered in ``JOBS``:

- ``consolidate``: ended sessions' episodes → facts (LLM, or extractive without one)
- ``decay``: Ebbinghaus confidence decay of facts; soft-delete below a floor
- ``expire``: archive rows long past their TTL
- ``reflect``: a weekly reflection on what was learned
- ``summarize``: old memories grouped by key prefix / category → one summary each
- ``categorize``: category and confidence for rows written before categorize-on-save
- ``crossrefs``: related memories by word overlap (``mem.related(id)``)
- ``resolve``: the LLM judges whether entities with related names of low similarity
  are one, and merges them (ADR 005; skipped without an LLM)
- ``enrich``: accurate entities (spaCy or the LLM) for memories with few

Every job is idempotent (a second run changes nothing) and resumable (it commits per
batch, and its progress is in the database, so a crashed run picks up where it stopped
without duplicates). ``run_job`` runs a job over one scope or all of them and writes the
run log (``maintenance_runs``: job, scope, trigger, started, finished, status, counts,
error); ``hivemem maintain`` and the scheduler
(``hivemem.lifecycle.maintenance.scheduler``) call it.
"""

from __future__ import annotations

import importlib
import logging
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ... import arguments
from ... import text as textmod
from ...errors import HiveMemError, InvalidInput
from ...providers.entities import extract
from ...store.protocols import RunRecord
from ...types import Memory
from ...write import rules
from ...write.retry import attempts
from .categorize import categorize

if TYPE_CHECKING:  # pragma: no cover
    from ...providers.llm import LLM
    from ...settings import Settings
    from ...store.handles import ScopedHandle, StoreHandle
    from ...store.protocols import JobState

log = logging.getLogger("hivemem.lifecycle.maintenance")

Progress = Callable[[int, int], None]


class Skipped(Exception):  # noqa: N818 - a signal, not an error
    """Raised by a job whose preconditions do not hold; the reason goes to the run log."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class JobResult:
    """What one run of one job over one scope did."""

    job: str
    scope: str | None
    status: str  # ok, skipped, failed
    counts: Mapping[str, int] = field(default_factory=dict)
    reason: str | None = None  # why it was skipped, or the error it failed with
    run_id: int | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def ok(self) -> bool:
        return self.status != "failed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "scope": self.scope,
            "status": self.status,
            "counts": dict(self.counts),
            "reason": self.reason,
            "run_id": self.run_id,
            "started_at": self.started_at.isoformat() if self.started_at else None,
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
        }


@dataclass
class JobContext:
    """What a job gets: the store, the one scope it works on, the time it started, its
    options, and a progress callback ``progress(done, total)``."""

    store: StoreHandle
    scope: str
    now: datetime
    options: Mapping[str, Any] = field(default_factory=dict)
    progress: Progress | None = None
    counts: Counter[str] = field(default_factory=Counter)

    @property
    def settings(self) -> Settings:
        return self.store.settings

    @property
    def maint(self) -> JobState:
        return self.store.job_state

    @property
    def llm(self) -> LLM | None:
        return self.store.llm

    @property
    def mem(self) -> ScopedHandle:
        return self.store.scope(self.scope)

    def clock(self) -> datetime:
        return self.store.clock()

    def tick(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress(done, total)

    def insert(self, record: Memory) -> Memory:
        """Inside a write: insert a memory the job made, with its chunks, entity links
        and automatic category (as ``save`` would), bypassing the key rules (callers
        check keys and duplicates themselves)."""
        s = self.settings
        confidence = 1.0
        if record.category == "general":
            category, confidence = categorize(record.content, record.kind)
            record = replace(record, category=category)
        chunks = textmod.chunk(record.content, s.chunk_tokens, s.chunk_overlap_tokens)
        self.store.memories.insert(record, chunks, extract(record.content))
        self.maint.set_category(record.scope, record.id, None, confidence)
        return record


@dataclass(frozen=True, slots=True)
class Job:
    name: str
    run: Callable[[JobContext], Mapping[str, int] | None]
    help: str


JOBS: dict[str, Job] = {}


def register(job: Job) -> Job:
    """Add a job to the registry (built-ins register themselves on import)."""
    JOBS[job.name] = job
    return job


def job_names() -> list[str]:
    _load()
    return list(JOBS)


def get_job(name: object) -> Job:
    """The registered job ``name``; ``InvalidInput`` listing the valid ones otherwise."""
    _load()
    if not isinstance(name, str) or name.strip().lower() not in JOBS:
        raise InvalidInput("job", f"unknown job {name!r}; valid jobs: {', '.join(JOBS)}")
    return JOBS[name.strip().lower()]


# The order ``hivemem maintain`` (no job named) runs the built-ins in: expired rows go
# first, facts are made before they are enriched, linked, decayed and reflected on.
ORDER = (
    "expire",
    "consolidate",
    "enrich",
    "resolve",
    "categorize",
    "crossrefs",
    "decay",
    "reflect",
    "summarize",
)
_loaded = False


def _load() -> None:
    """Register the built-in jobs (each module has ``NAME``, ``HELP`` and ``run``) in
    ``ORDER``, before any job a plugin registered."""
    global _loaded
    if _loaded:
        return
    modules = [importlib.import_module(f"{__name__}.{name}") for name in ORDER]
    builtin = {m.NAME: Job(m.NAME, m.run, m.HELP) for m in modules}
    ordered = {name: builtin[name] for name in ORDER}
    ordered.update({k: v for k, v in JOBS.items() if k not in ordered})
    JOBS.clear()
    JOBS.update(ordered)
    _loaded = True


def run_job(
    store: StoreHandle,
    name: str,
    scope: str | None = None,
    *,
    trigger: str = "manual",
    progress: Progress | None = None,
    raise_errors: bool = False,
    **options: Any,
) -> list[JobResult]:
    """Run job ``name`` over ``scope`` (every scope of the store when ``None``), logging
    one run per scope. A job that fails is logged as failed with its error and the next
    scope goes on; ``raise_errors=True`` re-raises the first failure instead. Work
    committed before a failure stays (jobs commit per batch and resume on the next run).
    """
    job = get_job(name)
    progress = arguments.callback(progress, "progress")
    if scope is not None:
        scope = rules.name(scope, "scope", store.settings.max_scope_chars)
    scopes: list[str | None] = [scope] if scope is not None else list(store.scopes())
    if not scopes:
        scopes = [None]  # an empty store: one logged run that did nothing
    store.flush_access()  # decay and reflection read access counts: none left queued
    results = []
    for each in scopes:
        result = _run_one(store, job, each, trigger, progress, options, raise_errors)
        results.append(result)
    if any(r.counts for r in results):
        store.index_written(False)  # new summaries, facts, reflections: embed them
    return store.scrubbed(results)


def _run_one(
    store: StoreHandle,
    job: Job,
    scope: str | None,
    trigger: str,
    progress: Progress | None,
    options: Mapping[str, Any],
    raise_errors: bool,
) -> JobResult:
    runs = store.run_log
    started = store.clock()
    run_id = runs.start_run(job.name, scope, trigger, started)
    status, reason = "ok", None
    ctx = JobContext(store, scope or "", started, options, progress)
    try:
        if scope is not None:
            # A job commits per batch and resumes where it stopped, so a deadlock or a
            # lost connection runs it again from there (hivemem.write.retry).
            extra = None
            for attempt in attempts():
                with attempt:
                    extra = job.run(ctx)
            if extra:
                ctx.counts.update(extra)
    except Skipped as skip:
        status, reason = "skipped", skip.reason
    except Exception as exc:
        status = "failed"
        reason = str(exc) if isinstance(exc, HiveMemError) else f"{type(exc).__name__}: {exc}"
        reason = store.scrub(reason)  # the run log and the result are output: no secrets
        log.warning("maintenance job %s failed on scope %r: %s", job.name, scope, reason)
        runs.finish_run(run_id, store.clock(), status, _plain(ctx.counts), reason)
        if raise_errors:
            raise
        return JobResult(job.name, scope, status, _plain(ctx.counts), reason, run_id, started)
    finished = store.clock()
    counts = _plain(ctx.counts)
    runs.finish_run(run_id, finished, status, counts, reason)
    return JobResult(job.name, scope, status, counts, reason, run_id, started, finished)


def _plain(counts: Counter[str]) -> dict[str, int]:
    return {k: int(v) for k, v in sorted(counts.items())}


def run_log(store: StoreHandle, job: str | None = None, scope: str | None = None, limit: int = 50):
    """The newest runs first (``RunRecord``), of one job and/or scope when given;
    ``limit`` 1 to 10,000 (``InvalidInput`` otherwise: a huge one overflowed SQLite's
    integer, found by the long fuzz of issue #25)."""
    limit = arguments.limit(limit, "limit")
    if scope is not None:  # a scope that is not valid text: InvalidInput, not a driver error
        scope = rules.name(scope, "scope", store.settings.max_scope_chars)
    if job is not None:
        job = get_job(job).name
    return store.scrubbed(store.run_log.runs(job, scope, limit))


__all__ = [
    "JOBS",
    "Job",
    "JobContext",
    "JobResult",
    "RunRecord",
    "Skipped",
    "get_job",
    "job_names",
    "register",
    "run_job",
    "run_log",
]
