"""``hivemem index DIR [--watch]``: a folder of notes as ``note`` memories."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any

import click

from ...lifecycle.notes import IndexReport, index_folder, require_watchfiles, watch_folder
from .common import Env, echo_json, json_option, pass_env

_BAR_FROM = 50  # files: smaller folders finish before a bar is worth drawing


def _report(report: IndexReport, as_json: bool) -> None:
    if as_json:
        echo_json(report.to_dict())
        return
    for path, reason in report.skipped:
        click.echo(f"warning: skipped {path}: {reason}", err=True)
    click.echo(f"{report.folder} -> scope {report.scope}: {report}")


@contextlib.contextmanager
def _bar() -> Iterator[tuple[Any, Any]]:
    """(on_start, progress) callbacks drawing a bar on a terminal for a large folder."""
    state: dict[str, Any] = {}
    with contextlib.ExitStack() as stack:

        def on_start(total: int) -> None:
            if total >= _BAR_FROM and sys.stderr.isatty():
                state["bar"] = stack.enter_context(
                    click.progressbar(length=total, label="indexing", file=sys.stderr)
                )

        def progress(steps: int) -> None:
            if "bar" in state:
                state["bar"].update(steps)

        yield on_start, progress


@click.command("index")
@click.argument("folder", type=click.Path(file_okay=False, path_type=str))
@click.option(
    "--watch", is_flag=True, help="Keep running: re-index on every change (hivemem[watch])."
)
@json_option
@pass_env
def index(env: Env, folder: str, watch: bool, as_json: bool) -> None:
    """Index the note files under FOLDER into the current scope.

    Markdown and text files (setting notes_extensions) each become one `note` memory
    keyed by its path (source file_index, so it expires after ttl_days["file_index"]
    unless re-indexed). Changed files supersede their note, unchanged ones are skipped
    by hash, removed files are soft-deleted. Files that are not UTF-8, empty or over
    notes_max_file_bytes are skipped with a warning. Prints the counts: added, updated,
    unchanged, removed, skipped.
    """
    if watch:
        require_watchfiles()  # a missing extra fails before anything is made or printed
    mem = env.memory(create=True)
    if watch:
        click.echo(f"watching {folder} (Ctrl-C to stop)", err=True)
        watch_folder(mem, folder, on_report=lambda report: _report(report, as_json))
        return
    with _bar() as (on_start, progress):
        report = index_folder(mem, folder, progress=progress, on_start=on_start)
    _report(report, as_json)


COMMANDS = [index]
