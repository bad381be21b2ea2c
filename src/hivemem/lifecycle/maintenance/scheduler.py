"""When jobs run by themselves: cron expressions (UTC) per job, from the
``maintenance_schedule`` setting (defaults: categorize 01:00, enrich 02:00, crossrefs
02:30, consolidate 03:00, reflect Sunday 03:00, decay 04:00, expire 04:30, summarize
Sunday 05:00).

A job is *due* when its schedule fired (the latest fire time at or before now) after
its newest scheduled run started; a job never run on schedule is due at once (the daemon
catches up when it starts). A run that failed waits for the next fire time (an LLM
outage is not retried every minute); its committed work stays and the next run resumes.
``run_due`` runs the due jobs over every scope, in the registry's order; ``daemon``
repeats that until stopped, sleeping until the next fire time (at most
``daemon_poll_seconds``). Several daemons on one store are
safe (each job re-checks its work under the write lock) but pointless.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from croniter import croniter

from ...errors import InvalidInput
from ...settings import Settings
from . import JobResult, get_job, job_names, run_job

if TYPE_CHECKING:  # pragma: no cover
    from ...store.handles import StoreHandle

log = logging.getLogger("hivemem.lifecycle.maintenance")


def schedule(settings: Settings) -> dict[str, str]:
    """Job → cron expression, the setting merged over the defaults; jobs whose
    expression is empty are left out. An unknown job or a bad expression raises."""
    merged: Mapping[str, str | None] = {
        **Settings().maintenance_schedule,
        **settings.maintenance_schedule,
    }
    names = job_names()
    out = {}
    for job, expression in merged.items():
        get_job(job)  # InvalidInput listing the valid jobs
        if not expression:
            continue
        if not isinstance(expression, str) or not croniter.is_valid(expression):
            raise InvalidInput(
                "maintenance_schedule", f"{expression!r} (job {job}) is not a cron expression"
            )
        out[job] = expression
    return {job: out[job] for job in names if job in out}


def last_fire(expression: str, now: datetime) -> datetime:
    """The latest time at or before ``now`` the expression fires."""
    return croniter(expression, now + timedelta(microseconds=1)).get_prev(datetime)


def next_fire(expression: str, now: datetime) -> datetime:
    return croniter(expression, now).get_next(datetime)


def due(store: StoreHandle, now: datetime | None = None) -> list[str]:
    """The jobs whose schedule fired since their last scheduled run, in run order."""
    now = now or store.clock()
    runs = store.run_log
    out = []
    for job, expression in schedule(store.settings).items():
        last = runs.last_started(job, trigger="schedule")
        if last is None or last < last_fire(expression, now):
            out.append(job)
    return out


def run_due(
    store: StoreHandle,
    now: datetime | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> list[JobResult]:
    """Run every due job over every scope; returns what each run did."""
    results = []
    for job in due(store, now):
        tick = (lambda done, total, job=job: progress(job, done, total)) if progress else None
        results += run_job(store, job, trigger="schedule", progress=tick)
    return results


def daemon(
    store: StoreHandle,
    stop: threading.Event | None = None,
    on_results: Callable[[list[JobResult]], None] | None = None,
) -> None:
    """Run due jobs until ``stop`` is set (or forever), sleeping in between."""
    stop = stop or threading.Event()
    plan = schedule(store.settings)
    while not stop.is_set():
        try:
            results = run_due(store)
        except Exception:  # a broken store or setting: say so, retry later
            log.exception("maintenance daemon: checking for due jobs failed")
            results = []
        if results and on_results is not None:
            on_results(results)
        now = store.clock()
        upcoming = min((next_fire(e, now) for e in plan.values()), default=None)
        wait = store.settings.daemon_poll_seconds
        if upcoming is not None:
            wait = min(wait, max(0.0, (upcoming - now).total_seconds()))
        stop.wait(max(0.05, wait))
