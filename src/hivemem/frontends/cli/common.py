"""What every command shares: the store handle built from the global options, the
``--json`` switch, the human output format, and the one place errors are presented.

Errors: every failure ends as one line on stderr, ``error: <message>``, and an exit code
(``EXIT_CODES``): library errors (``HiveMemError.exit_code``), click's usage errors
(exit 2, with the command's ``--help`` to see instead of a usage block) and file errors
(exit 1) alike. ``NO_COLOR`` turns colour off.

Output rules: human output is compact, one line per memory (id, type, key, status flag,
content snippet); ``--json`` prints the library's own ``to_dict()`` shapes, nothing
re-invented here.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

import hivemem

from ... import Hit, HiveMemError, Memory, ScopedMemory, Settings, Store

F = TypeVar("F", bound=Callable[..., Any])
LLM_API_KEY_ENV = "HIVEMEM_LLM_API_KEY"
EMBED_API_KEY_ENV = "HIVEMEM_EMBED_API_KEY"


EXIT_CODES = (
    (0, "success"),
    (1, "a check failed (doctor), a file could not be read or written, or aborted"),
    (2, "invalid input or usage (a bad option, an empty query, a bad value)"),
    (3, "not found (no memory, key, session or token by that name)"),
    (4, "conflict (e.g. a key that already has an active memory)"),
    (5, "a missing optional dependency (the message has the install command)"),
    (
        6,
        "store error (no store at that path, not a HiveMem file, a newer schema, a "
        "damaged file, a full disk)",
    ),
    (7, "forbidden (this handle has no right to change that scope)"),
    (
        8,
        "try again: a passing failure outlasted the retries (a deadlock, a lost "
        "connection, a file locked too long); the write that failed saved nothing",
    ),
)
EXIT_CODES_HELP = "\b\nExit codes:\n" + "\n".join(f"  {c}  {text}" for c, text in EXIT_CODES)


def no_color() -> bool:
    """``NO_COLOR`` set to anything but the empty string (no-color.org)."""
    return bool(os.environ.get("NO_COLOR"))


def report_error(message: str, exit_code: int) -> NoReturn:
    """Print the one error line on stderr and exit: the CLI's single translation point."""
    flat = " ".join(message.split())
    prefix = click.style("error:", fg="red", bold=True)
    click.echo(f"{prefix} {flat}", err=True, color=False if no_color() else None)
    sys.exit(exit_code)


class HiveMemGroup(click.Group):
    """The root group: commands in the order they are added, and every error presented
    the same way (``report_error``)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)  # the order they are added: the order of use

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:  # a caller that handles errors itself
            return super().main(args, prog_name, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name, standalone_mode=False, **extra)
        except HiveMemError as exc:
            report_error(str(exc), exc.exit_code)
        except click.exceptions.NoArgsIsHelpError as exc:  # a bare group: its help
            exc.show()
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            see = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            report_error(_sentence(exc.format_message()) + see, exc.exit_code)
        except click.ClickException as exc:
            report_error(exc.format_message(), exc.exit_code)
        except click.Abort:
            report_error("aborted", 1)
        sys.exit(result if isinstance(result, int) else 0)


def accept_global_options(command: click.Command) -> None:
    """Let ``--db``, ``--scope`` and ``--shared`` come after the command too
    (``hivemem add "…" --scope team-a`` as well as ``hivemem --scope team-a add "…"``).

    Each leaf command gains the options it does not already have (``serve-mcp`` keeps its
    own ``--scope``); given there, they replace the global value in the ``Env`` the group
    built before the command's own options were parsed. Groups are walked to their leaves.
    """
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            accept_global_options(sub)
        return
    taken = {opt for param in command.params for opt in getattr(param, "opts", ())}
    for names, multiple, metavar, what in (
        (("--db",), False, "PATH", "The store (same as the global --db)."),
        (("--scope",), False, "NAME", "The scope (same as the global --scope)."),
        (("--shared",), True, "NAME", "A shared scope to read (same as the global --shared)."),
    ):
        if taken.intersection(names):
            continue
        command.params.append(
            click.Option(
                names,
                multiple=multiple,
                metavar=metavar,
                expose_value=False,
                is_eager=True,  # before the command's own callbacks read the Env
                callback=_set_global,
                help=what,
                hidden=True,  # documented once, in `hivemem --help`
            )
        )


def _set_global(ctx: click.Context, param: click.Parameter, value: Any) -> None:
    if value is None or value == ():
        return
    env = ctx.find_object(Env)
    if env is None:
        return
    if env._store is not None:  # pragma: no cover - options are parsed before any use
        raise click.UsageError(f"--{param.name} came too late: the store is already open")
    if param.name == "db":
        env.db = value
    elif param.name == "scope":
        env.scope = value
    else:
        env.shared = tuple(value)


def _sentence(text: str) -> str:
    return text[:-1] if text.endswith(".") else text


@dataclass
class Env:
    """The global options; the store is opened on first use and closed on exit."""

    db: str | None
    scope: str
    shared: tuple[str, ...]
    settings: Settings
    _store: Store | None = field(default=None, repr=False)

    def store(self, *, create: bool = False) -> Store:
        """The store of ``--db``. Reads never create one (``create=False``: a missing
        file is ``NotAStore``, exit 6, naming the path); a command that puts something
        in the store passes ``create=True``, and a store it makes is said once on stderr,
        with the folders it made for it (the rule is in ``hivemem --help``, README)."""
        if self._store is None:
            self._store = open_store(self.db, self.settings, create=create)
        return self._store

    def memory(self, *, create: bool = False) -> ScopedMemory:
        store = self.store(create=create)
        return store.scope(self.scope, shared=self.shared, actor=store.settings.agent or None)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


def open_store(location: str | None, settings: Settings, *, create: bool, **options: Any) -> Store:
    """``hivemem.open`` for a command: the LLM's and the embedder's keys read here, at the
    edge (never printed); with ``create``, the missing folders of a new file are made,
    and a store this call made is announced on stderr, once."""
    made: list[Path] = []
    if create and location and location != ":memory:" and "://" not in location:
        folder = Path(location).expanduser().absolute().parent
        made = [p for p in (folder, *folder.parents) if not p.exists()]
        folder.mkdir(parents=True, exist_ok=True)
    options.setdefault("llm_api_key", os.environ.get(LLM_API_KEY_ENV) or None)
    options.setdefault("embed_api_key", os.environ.get(EMBED_API_KEY_ENV) or None)
    try:
        store = hivemem.open(location, settings=settings, create=create, **options)
    except BaseException:
        for folder in made:  # the folders made for a store that did not open
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise
    if store.created:
        also = f" (and its folder {made[0]})" if made else ""
        click.echo(f"created a new HiveMem store at {store.location}{also}", err=True)
    return store


pass_env = click.make_pass_decorator(Env)


def json_option(fn: F) -> F:
    return click.option(
        "--json", "as_json", is_flag=True, help="Print machine-readable JSON instead of text."
    )(fn)


def echo_json(value: Any) -> None:
    """JSON on stdout: UTF-8 text where the terminal takes it, ``\\u`` escapes elsewhere."""
    encoding = (getattr(sys.stdout, "encoding", None) or "").lower().replace("-", "")
    text = json.dumps(value, indent=2, ensure_ascii=encoding != "utf8", default=str)
    click.echo(text)


def tolerate_any_terminal() -> None:
    """Text a terminal cannot encode (an emoji on a Latin-1 console) is escaped instead
    of failing the command after its work is done."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(errors="backslashreplace")


def read_content(value: str) -> str:
    """The content argument: the text itself, or ``-`` for standard input (one trailing
    newline dropped, as shells add it)."""
    if value != "-":
        return value
    text = sys.stdin.buffer.read().decode("utf-8", errors="surrogateescape")
    return text[:-1] if text.endswith("\n") else text


def _width() -> int:
    return max(60, shutil.get_terminal_size((120, 24)).columns)


def _snippet(text: str, room: int, full: bool = False) -> str:
    if full:  # the whole content, its lines indented under the row
        return "\n    ".join(text.splitlines() or [""])
    flat = " ".join(text.split())
    room = max(room, 20)
    return flat if len(flat) <= room else flat[: room - 1] + "…"


def memory_line(
    memory: Memory, own_scope: str | None = None, prefix: str = "", full: bool = False
) -> str:
    """``<id>  <type>  <key>  [status] @scope  <content snippet>`` on one line (with
    ``full``, the whole content: its further lines indented)."""
    parts = [prefix + memory.id, f"{memory.type.value:<10}", memory.key or "-"]
    if not memory.is_active:
        parts.append(f"[{memory.status.value}]")
    if own_scope is not None and memory.scope != own_scope:
        parts.append(f"@{memory.scope}")
    head = "  ".join(parts) + "  "
    return head + _snippet(memory.content, _width() - len(head), full)


def hit_lines(hit: Hit, own_scope: str, explain: bool, full: bool = False) -> list[str]:
    lines = [memory_line(hit.memory, own_scope, prefix=f"{hit.score:.3f}  ", full=full)]
    if explain:
        e = hit.explain
        lanes = ", ".join(
            f"{name}(" + ", ".join(f"{k}={_num(v)}" for k, v in values.items()) + ")"
            for name, values in e.lanes.items()
        )
        factors = ", ".join(f"{k}={_num(v)}" for k, v in e.factors.items())
        lines.append(f"       lanes: {lanes or '-'}; fused {_num(e.fused)}")
        lines.append(f"       factors: {factors or '-'}; chunk {e.chunk_seq}")
        if e.matched_terms:
            lines.append(f"       matched: {', '.join(e.matched_terms)}")
        lines.extend(f"       note: {note}" for note in e.notes)
    return lines


def _num(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def memory_details(memory: Memory) -> list[str]:
    """Every field, one per line, content last and in full."""
    record = memory.to_dict()
    content = record.pop("content")
    width = max(len(name) for name in record)
    lines = []
    for name, value in record.items():
        if value in (None, [], {}):
            continue
        shown = json.dumps(value, ensure_ascii=False) if isinstance(value, list | dict) else value
        lines.append(f"{name:<{width}}  {shown}")
    lines.append("content:")
    lines.extend("  " + line for line in content.splitlines() or [""])
    return lines


def history_line(memory: Memory, full: bool = False) -> str:
    until = f"{memory.valid_until:%Y-%m-%d %H:%M:%S}" if memory.valid_until else "now"
    span = f"{memory.valid_from:%Y-%m-%d %H:%M:%S} → {until}"
    reason = f" ({memory.supersede_reason})" if memory.supersede_reason else ""
    head = f"{span}  {memory.id}  {memory.status.value}{reason}  "
    return head + _snippet(memory.content, _width() - len(head), full)


def counts(mapping: Mapping[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in sorted(mapping.items())) or "none"


def stats_lines(stats: Mapping[str, Any], indent: str = "") -> list[str]:
    lines = [
        f"{indent}memories: {stats['total']} ({counts(stats['by_status'])})",
        f"{indent}active by kind: {counts(stats['active_by_kind'])}",
        f"{indent}active by type: {counts(stats['active_by_type'])}",
        f"{indent}expired (still active): {stats['expired']}",
        f"{indent}sessions: {stats['sessions']}",
    ]
    for name, sub in stats.get("shared", {}).items():
        lines.append(f"{indent}shared scope {name}:")
        lines.extend(stats_lines(sub, indent + "  "))
    return lines


def optional(values: tuple[str, ...]) -> tuple[str, ...] | None:
    """A repeatable option: ``None`` when not given, so the library's default applies."""
    return values or None
