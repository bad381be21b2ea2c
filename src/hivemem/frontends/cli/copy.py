"""``hivemem copy SRC DST``: a whole store from one backend to another."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import click

from ...errors import InvalidInput
from ...lifecycle.copying import copy_store
from ...store.factory import is_url
from .common import Env, echo_json, json_option, open_store, pass_env


def _source(location: str) -> str:
    if is_url(location) or location == ":memory:":
        return location
    try:
        found = Path(location).exists()
    except (OSError, ValueError) as exc:  # a name too long, a NUL byte
        raise InvalidInput("SRC", f"not a usable path: {exc.__class__.__name__}") from None
    if not found:
        raise InvalidInput("SRC", f"no store at {location}")
    return location


@click.command("copy")
@click.argument("src")
@click.argument("dst")
@click.option(
    "--resume", is_flag=True, help="Finish an interrupted copy into DST (checks what is there)."
)
@json_option
@pass_env
def copy(env: Env, src: str, dst: str, resume: bool, as_json: bool) -> None:
    """Copy a whole store from SRC to DST, losslessly.

    SRC and DST are SQLite files or postgresql:// URLs, in any combination.
    Everything moves: every memory of every status with its id, key, supersede chain,
    times and usage counts; sessions, vault, API tokens, entities and their links, the
    maintenance bookkeeping and run log; vectors when DST has no model yet or SRC's
    (otherwise they stay queued for `hivemem reindex`). DST must be empty, unless
    --resume finishes a copy that was interrupted: rows already there are checked and
    skipped, a different row is refused. Prints a progress bar on a terminal and the
    counts at the end. --db is not used.
    """
    options: dict[str, Any] = {"embedder": "none"}
    with contextlib.ExitStack() as stack:
        source = stack.enter_context(
            open_store(_source(src), env.settings, create=False, **options)
        )
        target = stack.enter_context(open_store(dst, env.settings, create=True, **options))
        bars: dict[str, Any] = {}
        seen: dict[str, int] = {}

        def step(what: str, done: int, total: int) -> None:
            if not sys.stderr.isatty():
                return
            if what not in bars:
                for earlier in bars.values():
                    earlier.render_finish()
                bar = click.progressbar(length=max(total, 1), label=what, file=sys.stderr)
                bars[what] = stack.enter_context(bar)
                seen[what] = 0
            bars[what].update(done - seen[what])
            seen[what] = done

        report = copy_store(source, target, resume=resume, progress=step)
    if as_json:
        echo_json(report.to_dict())
        return
    rate = report.memories / report.seconds if report.seconds > 0 else 0.0
    click.echo(
        f"copied {report.memories} memories from {report.source} to {report.target} "
        f"in {report.seconds:.1f} s ({rate:,.0f}/s)"
        + (f"; {report.already_there} were there already" if report.already_there else "")
    )
    if report.records:
        click.echo("rows: " + ", ".join(f"{k} {v}" for k, v in sorted(report.records.items())))
    click.echo(f"vectors: {report.vectors} stored, {report.queued} queued ({report.vector_note})")
    if report.left_out:
        click.echo(
            "not carried (DST's schema has no column for them yet): "
            + ", ".join(f"{k} in {v} rows" for k, v in sorted(report.left_out.items())),
            err=True,
        )


COMMANDS = (copy,)
