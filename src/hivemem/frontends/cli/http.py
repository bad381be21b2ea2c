"""``hivemem serve-http`` and ``hivemem token create|list|revoke``: the HTTP API and the
bearer tokens it accepts. A thin layer over ``hivemem.frontends.http`` and
``hivemem.store.tokens``."""

from __future__ import annotations

import click

from ...store.protocols import Tokens
from ...store.tokens import TokenInfo
from .. import serving
from .common import Env, echo_json, json_option, pass_env


def _tokens(env: Env, *, create: bool = False) -> Tokens:
    return env.store(create=create).tokens


def _line(token: TokenInfo) -> str:
    scopes = ", ".join(f"{scope}:{level}" for scope, level in token.scopes.items())
    state = f"revoked {token.revoked_at:%Y-%m-%d %H:%M}" if token.revoked_at else "active"
    used = f"{token.last_used_at:%Y-%m-%d %H:%M}" if token.last_used_at else "never"
    return f"{token.id}  {token.name:<20}  {state:<24}  last used {used:<16}  {scopes}"


@click.command("serve-http")
@click.option("--host", default=None, help="Address to listen on (default: setting http_host).")
@click.option(
    "--port", type=int, default=None, help="Port to listen on (default: setting http_port)."
)
@click.option(
    "--learning-scope",
    default=None,
    metavar="NAME",
    help="Shared scope inject_learning writes a lead's learnings to "
    "(default: setting learning_scope).",
)
@click.option(
    "--workers",
    default=None,
    type=int,
    help="Server processes on one socket, each with its own store handle: searches use "
    "that many cores (Linux, macOS; see docs/reliability.md). Default: one per CPU core, "
    "at most 4; 1 for :memory: or where fork is missing.",
)
@pass_env
def serve_http(
    env: Env,
    host: str | None,
    port: int | None,
    learning_scope: str | None,
    workers: int | None,
) -> None:
    """Serve the HTTP API (needs `pip install 'hivemem[http]'`).

    Every route but /v1/health needs a bearer token from `hivemem token create`; the
    scope comes from the URL (/v1/scopes/SCOPE/...) and must be granted to the token.
    The OpenAPI schema is at /openapi.json, interactive docs at /docs, the web
    inspector at /ui (sign in with a token). With --workers N, N processes serve one
    SQLite file (or PostgreSQL) on one port; a worker that dies is replaced.
    """
    from ..http import serve
    from ..http.workers import check, default_workers, serve_forked

    if workers is None:
        workers = default_workers(env.db)
    check(workers, env.db)
    if learning_scope is not None:
        env.settings = env.settings.replace(learning_scope=learning_scope)
    settings = env.settings
    host = host or settings.http_host
    port = settings.http_port if port is None else port
    if workers > 1:
        serve_forked(lambda: env.store(create=True), env.close, host, port, settings, workers)
        return
    serve(
        env.store(create=True),
        host,
        port,
        settings,
        on_ready=lambda url: click.echo(
            f"HiveMem serve-http: the API at {url}/v1 (docs {url}/docs, inspector {url}/ui); "
            f"Ctrl-C stops it{serving.parser_note()}",
            err=True,
        ),
    )


@click.command("ui")
@click.option(
    "--port",
    type=click.IntRange(0, 65_535),
    default=None,
    help="Port to listen on (default: setting http_port, or a free one when it is taken).",
)
@click.option("--no-browser", is_flag=True, help="Print the link; do not open a browser.")
@pass_env
def ui(env: Env, port: int | None, no_browser: bool) -> None:
    """Open the web inspector in a browser, signed in.

    Needs `pip install 'hivemem[http]'`. Serves the HTTP API and the inspector on
    127.0.0.1, prints a one-time link that signs this browser in as the local user
    (every scope, read and write), and opens it. The link works once; API tokens sign
    in at /ui/login as well. Stop with Ctrl-C.
    """
    import secrets
    import webbrowser

    from ..http import serve

    settings = env.settings
    chosen = settings.http_port if port is None else port
    if port is None and not _free("127.0.0.1", chosen):
        chosen = _free_port("127.0.0.1")  # e.g. serve-http already runs on http_port
    key = secrets.token_urlsafe(32)
    link = f"http://127.0.0.1:{chosen}/ui/start?key={key}"

    def ready(url: str) -> None:
        click.echo(f"HiveMem inspector: {link}", err=True)
        click.echo("(the link signs in once; Ctrl-C stops the server)", err=True)
        if not no_browser:
            webbrowser.open(link)

    serve(
        env.store(),  # the inspector reads: a missing store is an error, not a new file
        "127.0.0.1",
        chosen,
        settings,
        ui_start_key=key,
        on_ready=ready,
    )


def _free(host: str, port: int) -> bool:
    import socket

    with socket.socket() as probe:
        try:
            probe.bind((host, port))
        except OSError:
            return False
    return True


def _free_port(host: str) -> int:
    import socket

    with socket.socket() as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


@click.group()
def token() -> None:
    """Create, list and revoke bearer tokens of the HTTP API."""


@token.command("create")
@click.argument("name")
@click.option("--read", "read", multiple=True, metavar="SCOPE", help="Grant read. Repeatable.")
@click.option(
    "--write",
    "write",
    multiple=True,
    metavar="SCOPE",
    help="Grant read and write. Repeatable.",
)
@json_option
@pass_env
def token_create(
    env: Env, name: str, read: tuple[str, ...], write: tuple[str, ...], as_json: bool
) -> None:
    """Create a token NAME for the given scopes; show it once.

    The store keeps only the token's sha256: copy the secret now, it cannot be shown
    again. Example: hivemem token create ci-bot --write team-a --read swarm
    """
    scopes = {scope: "read" for scope in read}
    scopes.update({scope: "write" for scope in write})
    if not scopes:
        raise click.UsageError("grant at least one scope with --read SCOPE or --write SCOPE")
    info, secret = _tokens(env, create=True).create(name, scopes, env.store().clock())
    if as_json:
        echo_json({**info.to_dict(), "token": secret})
        return
    click.echo(_line(info))
    click.echo(f"token: {secret}")
    click.echo("Copy it now: it is stored hashed and cannot be shown again.", err=True)


@token.command("list")
@click.option("--active", is_flag=True, help="Only tokens that are not revoked.")
@json_option
@pass_env
def token_list(env: Env, active: bool, as_json: bool) -> None:
    """List tokens: id, name, state, last use, scopes.

    Secrets are never shown: the store has only their hashes."""
    tokens = _tokens(env).list(include_revoked=not active)
    if as_json:
        echo_json([t.to_dict() for t in tokens])
        return
    for info in tokens:
        click.echo(_line(info))
    if not tokens:
        click.echo("no tokens", err=True)


@token.command("revoke")
@click.argument("id_or_name")
@json_option
@pass_env
def token_revoke(env: Env, id_or_name: str, as_json: bool) -> None:
    """Revoke a token by id, or by its unique active name.

    Requests that carry it are refused (401) from then on."""
    info = _tokens(env).revoke(id_or_name, env.store().clock())
    if as_json:
        echo_json(info.to_dict())
        return
    click.echo(_line(info))


COMMANDS = (serve_http, ui, token)
