"""The ``hivemem`` command: a thin layer over the library.

Each command parses its options, calls one library function and formats the result
(text, or JSON with ``--json``). Settings are read here, at the edge, with
``Settings.from_env()``. Errors are presented once, by ``HiveMemGroup`` (``common.py``):
one line ``error: <message>`` on stderr and the exit code listed in ``EXIT_CODES`` (and
in ``hivemem --help``): 2 invalid input or usage, 3 not found, 4 conflict, 5 missing
dependency, 6 store error, 7 forbidden.
"""

from __future__ import annotations

import click

import hivemem

from ... import Settings
from . import (
    admin,
    eval_context,  # noqa: F401  (its eval commands join `hivemem eval`)
    maintain,
    measure,
    memories,
)
from . import context as context_commands
from . import copy as copy_commands
from . import http as http_commands
from . import notes as notes_commands
from . import postgres as postgres_commands
from . import serve as serve_commands
from . import shell as shell_commands
from . import vault as vault_commands
from .common import (
    EXIT_CODES_HELP,
    Env,
    HiveMemGroup,
    accept_global_options,
    no_color,
    tolerate_any_terminal,
)


@click.group(
    cls=HiveMemGroup,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=EXIT_CODES_HELP,
)
@click.option(
    "--db",
    envvar="HIVEMEM_DB",
    show_envvar=True,
    metavar="PATH",
    help="The store file (default: memory.db in the user data folder); a "
    "postgresql:// URL for PostgreSQL.",
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

    --db, --scope and --shared go before or after the command (`hivemem add "…"
    --scope team-a` works as well as `hivemem --scope team-a add "…"`). Settings come
    from HIVEMEM_<NAME> environment variables (see `hivemem settings`).
    Errors are one line on stderr, `error: <message>`; `--json` output is described in
    docs/json.md. NO_COLOR turns colour off; `hivemem completion SHELL` prints the
    shell completion script.

    --db: reads never create a store. A command that reads (search, list, export,
    doctor ...) or changes what is there (forget, correct, maintain ...) fails on a
    missing path with one line naming it (exit 6); only a command that puts something
    in the store (init, add, import, index, vault set, token create, serve-http,
    serve-mcp, and copy's DST) creates one, with its missing folders, and says so once
    on stderr. A SQLite file of another program is refused (exit 6) and left unchanged.
    The same holds for a postgresql:// database: no HiveMem schema is made by a read,
    and a database holding another program's tables is refused.
    """
    tolerate_any_terminal()
    if no_color():
        ctx.color = False
    env = Env(db=db, scope=scope, shared=shared, settings=Settings.from_env())
    ctx.obj = env
    ctx.call_on_close(env.close)


for _command in (
    admin.init,
    *memories.COMMANDS,
    *context_commands.COMMANDS,
    *admin.COMMANDS,
    *copy_commands.COMMANDS,
    *measure.COMMANDS,
):
    main.add_command(_command)
main.add_command(maintain.maintain)
for _command in http_commands.COMMANDS:
    main.add_command(_command)
main.add_command(serve_commands.serve_mcp)
for _command in postgres_commands.COMMANDS:
    main.add_command(_command)
for _command in (*notes_commands.COMMANDS, *vault_commands.COMMANDS, *shell_commands.COMMANDS):
    main.add_command(_command)
for _command in main.commands.values():
    accept_global_options(_command)

__all__ = ["main"]
