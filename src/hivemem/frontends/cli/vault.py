"""``hivemem vault get|set|list|delete``: the key/value vault of the current scope."""

from __future__ import annotations

import json
import sys

import click

from ... import InvalidInput
from ...write.vault import MASK, VaultEntry
from .common import Env, echo_json, json_option, pass_env


@click.group()
def vault() -> None:
    """Key/value machine state and secrets of the current scope.

    Vault entries are never searched, never in context() and never in tool output; a
    secret's value is redacted from every output (search, context, tool results, logs,
    exports). See docs/vault.md.
    """


def _shown(entry: VaultEntry) -> str:
    if entry.is_secret:
        return f"{MASK} (secret)"
    value = entry.value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    flat = " ".join(text.split())
    return flat if len(flat) <= 80 else flat[:79] + "…"


@vault.command("set")
@click.argument("key")
@click.argument("value", required=False)
@click.option("--secret", is_flag=True, help="A secret: redacted from every output.")
@click.option("--value-json", is_flag=True, help="Read VALUE as JSON (a number, list, object …).")
@pass_env
def set_(env: Env, key: str, value: str | None, secret: bool, value_json: bool) -> None:
    """Store VALUE under KEY (replacing it).

    VALUE - reads standard input (one trailing newline dropped); with no VALUE the value
    is asked for without echo, which keeps a secret out of the shell history. The value
    is never printed.
    """
    if value is None:
        value = click.prompt("value", hide_input=True, err=True)
    elif value == "-":
        value = sys.stdin.read()
        value = value[:-1] if value.endswith("\n") else value
    parsed: object = value
    if value_json:
        try:
            parsed = json.loads(value)
        except ValueError as exc:
            raise InvalidInput("value", f"not valid JSON: {exc}") from None
    entry = env.store(create=True).vault(env.scope).set(key, parsed, secret=secret)
    kind = "secret" if entry.is_secret else "value"
    click.echo(f"set {kind} {entry.key!r} in scope {entry.scope!r}", err=True)


@vault.command("get")
@click.argument("key")
@json_option
@pass_env
def get(env: Env, key: str, as_json: bool) -> None:
    """Print the value under KEY (a secret's too: asking for it by key is the way in).

    Text is printed as it is, other values as JSON. Exit code 3 when there is no KEY.
    """
    entry = env.store().vault(env.scope).entry(key)
    if as_json:
        echo_json(entry.to_dict(reveal=True))
    elif isinstance(entry.value, str):
        click.echo(entry.value)
    else:
        click.echo(json.dumps(entry.value, ensure_ascii=False))


@vault.command("list")
@click.option("--prefix", help="Only keys starting with this.")
@json_option
@pass_env
def list_(env: Env, prefix: str | None, as_json: bool) -> None:
    """List the keys of the current scope, secrets masked."""
    entries = env.store().vault(env.scope).list(prefix)
    if as_json:
        echo_json([e.to_dict() for e in entries])
        return
    for entry in entries:
        click.echo(f"{entry.key}  {_shown(entry)}")
    if not entries:
        click.echo(f"the vault of scope {env.scope!r} is empty", err=True)


@vault.command("delete")
@click.argument("key")
@pass_env
def delete(env: Env, key: str) -> None:
    """Remove KEY from the vault of the current scope (exit code 3 when absent)."""
    entry = env.store().vault(env.scope).delete(key)
    click.echo(f"deleted {entry.key!r} from scope {entry.scope!r}", err=True)


COMMANDS = [vault]
