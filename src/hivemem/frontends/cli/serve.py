"""``hivemem serve-mcp``: the MCP server (``hivemem.frontends.mcp``) bound to one scope."""

from __future__ import annotations

import dataclasses

import click

from ...settings import SEED_PROFILES
from .. import serving
from .common import Env, pass_env


@click.command("serve-mcp")
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a client that starts the server; http for streamable HTTP at /mcp.",
)
@click.option("--scope", "scope", default=None, help="The scope to serve (default: --scope).")
@click.option(
    "--shared",
    "shared",
    multiple=True,
    metavar="NAME",
    help="A shared scope the tools read as well (never written). Repeatable.",
)
@click.option(
    "--learning-scope",
    default=None,
    metavar="NAME",
    help="Shared scope inject_learning writes a lead's learnings to "
    "(default: setting learning_scope).",
)
@click.option(
    "--lead-of",
    "lead_of",
    multiple=True,
    metavar="SCOPE",
    help="A scope (or glob pattern) this server leads: its tools may delete, correct and "
    "purge there and inject learnings into it (default: setting lead_of). Repeatable.",
)
@click.option(
    "--agent",
    default=None,
    metavar="NAME",
    help="Who this server writes as, recorded as updated_by (default: setting agent, "
    "else the scope).",
)
@click.option(
    "--tools",
    "tool_set",
    default=None,
    metavar="PROFILE|LIST",
    help="Which tools to offer: a profile (all, core, openhive, assistant, adr005, "
    "corvid, swarm) or a comma-separated list of tool names (default: all). A seed's "
    "profile also applies its settings (setting profile), unless HIVEMEM_PROFILE is set. "
    "See docs/tools.md.",
)
@click.option("--host", default=None, help="Address for --transport http (default: mcp_host).")
@click.option(
    "--port", type=int, default=None, help="Port for --transport http (default: mcp_port)."
)
@pass_env
def serve_mcp(
    env: Env,
    transport: str,
    scope: str | None,
    shared: tuple[str, ...],
    learning_scope: str | None,
    lead_of: tuple[str, ...],
    agent: str | None,
    tool_set: str | None,
    host: str | None,
    port: int | None,
) -> None:
    """Serve the memory tools to MCP clients.

    Needs `pip install 'hivemem[mcp]'`. The server is bound to one scope: the model
    cannot name another. A lead is started with --lead-of SWARM (and --lead-of
    'worker-*' to reach its workers' own scopes). Several servers may share one
    database file. `hivemem --db team.db --scope agent-1 mcp-config` prints an MCP
    client's config for it (absolute paths: a client starts it without your PATH). See
    docs/tools.md.
    """
    from ... import tools
    from .. import mcp as mcp_server

    mcp_server._sdk()  # a missing extra fails here, before the store is opened
    names = tools.select(tool_set)  # an unknown profile or tool fails before the store opens
    if learning_scope is not None:
        env.settings = env.settings.replace(learning_scope=learning_scope)
    seed = (tool_set or "").strip().lower()
    if seed in SEED_PROFILES and not env.settings.profile:  # the seed's defaults too
        env.settings = dataclasses.replace(env.settings, profile=seed)
    store = env.store(create=True)
    mem = mcp_server.bind(
        store, scope or env.scope, shared or env.shared, lead_of=lead_of or None, agent=agent
    )
    if transport == "stdio":
        mcp_server.serve_stdio(mem, names)
    else:
        settings = env.settings
        mcp_server.serve_http(
            mem,
            host or settings.mcp_host,
            settings.mcp_port if port is None else port,
            names,
            on_ready=lambda url: click.echo(
                f"HiveMem MCP server (streamable HTTP) at {url}/mcp, scope {mem.name!r}; "
                f"Ctrl-C stops it{serving.parser_note()}",
                err=True,
            ),
        )


COMMANDS = (serve_mcp,)
