"""What the measuring commands (``bench``, ``eval``; ``hivemem.frontends.cli.measure``)
share to read their arguments and show their progress."""

from __future__ import annotations

import sys
from typing import Any

import click


def sizes(
    _ctx: click.Context, _param: click.Parameter, value: str | None
) -> tuple[int, ...] | None:
    """``--sizes``: comma-separated whole numbers >= 1 (``_`` allowed: 100_000)."""
    if value is None:
        return None
    try:
        sizes = tuple(int(part.replace("_", "")) for part in value.split(",") if part.strip())
    except ValueError:
        raise click.BadParameter(f"expected comma-separated whole numbers, got {value!r}") from None
    if not sizes or any(n < 1 for n in sizes):
        raise click.BadParameter("sizes must be whole numbers >= 1")
    return sizes


def stage_printer(quiet: bool = False) -> Any:
    """Progress on stderr, terminal or not (a log file, CI): on a terminal one line per
    stage rewritten in place; elsewhere a line when a stage starts, at each tenth of it,
    and when it ends. None when ``quiet``."""
    if quiet:
        return None
    if sys.stderr.isatty():

        def redraw(stage: str, done: int, total: int) -> None:
            click.echo(f"\r{stage}: {done}/{total}", err=True, nl=done >= total)

        return redraw

    shown: dict[str, int] = {}  # stage -> the last tenth printed

    def lines(stage: str, done: int, total: int) -> None:
        tenth = 10 * done // max(total, 1)
        if done == 0 or done >= total or tenth > shown.get(stage, 0):
            shown[stage] = tenth
            click.echo(f"{stage}: {done}/{total}", err=True)

    return lines
