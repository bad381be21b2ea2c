"""What every command shares: the store handle built from the global options, the
``--json`` switch, and the human output format.

Output rules: human output is compact, one line per memory (id, type, key, status flag,
content snippet); ``--json`` prints the library's own ``to_dict()`` shapes, nothing
re-invented here.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click

import hivemem
from hivemem import Hit, Memory, ScopedMemory, Settings, Store

F = TypeVar("F", bound=Callable[..., Any])
LLM_API_KEY_ENV = "HIVEMEM_LLM_API_KEY"


@dataclass
class Env:
    """The global options; the store is opened on first use and closed on exit."""

    db: str | None
    scope: str
    shared: tuple[str, ...]
    settings: Settings
    _store: Store | None = field(default=None, repr=False)

    def store(self, *, create_folder: bool = False) -> Store:
        if self._store is None:
            if create_folder and self.db and self.db != ":memory:" and "://" not in self.db:
                Path(self.db).expanduser().parent.mkdir(parents=True, exist_ok=True)
            # The LLM's key is read here, at the edge, and never printed (settings.llm).
            key = os.environ.get(LLM_API_KEY_ENV) or None
            self._store = hivemem.open(self.db, settings=self.settings, llm_api_key=key)
        return self._store

    def memory(self) -> ScopedMemory:
        return self.store().scope(self.scope, shared=self.shared)

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None


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


def _snippet(text: str, room: int) -> str:
    flat = " ".join(text.split())
    room = max(room, 20)
    return flat if len(flat) <= room else flat[: room - 1] + "…"


def memory_line(memory: Memory, own_scope: str | None = None, prefix: str = "") -> str:
    """``<id>  <type>  <key>  [status] @scope  <content snippet>`` on one line."""
    parts = [prefix + memory.id, f"{memory.type.value:<10}", memory.key or "-"]
    if not memory.is_active:
        parts.append(f"[{memory.status.value}]")
    if own_scope is not None and memory.scope != own_scope:
        parts.append(f"@{memory.scope}")
    head = "  ".join(parts) + "  "
    return head + _snippet(memory.content, _width() - len(head))


def hit_lines(hit: Hit, own_scope: str, explain: bool) -> list[str]:
    lines = [memory_line(hit.memory, own_scope, prefix=f"{hit.score:.3f}  ")]
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


def history_line(memory: Memory) -> str:
    until = f"{memory.valid_until:%Y-%m-%d %H:%M:%S}" if memory.valid_until else "now"
    span = f"{memory.valid_from:%Y-%m-%d %H:%M:%S} → {until}"
    reason = f" ({memory.supersede_reason})" if memory.supersede_reason else ""
    head = f"{span}  {memory.id}  {memory.status.value}{reason}  "
    return head + _snippet(memory.content, _width() - len(head))


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
