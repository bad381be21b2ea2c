"""Commands that set HiveMem up in the user's tools: ``completion`` (a shell's completion
script) and ``mcp-config`` (the JSON an MCP client needs to start this install's server)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import click
from click.shell_completion import get_completion_class

from ...facade.database import default_path
from .common import Env, echo_json, pass_env

COMPLETE_VAR = "_HIVEMEM_COMPLETE"


@click.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion(ctx: click.Context, shell: str) -> None:
    """Print the shell completion script for SHELL.

    \b
    bash:  eval "$(hivemem completion bash)"   in ~/.bashrc
    zsh:   eval "$(hivemem completion zsh)"    in ~/.zshrc
    fish:  hivemem completion fish > ~/.config/fish/completions/hivemem.fish

    The script calls hivemem with _HIVEMEM_COMPLETE set (click's shell completion), so it
    completes commands, options and choices of this version.
    """
    root = ctx.find_root()
    complete = get_completion_class(shell)
    assert complete is not None  # the choice lists only the shells click knows
    click.echo(complete(root.command, {}, "hivemem", COMPLETE_VAR).source())


def hivemem_executable() -> list[str]:
    """The absolute command that starts this install's ``hivemem``: the script beside the
    running Python (a virtual environment's ``bin/``), else the one on PATH, else this
    Python with the CLI's entry point. MCP clients do not search a venv's ``bin/``."""
    beside = Path(os.path.abspath(sys.executable)).parent / (
        "hivemem.exe" if os.name == "nt" else "hivemem"
    )
    if beside.exists():
        return [str(beside)]
    found = shutil.which("hivemem")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-c", "from hivemem.frontends.cli import main; main()"]


@click.command("mcp-config")
@click.option("--name", default="memory", show_default=True, help="The server's name.")
@pass_env
def mcp_config(env: Env, name: str) -> None:
    """Print the MCP client config for this install.

    The JSON block for Claude Desktop, Cursor and other MCP clients ("mcpServers"), with
    the absolute path of this hivemem executable, the absolute --db path, and the
    --scope and --shared given to this command:
    `hivemem --db team.db --scope agent-1 --shared team mcp-config`.
    """
    db = Path(env.db).expanduser() if env.db else default_path()
    command, *prefix = hivemem_executable()
    args = [*prefix, "--db", os.path.abspath(db), "serve-mcp", "--scope", env.scope]
    for shared in env.shared:
        args += ["--shared", shared]
    echo_json({"mcpServers": {name: {"command": command, "args": args}}})


COMMANDS = (completion, mcp_config)
