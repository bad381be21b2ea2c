"""The ``hivemem`` command: a thin layer over the library.

Each command parses its options, calls one library function and formats the result
(text, or JSON with ``--json``). Settings are read here, at the edge, with
``Settings.from_env()``. Errors are translated once, in ``HiveMemGroup.invoke``: a
``HiveMemError`` prints ``error: <message>`` on stderr and exits with its ``exit_code``
(2 invalid input, 3 not found, 4 conflict, 5 missing dependency, 6 store error,
7 forbidden); usage errors exit with 2, as Click does.
"""

from __future__ import annotations

from typing import Any

import click

import hivemem
from hivemem import HiveMemError, Settings

from . import admin, maintain, measure, memories
from . import http as http_commands
from . import notes as notes_commands
from . import serve as serve_commands
from . import vault as vault_commands
from .common import Env, tolerate_any_terminal


class HiveMemGroup(click.Group):
    """A group that turns library errors into one line on stderr and an exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # the order they are added: the order of use

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except HiveMemError as exc:
            message = " ".join(str(exc).split("\n"))
            click.echo(f"error: {message}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=HiveMemGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    envvar="HIVEMEM_DB",
    show_envvar=True,
    metavar="PATH",
    help="The store file (default: memory.db in the user data folder).",
)
@click.option(
    "--scope",
    envvar="HIVEMEM_SCOPE",
    show_envvar=True,
    default="default",
    show_default=True,
    help="The scope to read and write.",
)
@click.option(
    "--shared",
    multiple=True,
    envvar="HIVEMEM_SHARED",
    show_envvar=True,
    metavar="NAME",
    help="A shared scope to read as well. Repeatable.",
)
@click.version_option(hivemem.__version__, prog_name="hivemem")
@click.pass_context
def main(ctx: click.Context, db: str | None, scope: str, shared: tuple[str, ...]) -> None:
    """HiveMem: long-term memory for AI agents, in one SQLite file.

    Settings come from HIVEMEM_<NAME> environment variables (see `hivemem settings`).
    """
    tolerate_any_terminal()
    env = Env(db=db, scope=scope, shared=shared, settings=Settings.from_env())
    ctx.obj = env
    ctx.call_on_close(env.close)


for _command in (admin.init, *memories.COMMANDS, *admin.COMMANDS, *measure.COMMANDS):
    main.add_command(_command)
main.add_command(maintain.maintain)
for _command in http_commands.COMMANDS:
    main.add_command(_command)
main.add_command(serve_commands.serve_mcp)
for _command in (*notes_commands.COMMANDS, *vault_commands.COMMANDS):
    main.add_command(_command)

__all__ = ["main"]
