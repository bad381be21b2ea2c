"""``hivemem maintain``: run maintenance jobs by hand, on their schedule, or as a daemon;
show the run log. A thin layer over ``hivemem.lifecycle.maintenance``."""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import Any

import click

from ...lifecycle.maintenance import JobResult, get_job, job_names, run_job, run_log, scheduler
from .common import Env, echo_json, json_option, pass_env


def _store(env: Env) -> Any:
    return env.store()  # with the LLM and its key from HIVEMEM_LLM_API_KEY (common.Env)


@contextlib.contextmanager
def _bar(label: str) -> Iterator[Any]:
    """A progress callback ``(done, total)`` drawing a bar on stderr when it is a
    terminal; scripts and pipes get none."""
    if not sys.stderr.isatty():
        yield None
        return
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        bar = state.get("bar")
        if bar is None:
            bar = click.progressbar(length=max(total, done, 1), label=label, file=sys.stderr)
            bar.__enter__()
            state["bar"], state["done"] = bar, 0
        bar.length = max(bar.length or 1, total, done)
        bar.update(done - state["done"])
        state["done"] = done

    try:
        yield update
    finally:
        if "bar" in state:
            state["bar"].__exit__(None, None, None)


def _line(result: JobResult) -> str:
    counts = " ".join(f"{k}={v}" for k, v in result.counts.items()) or "nothing to do"
    scope = result.scope or "(no scopes)"
    text = f"{result.job:<12} {scope:<20} {result.status:<8} {counts}"
    if result.reason:
        text += f"  ({result.reason})"
    return text


@click.command()
@click.argument("job", required=False)
@click.option("--all-scopes", is_flag=True, help="Every scope of the store (default: --scope).")
@click.option("--due", is_flag=True, help="Only the jobs their schedule says are due.")
@click.option("--daemon", is_flag=True, help="Keep running due jobs on their schedule.")
@click.option("--log", "show_log", is_flag=True, help="Show the run log instead of running.")
@click.option("--limit", default=20, show_default=True, help="Runs shown by --log.")
@json_option
@pass_env
def maintain(
    env: Env,
    job: str | None,
    all_scopes: bool,
    due: bool,
    daemon: bool,
    show_log: bool,
    limit: int,
    as_json: bool,
) -> None:
    """Run maintenance jobs (consolidate, decay, reflect ...).

    JOB is one of expire, consolidate, enrich, resolve, categorize, crossrefs, decay,
    reflect, summarize; without JOB, every job runs in that order. Jobs work on --scope unless
    --all-scopes is given. Each run is logged (see --log); rerunning a job is safe.
    --due runs only the jobs whose cron schedule (setting maintenance_schedule) fired
    since their last scheduled run, over every scope; --daemon does that until stopped
    (Ctrl-C). The LLM (setting llm) takes its API key from HIVEMEM_LLM_API_KEY.
    """
    if job is not None:
        job = get_job(job).name  # an unknown name: a clear error listing the valid ones
    if show_log:
        runs = run_log(env.store(), job, None if all_scopes else env.scope, limit)
        if as_json:
            echo_json([r.to_dict() for r in runs])
        for r in [] if as_json else runs:
            counts = " ".join(f"{k}={v}" for k, v in r.counts.items())
            ended = f"{r.finished_at:%Y-%m-%d %H:%M:%S}" if r.finished_at else "-"
            error = f"  ({r.error})" if r.error else ""
            click.echo(
                f"{r.started_at:%Y-%m-%d %H:%M:%S} → {ended}  {r.job:<12} {r.scope or '-':<16} "
                f"{r.trigger:<9} {r.status:<8} {counts}{error}"
            )
        return
    store = _store(env)
    if daemon:
        _daemon(store, as_json)
        return
    results: list[JobResult] = []
    if due:
        with _bar("maintenance") as bar:
            tick = (lambda _job, done, total: bar(done, total)) if bar else None
            results = scheduler.run_due(store, progress=tick)
    else:
        scope = None if all_scopes else env.scope
        for name in [job] if job else job_names():
            with _bar(name) as bar:
                results += run_job(store, name, scope, progress=bar)
    if as_json:
        echo_json([r.to_dict() for r in results])
    else:
        for result in results:
            click.echo(_line(result))
    if any(r.status == "failed" for r in results):
        raise SystemExit(1)


def _daemon(store: Any, as_json: bool) -> None:
    stop = threading.Event()

    def report(results: list[JobResult]) -> None:
        for result in results:
            if as_json:
                echo_json(result.to_dict())
            else:
                click.echo(_line(result))

    def halt(*_: object) -> None:
        stop.set()

    previous = signal.signal(signal.SIGTERM, halt)
    plan = scheduler.schedule(store.settings)
    click.echo("maintenance daemon: " + ", ".join(f"{j} '{e}'" for j, e in plan.items()), err=True)
    try:
        scheduler.daemon(store, stop, report)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    click.echo("maintenance daemon stopped", err=True)


COMMANDS = [maintain]
