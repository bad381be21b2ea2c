"""Commands on the memories of one scope: add, search, list, show, history, forget,
correct, confirm. Each parses its options, calls one ``ScopedMemory`` method and prints
the result."""

from __future__ import annotations

from typing import Any

import click

from ... import Conflict, InvalidInput
from ...types import Kind, Status
from .common import (
    Env,
    echo_json,
    history_line,
    hit_lines,
    json_option,
    memory_details,
    memory_line,
    optional,
    pass_env,
    read_content,
)

_KINDS = ", ".join(k.value for k in Kind)
_STATUSES = ", ".join(s.value for s in Status)
_TYPE_HELP = "Type: identity, lesson, decision, context, reference, historical (or an alias)."


def _filter_options(fn: Any) -> Any:
    """The filters ``search`` and ``list`` share (DESIGN §3: kind/type/tag/time/session)."""
    options = [
        click.option(
            "--kind", "kinds", multiple=True, help=f"Only this kind ({_KINDS}). Repeatable."
        ),
        click.option("--type", "types", multiple=True, help="Only this type. Repeatable."),
        click.option("--tag", "tags", multiple=True, help="Carries at least one of these tags."),
        click.option("--session", "sessions", multiple=True, help="Only from these sessions."),
        click.option(
            "--exclude-session", "exclude_sessions", multiple=True, help="Not from these sessions."
        ),
        click.option("--since", help="Event/creation time at or after (ISO 8601, or an age: 7d)."),
        click.option("--until", help="Event/creation time before (ISO 8601, or an age: 12h)."),
        click.option("--status", "statuses", multiple=True, help=f"Status ({_STATUSES})."),
        click.option("--as-of", help="What was valid at this time (replaces --status)."),
    ]
    for option in reversed(options):
        fn = option(fn)
    return fn


def _filters(**given: Any) -> dict[str, Any]:
    return {
        "kind": optional(given["kinds"]),
        "type": optional(given["types"]),
        "tags": optional(given["tags"]),
        "session_id": optional(given["sessions"]),
        "exclude_sessions": optional(given["exclude_sessions"]),
        "since": given["since"],
        "until": given["until"],
        "status": optional(given["statuses"]),
        "as_of": given["as_of"],
    }


def full_option(fn: Any) -> Any:
    return click.option(
        "--full", is_flag=True, help="Show each memory's whole content (default: one line)."
    )(fn)


def _print_memory(env: Env, memory: Any, as_json: bool, verb: str = "") -> None:
    if as_json:
        echo_json(memory.to_dict())
    else:
        click.echo((f"{verb} " if verb else "") + memory_line(memory, env.scope))


@click.command()
@click.argument("content")
@click.option("--key", help="Short identifier; at most one active memory per key.")
@click.option("--type", "type_", help=_TYPE_HELP)
@click.option("--kind", help=f"How it was made ({_KINDS}); default fact.")
@click.option("--source", help="Where it came from (manual, conversation, …); drives the TTL.")
@click.option(
    "--reason", help="Supersede reason: replace the active memory under --key (a new belief)."
)
@click.option("--minor", is_flag=True, help="Replace the memory under --key as a small fix.")
@click.option("--tag", "tags", multiple=True, help="A tag. Repeatable.")
@click.option("--session", help="Session id (required with --episode).")
@click.option("--role", help="Who said it: user or an agent's name (required with --episode).")
@click.option("--episode", is_flag=True, help="Store a raw dialogue turn (add_episode).")
@json_option
@pass_env
def add(
    env: Env,
    content: str,
    key: str | None,
    type_: str | None,
    kind: str | None,
    source: str | None,
    reason: str | None,
    minor: bool,
    tags: tuple[str, ...],
    session: str | None,
    role: str | None,
    episode: bool,
    as_json: bool,
) -> None:
    """Save a memory.

    CONTENT is the text, or - to read it from standard input. Saving under a --key that
    already holds an active memory is refused unless you give --reason (the old one
    becomes superseded) or --minor.
    """
    text = read_content(content)
    extra: dict[str, Any] = {"source": source} if source else {}
    env.store(create=True)  # a write: a new store (and folder) is made, and said
    if episode:
        if key or kind or reason or minor:
            raise click.UsageError("--episode takes no --key, --kind, --reason or --minor")
        if not session or not role:
            raise click.UsageError("--episode needs --session and --role")
        memory = env.memory().add_episode(
            text, session, role, tags=optional(tags), type=type_, wait=True, **extra
        )
    else:
        if kind:
            extra["kind"] = kind
        try:
            memory = env.memory().save(
                text,
                key=key,
                type=type_,
                supersede_reason=reason,
                minor=minor,
                tags=optional(tags),
                session_id=session,
                role=role,
                wait=True,  # a one-shot process: embed before it exits
                **extra,
            )
        except Conflict as exc:  # the library names its arguments; say the CLI's options
            raise Conflict(f"{exc.message} (here: --reason TEXT or --minor)", exc.current) from None
    _print_memory(env, memory, as_json, "saved")
    if memory.supersedes_id and not as_json:
        click.echo(f"  supersedes {memory.supersedes_id} ({memory.supersede_reason})")


@click.command()
@click.argument("query")
@click.option("--limit", default=10, show_default=True, type=int, help="Most hits to show.")
@_filter_options
@click.option("--min-score", default=0.0, type=float, help="Drop hits scoring below (0-1).")
@click.option("--explain", is_flag=True, help="Show how each score was made.")
@click.option(
    "--deep", is_flag=True, help="Slower search for recall: wider lanes, query expansion."
)
@full_option
@json_option
@pass_env
def search(
    env: Env,
    query: str,
    limit: int,
    min_score: float,
    explain: bool,
    deep: bool,
    full: bool,
    as_json: bool,
    **filters: Any,
) -> None:
    """Find memories matching QUERY, best first.

    Each hit has a score in [0, 1] that means the same across queries. Superseded
    memories are shown flagged and ranked lower; deleted ones never appear. An empty
    QUERY is an error (exit 2), as it is over HTTP.
    """
    if not read_content(query).strip():
        raise InvalidInput("query", "is empty: give the words to search for")
    mode = "deep" if deep else "fast"
    hits = env.memory().search(query, limit, min_score=min_score, mode=mode, **_filters(**filters))
    if as_json:
        echo_json([hit.to_dict() for hit in hits])
        return
    if not hits:
        click.echo("no matches", err=True)
    for hit in hits:
        for line in hit_lines(hit, env.scope, explain, full=full):
            click.echo(line)


@click.command("list")
@_filter_options
@click.option("--key", help="Only memories under this key (add --status to see old ones).")
@click.option("--limit", default=100, show_default=True, type=int, help="Most rows to show.")
@click.option("--offset", default=0, show_default=True, type=int, help="Rows to skip.")
@full_option
@json_option
@pass_env
def list_(
    env: Env, key: str | None, limit: int, offset: int, full: bool, as_json: bool, **filters: Any
) -> None:
    """List memories, newest first.

    Only active memories unless --status or --as-of says otherwise.
    """
    memories = env.memory().list(key=key, limit=limit, offset=offset, **_filters(**filters))
    if as_json:
        echo_json([m.to_dict() for m in memories])
        return
    if not memories:
        click.echo("no memories", err=True)
    for memory in memories:
        click.echo(memory_line(memory, env.scope, full=full))


@click.command()
@click.argument("id_or_key")
@click.option("--as-of", help="By key: the version that was valid at this time.")
@json_option
@pass_env
def show(env: Env, id_or_key: str, as_of: str | None, as_json: bool) -> None:
    """Show every field of one memory.

    ID_OR_KEY is a memory id (any status) or a key (its active memory).
    """
    memory = env.memory().get(id_or_key, as_of=as_of)
    if as_json:
        echo_json(memory.to_dict())
        return
    for line in memory_details(memory):
        click.echo(line)


@click.command()
@click.argument("id_or_key")
@full_option
@json_option
@pass_env
def history(env: Env, id_or_key: str, full: bool, as_json: bool) -> None:
    """Show every version of a memory, oldest first.

    ID_OR_KEY is any version's id, or the key; the whole supersede chain is shown.
    """
    versions = env.memory().history(id_or_key)
    if as_json:
        echo_json([m.to_dict() for m in versions])
        return
    for memory in versions:
        click.echo(history_line(memory, full=full))


@click.command()
@click.argument("id_or_key")
@json_option
@pass_env
def forget(env: Env, id_or_key: str, as_json: bool) -> None:
    """Delete a memory (soft).

    It leaves search and lists; show and history still find it.
    """
    _print_memory(env, env.memory().delete(id_or_key), as_json, "deleted")


@click.command()
@click.argument("id_or_key")
@click.argument("content")
@click.option("--reason", help="Why it changed (default: corrected).")
@click.option("--minor", is_flag=True, help="A wording fix: keeps usage and confidence.")
@json_option
@pass_env
def correct(
    env: Env, id_or_key: str, content: str, reason: str | None, minor: bool, as_json: bool
) -> None:
    """Replace a memory's content with a new version.

    ID_OR_KEY is the current version's id, or its key; CONTENT the new text (or - for
    standard input). The old version stays in the history, superseded by the new one.
    """
    mem = env.memory()
    memory_id = mem.get(id_or_key).id  # a key names its active memory, as in show
    memory = mem.correct(memory_id, read_content(content), reason=reason, minor=minor)
    _print_memory(env, memory, as_json, "saved")


@click.command()
@click.argument("id_or_key")
@json_option
@pass_env
def confirm(env: Env, id_or_key: str, as_json: bool) -> None:
    """Confirm a memory: confidence 1.0 and protected from decay.

    ID_OR_KEY is the memory's id, or its key (its active memory).
    """
    mem = env.memory()
    _print_memory(env, mem.confirm(mem.get(id_or_key).id), as_json, "confirmed")


@click.command()
@click.argument("id_or_key", required=False)
@click.option("--all", "everything", is_flag=True, help="Erase everything the scope holds.")
@click.option("--yes", is_flag=True, help="Erase for real (without it: only show what would go).")
@click.option(
    "--no-vacuum",
    is_flag=True,
    help="Skip the VACUUM after the erase (faster on a big store; freed pages are still "
    "zeroed by secure_delete, but older free pages may keep stale copies).",
)
@click.option("--audit", is_flag=True, help="List the purge records of the scope instead.")
@json_option
@pass_env
def purge(
    env: Env,
    id_or_key: str | None,
    everything: bool,
    yes: bool,
    no_vacuum: bool,
    audit: bool,
    as_json: bool,
) -> None:
    """Erase a memory (its whole chain) or a whole scope, for good.

    Unlike forget, nothing is kept: rows, keyword index entries, vectors, cached
    embeddings, entity links, and the memories drawn from it (consolidated facts,
    summaries) and its promoted copies in the scopes you lead; with --all also the
    scope's sessions, vault, run log and the tokens bound to it alone. An audit record
    without content stays (--audit lists them). Without --yes it prints what would be
    erased and exits with status 1, erasing nothing.
    """
    if audit:
        from ...write.purge import audit as purge_log

        records = purge_log(env.store(), env.scope)
        if as_json:
            echo_json(records)
            return
        for r in records:
            counts = ", ".join(f"{n} {k}" for k, n in r["counts"].items())
            click.echo(f"{r['purged_at']}  {r['target']:<6}  by {r['purged_by']}  {counts}")
        if not records:
            click.echo("no purges in this scope", err=True)
        return
    if everything == bool(id_or_key):
        raise click.UsageError("give ID_OR_KEY, or --all for the whole scope")
    mem = env.memory()
    options = {"dry_run": not yes, "vacuum": not no_vacuum}
    report = mem.purge_all(**options) if everything else mem.purge(id_or_key or "", **options)
    if as_json:
        echo_json(report.to_dict())
    else:
        what = f"scope {report.scope!r}" if everything else f"chain of {id_or_key!r}"
        verb = "would erase" if report.dry_run else "erased"
        click.echo(f"{verb} {what}: " + ", ".join(f"{n} {k}" for k, n in report.counts.items()))
        for memory_id in report.memory_ids[:20]:
            click.echo(f"  {memory_id}")
        if len(report.memory_ids) > 20:
            click.echo(f"  … and {len(report.memory_ids) - 20} more")
        for scope, ids in report.copies.items():
            click.echo(f"  promoted copies in scope {scope!r}: {', '.join(ids)}")
        if report.copies_kept:
            click.echo(
                "  kept (a scope you do not lead; its lead can purge them): "
                + ", ".join(report.copies_kept)
            )
    if report.dry_run:
        click.echo("error: nothing was erased: add --yes to erase for good", err=True)
        raise SystemExit(1)


COMMANDS = (add, search, list_, show, history, forget, correct, confirm, purge)
