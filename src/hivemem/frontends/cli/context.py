"""``hivemem context``: the memory block for the next prompt (``ScopedMemory.context``),
as markdown on stdout or, with ``--json``, with its sections (docs/json.md)."""

from __future__ import annotations

import click

from ...lifecycle.context import RECIPES, context_block
from .common import Env, echo_json, json_option, pass_env, read_content


@click.command("context")
@click.argument("query", required=False)
@click.option("--session", help="The current session: its turns are left out.")
@click.option(
    "--max-entries", default=50, show_default=True, type=int, help="Most memories in the block."
)
@click.option(
    "--budget",
    "--max-tokens",
    "max_tokens",
    type=int,
    help="Most tokens in the block, headings included (default: no limit).",
)
@click.option(
    "--profile",
    type=click.Choice(list(RECIPES), case_sensitive=False),
    help="A seed's recipe (default: the profile setting, else hivemem: all three sections).",
)
@click.option("--max-relevant", type=int, help="Most memories in the relevance section.")
@click.option("--min-score", type=float, help="Relevance floor in [0, 1] (default 0.05).")
@json_option
@pass_env
def context(
    env: Env,
    query: str | None,
    session: str | None,
    max_entries: int,
    max_tokens: int | None,
    profile: str | None,
    max_relevant: int | None,
    min_score: float | None,
    as_json: bool,
) -> None:
    """Print the memory block for a prompt about QUERY.

    QUERY is the user's message or the task (- reads standard input). The block holds
    the pinned memories (identity, lessons, decisions, current context), then the
    memories of earlier sessions relevant to QUERY, then the latest reflection, within
    the budget. Nothing is printed for an empty block (a note on stderr says so).
    """
    block = context_block(
        env.memory(),
        query=read_content(query) if query is not None else None,
        session_id=session,
        max_entries=max_entries,
        max_tokens=max_tokens,
        profile=profile,
        max_relevant=max_relevant,
        min_score=min_score,
    )
    if as_json:
        echo_json(block.to_dict())
    elif block.text:
        click.echo(block.text, nl=False)
    else:
        click.echo("no memories for this prompt", err=True)


COMMANDS = (context,)
