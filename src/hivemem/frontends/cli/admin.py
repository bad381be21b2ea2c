"""Commands on the store as a whole: init, export, import, stats, doctor, settings."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import click

from ... import Conflict, HiveMemError, InvalidInput, NotAStore, Settings, Store, StoreError
from ...evaluation import doctor
from ...facade.database import default_path, resolve_embedder
from ...lifecycle.portability import ImportReport, export_jsonl, import_jsonl
from ...lifecycle.rescue import RescueReport, rescue_jsonl
from ...providers import calibration
from .common import Env, echo_json, json_option, pass_env, stats_lines

_SHOWN_PROBLEMS = 20


@click.command()
@pass_env
def init(env: Env) -> None:
    """Create the store; print its path and schema.

    The folder of --db is created too. Opening an existing store applies pending schema
    migrations.
    """
    store = env.store(create=True)
    schema = store.health.schema_version()
    click.echo(f"{store.location}")
    click.echo(f"schema: {', '.join(schema)}")


class _NoBar:
    def update(self, steps: int) -> None:
        pass


@contextlib.contextmanager
def _progress(label: str, total: int) -> Iterator[Any]:
    """A progress bar on stderr when it is a terminal (scripts and pipes get none)."""
    if not sys.stderr.isatty():
        yield _NoBar()
        return
    with click.progressbar(
        length=max(total, 1), label=label, file=sys.stderr, update_min_steps=100
    ) as bar:
        yield bar


@click.command("export")
@click.argument("file", default="-", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--scope-only", is_flag=True, help="Only the current scope (default: every scope).")
@click.option(
    "--include-secrets",
    is_flag=True,
    help="Export the vault's secret entries and keep secret values where memories "
    "contain them (default: secret entries left out, values redacted).",
)
@click.option("--force", is_flag=True, help="Overwrite FILE if it exists.")
@pass_env
@click.pass_context
def export_(
    ctx: click.Context,
    env: Env,
    file: str,
    scope_only: bool,
    include_secrets: bool,
    force: bool,
) -> None:
    """Write the store to a JSON Lines file (a lossless backup).

    Every memory of every scope (or --scope-only), any status, history included, goes to
    FILE (- for standard output, the default), then the vault's entries, the HTTP API's
    tokens (as hashes; only when every scope is exported), entity aliases and which
    sessions were consolidated. What is derived (chunks, keyword index, vectors) is
    rebuilt on import. The file is written whole or not at all: it is built next to FILE
    and renamed (or copied to standard output); an existing FILE is kept unless --force.
    Secret vault entries are left out, and secret values redacted from memories, unless
    --include-secrets; what was left out is said on stderr and counted in the file's
    header.

    On a damaged store (one that cannot be opened, or whose full scan fails) export is a
    rescue: it reads the file row by row and writes every memory that can still be read,
    then prints the rows counted, exported and unreadable; it exits with status 6 when
    some rows could not be read.
    """
    if file != "-" and not force and _taken(file):
        raise InvalidInput("file", f"{file} exists: pass --force to overwrite it")
    scopes = [env.scope] if scope_only else None
    where = "standard output" if file == "-" else file
    details: dict[str, Any] = {}
    try:
        store = env.store()
        total = store.scope(env.scope).stats()["total"] if scope_only else store.stats()["total"]
        with _progress("exporting", total) as bar:
            count = _write_whole(
                file,
                lambda fp: export_jsonl(
                    store,
                    fp,
                    scopes,
                    bar.update,
                    include_secrets=include_secrets,
                    details=details,
                ),
            )
    except NotAStore:
        raise  # no store at all (missing, or another program's file): nothing to rescue
    except StoreError as exc:
        click.echo(f"warning: {exc}", err=True)
        click.echo("exporting every memory that can still be read, row by row", err=True)
        env.close()
        location = env.db or str(default_path())
        aside = None if file == "-" else Path(file + ".rejected.jsonl")
        reports: list[RescueReport] = []

        def rescue(fp: IO[str]) -> int:
            with contextlib.ExitStack() as stack:
                rejects = stack.enter_context(aside.open("w", encoding="utf-8")) if aside else None
                reports.append(
                    rescue_jsonl(
                        location, fp, scopes, include_secrets=include_secrets, rejects=rejects
                    )
                )
            return reports[-1].exported

        try:
            _write_whole(file, rescue)
        except BaseException:  # nothing could be read: no file of set-aside rows either
            if aside is not None:
                with contextlib.suppress(OSError):  # one that cannot be made was not made
                    aside.unlink(missing_ok=True)
            raise
        report = reports[-1]
        click.echo(f"{report.summary()} → {where}", err=True)
        for memory_id, why in report.rejected[:_SHOWN_PROBLEMS]:
            click.echo(f"  set aside {memory_id}: {why}", err=True)
        if report.rejected:
            kept = f"kept in {aside}" if aside else "export to a FILE to keep them"
            click.echo(f"  rows set aside: {len(report.rejected)} ({kept})", err=True)
        elif aside is not None:
            aside.unlink(missing_ok=True)
        if report.unreadable_ranges:
            shown = ", ".join(
                f"{lo}" if lo == hi else f"{lo}-{hi}"
                for lo, hi in report.unreadable_ranges[:_SHOWN_PROBLEMS]
            )
            more = " …" if len(report.unreadable_ranges) > _SHOWN_PROBLEMS else ""
            click.echo(f"  could not read (damaged pages), rowids: {shown}{more}", err=True)
        if not include_secrets and not report.secrets_redacted:
            click.echo("warning: the vault could not be read: secrets were not redacted", err=True)
        if not report.complete:
            ctx.exit(StoreError.exit_code)
        return
    records = details.get("records") or {}
    extra = "".join(f", {n} {kind.replace('_', ' ')}" for kind, n in sorted(records.items()))
    click.echo(
        f"exported {count} memories{extra} to {where} (counted {total}, 0 unreadable)", err=True
    )
    for what, n in sorted((details.get("left_out") or {}).items()):
        hint = " (--include-secrets to keep them)" if "secret" in what else ""
        click.echo(f"left out: {n} {what}{hint}", err=True)


@contextlib.contextmanager
def _utf8(binary: IO[bytes], mode: str) -> Iterator[IO[str]]:
    """Standard input/output as UTF-8 text whatever the locale (JSON Lines is UTF-8); a
    byte-order mark on input is skipped. The underlying stream is left open."""
    encoding = "utf-8-sig" if mode == "r" else "utf-8"
    text = io.TextIOWrapper(binary, encoding=encoding, newline="\n" if mode == "w" else None)
    try:
        yield text
    finally:
        if mode == "w":
            text.flush()
        text.detach()


def _write_whole(file: str, write: Callable[[IO[str]], int]) -> int:
    """Run ``write`` into a file beside ``file`` (a temporary file for ``-``), then rename
    it into place (copy it to standard output): a failed export leaves nothing behind."""
    if file == "-":
        with tempfile.TemporaryFile("w+", encoding="utf-8", newline="\n") as fp:
            count = write(fp)
            fp.seek(0)
            with _utf8(sys.stdout.buffer, "w") as out:
                shutil.copyfileobj(fp, out)
        return count
    path = Path(file)
    if not path.name or path.name in (".", ".."):
        raise click.BadParameter(f"{path} is a folder; give a file name", param_hint="FILE")
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8", newline="\n") as fp:
            count = write(fp)
        os.replace(partial, path)
    except (OSError, ValueError) as exc:  # ValueError: a name no file system can hold
        raise click.FileError(str(path), hint=_why(exc)) from None
    finally:
        with contextlib.suppress(OSError, ValueError):
            partial.unlink(missing_ok=True)
    return count


def _taken(file: str) -> bool:
    """Whether ``file`` exists already; a name no file system can hold (too long, a
    NUL) is invalid input naming the field."""
    try:
        return Path(file).exists()
    except (OSError, ValueError) as exc:
        raise InvalidInput("file", f"{file[:60]!r}…: {_why(exc)}") from None


def _why(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return exc.strerror or str(exc)
    return "not a file name this system can hold (a NUL or an unpaired surrogate)"


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--into-scope", help="Put every memory into this scope instead of its own.")
@click.option(
    "--no-embed",
    is_flag=True,
    help="Return without embedding the imported memories (`hivemem reindex` does it later).",
)
@json_option
@pass_env
def import_(env: Env, file: str, into_scope: str | None, no_embed: bool, as_json: bool) -> None:
    """Load a file written by `hivemem export`.

    FILE may be - for standard input. The whole file is checked first: when any line
    is invalid or clashes with the store, nothing is imported and every problem is
    listed with its line number. Then it is written 500 memories per transaction, so
    other writers and readers get in between. Memories already present are skipped, so
    importing a file twice is safe and an interrupted import is completed by running it
    again. Then the imported memories are embedded for the vector lane, with a progress
    bar (--no-embed leaves that to `hivemem reindex`; until then they are found by
    keyword).
    """
    with contextlib.ExitStack() as stack:  # the file opens first: a missing one makes no store
        if file == "-":
            fp, total = stack.enter_context(_utf8(sys.stdin.buffer, "r")), 0
        else:
            total = _count_lines(file)
            fp = stack.enter_context(_open(file))
        store = env.store(create=True)
        stack.enter_context(store.indexer.owning())  # it embeds what it imports, all of it
        report = _import(store, fp, into_scope, total)
        _fail_unless_ok(report, as_json)
        embedded = 0 if no_embed else _embed_queued(store)
    queued = store.indexer.pending() if store.indexer.enabled else 0
    if as_json:
        echo_json({**report.to_dict(), "embedded": embedded, "queued": queued})
        return
    records = "".join(
        f", {n} {kind.replace('_', ' ')}" for kind, n in sorted(report.records.items())
    )
    click.echo(
        f"imported {report.imported} memories{records}, skipped {report.skipped_identical} "
        "already present"
    )
    if embedded:
        click.echo(f"embedded {embedded} chunks with {store.indexer.identity}")
    if queued:
        click.echo(
            f"{queued} chunks wait for their vectors (found by keyword until then): "
            "run `hivemem reindex` to embed them now",
            err=True,
        )


def _embed_queued(store: Store, label: str = "embedding") -> int:
    """Embed every queued chunk in this process, with a progress bar; returns how many."""
    if not store.indexer.enabled or not store.indexer.pending():
        return 0
    with contextlib.ExitStack() as stack:
        bar: list[Any] = []  # made on the first report, which knows the total
        seen = [0]

        def step(current: int, total: int) -> None:
            if not bar:
                bar.append(stack.enter_context(_progress(label, total)))
            bar[0].update(current - seen[0])
            seen[0] = current

        return store.flush(step)


def _import(store: Store, fp: IO[str], scope: str | None, total: int) -> ImportReport:
    if total <= 0:
        return import_jsonl(store, fp, scope=scope)
    with contextlib.ExitStack() as stack:
        checking = stack.enter_context(_progress("checking", total))
        bars = [checking]

        def written(rows: int) -> None:
            if bars[-1] is checking:  # the check is over: its bar gives way
                checking.update(total)
                stack.close()
                bars.append(stack.enter_context(_progress("importing", total)))
            bars[-1].update(rows)

        return import_jsonl(store, fp, scope=scope, progress=written, checked=checking.update)


@contextlib.contextmanager
def _open(file: str) -> Iterator[IO[str]]:
    try:
        fp = open(file, encoding="utf-8-sig")  # noqa: SIM115 - closed below
    except (OSError, ValueError) as exc:
        raise click.FileError(file, hint=_why(exc)) from None
    with fp:
        yield fp


def _count_lines(file: str) -> int:
    """Memory lines in the file (for the progress bar): non-blank lines less the header."""
    try:
        with open(file, "rb") as fp:
            return max(sum(1 for line in fp if line.strip()) - 1, 0)
    except (OSError, ValueError) as exc:
        raise click.FileError(file, hint=_why(exc)) from None


def _fail_unless_ok(report: ImportReport, as_json: bool = False) -> None:
    if report.ok:
        return
    if as_json:
        echo_json(report.to_dict())
    problems = [*report.errors, *report.conflicts]
    problems.sort(key=lambda p: p.line)
    for problem in problems[:_SHOWN_PROBLEMS]:
        click.echo(f"  {problem}", err=True)
    if len(problems) > _SHOWN_PROBLEMS:
        click.echo(f"  … and {len(problems) - _SHOWN_PROBLEMS} more (see --json)", err=True)
    summary = (
        f"nothing imported: {len(report.errors)} invalid lines, "
        f"{len(report.conflicts)} conflicts" + (" (stopped early)" if report.truncated else "")
    )
    if report.errors:
        raise InvalidInput("import", summary)
    raise Conflict(f"import: {summary}")


@click.command()
@click.option("--all", "all_scopes", is_flag=True, help="Count every scope of the store.")
@json_option
@pass_env
def stats(env: Env, all_scopes: bool, as_json: bool) -> None:
    """Count memories by status, kind and type.

    Counts the current scope and each --shared scope, or every scope with --all.
    """
    result = env.store().stats() if all_scopes else env.memory().stats()
    if as_json:
        echo_json(result)
        return
    click.echo(f"scope: {'(all)' if all_scopes else env.scope}")
    for line in stats_lines(result):
        click.echo(line)
    if not all_scopes and not result["total"]:
        others = [name for name in env.store().scopes() if name != env.scope]
        if others:  # an empty answer that is only this scope's: say where the rest is
            shown = ", ".join(others[:5]) + (", …" if len(others) > 5 else "")
            click.echo(
                f"(scope {env.scope!r} is empty; the store has {len(others)} other "
                f"scope(s): {shown} — pass --scope NAME, or --all)",
                err=True,
            )


@click.command("doctor")
@click.option("--repair", is_flag=True, help="Rebuild what is missing (never drops a memory).")
@json_option
@pass_env
def doctor_(env: Env, repair: bool, as_json: bool) -> None:
    """Check the store's health.

    Checks the file's integrity, the schema, the keyword index and the key and
    supersede rules, and prints sizes and counts; embeds one short text with the
    configured embedder (a missing or damaged model, an endpoint down or silent for 20
    s: a failed check naming the fix). Exits with status 1 when a check fails (after
    --repair: when one still fails).
    """
    try:
        store = env.store()
    except NotAStore:
        raise  # no store there, or another program's file: one line, exit 6
    except StoreError as exc:  # a file too damaged to open is a finding, not a crash
        store, fixed = None, None
        report = doctor.unopenable(env.db or str(default_path()), exc)
    if store is not None:
        fixed = doctor.repair(store) if repair else None
        report = doctor.diagnose(store)
    if as_json:
        echo_json({**report.to_dict(), "repair": fixed.to_dict() if fixed else None})
    else:
        if fixed is not None:
            click.echo(
                f"repair: memories {fixed.memories_before} before, {fixed.memories_after} "
                f"after; memories without chunks {fixed.unchunked_before} → "
                f"{fixed.unchunked_after} ({fixed.rebuilt} rebuilt)"
                + ("; the vector index built" if fixed.vector_index_built else "")
            )
            for problem in fixed.problems:
                click.echo(f"repair could not: {problem}")
        click.echo(report.location)
        for check in report.checks:
            click.echo(f"{'ok  ' if check.ok else 'FAIL'}  {check.name:<16} {check.detail}")
            if check.fix:
                click.echo(f"      {'':<16} fix: {check.fix}")
    if not report.ok:
        failed = ", ".join(check.name for check in report.failed)
        raise click.ClickException(f"{len(report.failed)} check(s) failed: {failed}")  # exit 1


@click.command("settings")
@json_option
@pass_env
def settings_(env: Env, as_json: bool) -> None:
    """List every setting with its default and help.

    A setting changed by its HIVEMEM_<NAME> environment variable shows its value too;
    one left at -1 ("the model's") shows the value the configured embedder's model
    gives it in a search (JSON: "model_value", beside "model").
    """
    current = env.settings
    model, own = _model_values(current)
    rows = [
        {"name": name, "default": default, "value": getattr(current, name), "help": help_text}
        | ({"model_value": own[name], "model": model} if name in own else {})
        for name, default, help_text in Settings.fields_help()
    ]
    if as_json:
        echo_json(rows)
        return
    for row in rows:
        value = "" if row["value"] == row["default"] else f"  (now {row['value']!r})"
        if "model_value" in row:
            value += f"  (the model's: {row['model_value']!r}, {row['model']})"
        click.echo(f"{row['name']} = {row['default']!r}{value}")
        click.echo(f"    {row['help']} [HIVEMEM_{row['name'].upper()}]")


def _model_values(settings: Settings) -> tuple[str, dict[str, Any]]:
    """The configured embedder's identity (its model is not loaded) and the value of each
    setting left at -1 that a search gives it from that model's profile; ("", {}) where
    the embedder cannot be made (``doctor`` says why)."""
    try:
        embedder = resolve_embedder(settings.embedder, settings)
    except HiveMemError:
        return "", {}
    identity = embedder.identity if embedder is not None else None
    values = calibration.resolved(settings, identity)
    own = {n: getattr(values, n) for n in calibration.FIELDS if getattr(settings, n) == -1}
    return identity or "no embedder", own


@click.command()
@click.option("--force", is_flag=True, help="Re-embed every chunk even if the model is the same.")
@json_option
@pass_env
def reindex(env: Env, force: bool, as_json: bool) -> None:
    """Embed what the vector lane is missing, with a progress bar.

    The embedder is the `embedder` setting (HIVEMEM_EMBEDDER). After a change of model
    (until then the vector lane is off and search uses the keyword lane): drops the old
    vectors, records the new model and embeds every chunk (texts already in the
    embedding cache are not embedded again). On a store of this model already: embeds
    the chunks still queued (after an import, say), or says there is nothing to do.
    This command does the work itself; the background worker stands aside.
    """
    store = env.store()
    with contextlib.ExitStack() as stack:
        bar: list[Any] = []  # made on the first report, which knows the total
        seen = [0]

        def step(current: int, total: int) -> None:
            if not bar:
                bar.append(stack.enter_context(_progress("embedding", total)))
            bar[0].update(current - seen[0])
            seen[0] = current

        done = store.reindex(step, force=force)
    identity = store.indexer.identity
    if as_json:
        echo_json({"embedded": done, "embedder": identity})
    elif done == 0:
        click.echo(f"nothing to do: every chunk has its vector from {identity}")
    else:
        click.echo(f"embedded {done} chunks with {identity}")


COMMANDS = (export_, import_, stats, doctor_, settings_, reindex)  # init is listed first, alone
