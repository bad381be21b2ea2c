"""The notes folder: Markdown and text files under a folder become ``note`` memories.

    report = index_folder(store.scope("agent-1"), "~/notes")
    print(report)   # 12 added, 1 updated, 40 unchanged, 2 removed, 1 skipped

Each file is one memory of kind ``note``, source ``file_index`` (so the ``ttl_days``
policy applies: 30 days by default), type ``reference``, keyed by its absolute path
(``file:/abs/path.md``). Its attributes record the folder, the relative path, the size,
the modification time and the sha256 of the bytes.

- A file whose size and modification time are those recorded, or whose bytes hash to
  the recorded sha256, is ``unchanged`` and not written; an unchanged note that has
  expired is saved again (a file still there stays findable).
- A changed file supersedes its note (reason ``file changed``): one active note per
  path, the old text in its history.
- A note whose file is gone is soft-deleted (``removed``).
- A file that cannot be indexed (not UTF-8, empty, over ``notes_max_file_bytes`` or
  ``max_content_bytes``, refused by ``credential_policy``) is ``skipped`` with its reason
  and logged; its earlier note, if any, is kept. Nothing is lost.

Folders are per scope: index an agent's private folder into the agent's scope, and
``promote`` a note into a shared scope when others should read it. ``watch_folder``
re-indexes on every change (``hivemem[watch]``: the ``watchfiles`` library).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import arguments
from ..errors import HiveMemError, InvalidInput, MissingDependency
from ..types import Kind, Memory, Source, Status

if TYPE_CHECKING:  # pragma: no cover
    from ..store.handles import ScopedHandle

log = logging.getLogger("hivemem.lifecycle.notes")

KEY_PREFIX = "file:"
NOTE_TYPE = "reference"
_PAGE = 1000
_SKIPPED_DIRS = {"node_modules", "__pycache__"}


@dataclass
class IndexReport:
    """What one pass over a folder did. ``skipped`` lists (relative path, reason)."""

    folder: str
    scope: str
    files: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.updated or self.removed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "folder": self.folder,
            "scope": self.scope,
            "files": self.files,
            "added": self.added,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "removed": self.removed,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
        }

    def __str__(self) -> str:
        return (
            f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, "
            f"{self.removed} removed, {len(self.skipped)} skipped"
        )


def note_key(path: Path, max_chars: int) -> str:
    """``file:<absolute path>``; a path too long for a key keeps its tail after a hash
    of the whole (still one key per path)."""
    text = KEY_PREFIX + path.as_posix()
    if len(text) <= max_chars:
        return text
    digest = hashlib.sha256(path.as_posix().encode("utf-8", "surrogateescape")).hexdigest()[:24]
    room = max_chars - len(KEY_PREFIX) - len(digest) - 2
    return f"{KEY_PREFIX}{digest}:…{path.as_posix()[-room:]}"


def resolve_folder(folder: str | os.PathLike[str]) -> Path:
    """The folder as an absolute path; ``InvalidInput`` when it is not a folder."""
    root = arguments.path(folder, "folder").expanduser()
    try:
        root.stat()
    except FileNotFoundError:
        raise InvalidInput("folder", f"{root} does not exist") from None
    except OSError as exc:  # "File name too long", "Permission denied", a loop of links
        raise InvalidInput("folder", f"cannot be read: {exc.strerror or exc}") from None
    if not root.is_dir():
        raise InvalidInput("folder", f"{root} is not a folder")
    return root.resolve()


def extensions_of(setting: str) -> tuple[str, ...]:
    out = []
    for part in setting.split(","):
        ext = part.strip().lower()
        if ext:
            out.append(ext if ext.startswith(".") else "." + ext)
    if not out:
        raise InvalidInput("notes_extensions", "lists no file extension")
    return tuple(out)


def note_files(root: Path, extensions: tuple[str, ...]) -> list[Path]:
    """The note files under ``root``, sorted; hidden files and folders are left out and
    symbolic links to folders are not followed (no cycles)."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and d not in _SKIPPED_DIRS
        )
        for name in filenames:
            if not name.startswith(".") and name.lower().endswith(extensions):
                found.append(Path(dirpath, name))
    return sorted(found)


def folder_notes(mem: ScopedHandle, root: Path) -> dict[str, Memory]:
    """The active notes of ``mem``'s own scope indexed from ``root``, by key."""
    out: dict[str, Memory] = {}
    offset = 0
    while True:
        page = mem.list(kind=Kind.NOTE, status=Status.ACTIVE, limit=_PAGE, offset=offset)
        for memory in page:
            if memory.scope == mem.name and memory.attributes.get("folder") == str(root):
                out[memory.key or memory.id] = memory
        if len(page) < _PAGE:
            return out
        offset += _PAGE


def index_folder(
    mem: ScopedHandle,
    folder: str | os.PathLike[str],
    *,
    progress: Callable[[int], None] | None = None,
    on_start: Callable[[int], None] | None = None,
) -> IndexReport:
    """Index the notes under ``folder`` into ``mem``'s own scope (see the module
    docstring). ``on_start(total)`` is called once the files are counted and
    ``progress(1)`` after each file (a progress bar). Raises ``InvalidInput`` for a
    missing folder; per-file problems are reported in ``skipped``, never raised."""
    progress = arguments.callback(progress, "progress")
    on_start = arguments.callback(on_start, "on_start")
    root = resolve_folder(folder)
    settings = mem.settings
    files = note_files(root, extensions_of(settings.notes_extensions))
    report = IndexReport(folder=str(root), scope=mem.name, files=len(files))
    if on_start is not None:
        on_start(len(files))
    existing = folder_notes(mem, root)
    present: set[str] = set()
    for path in files:
        key = note_key(path, settings.max_key_chars)
        present.add(key)
        _index_file(mem, root, path, key, existing.get(key), report)
        if progress is not None:
            progress(1)
    for key, memory in existing.items():
        if key not in present:
            mem.delete(memory.id, updated_by="file_index")
            report.removed += 1
    return report


def _index_file(
    mem: ScopedHandle,
    root: Path,
    path: Path,
    key: str,
    current: Memory | None,
    report: IndexReport,
) -> None:
    relative = path.relative_to(root).as_posix()
    settings = mem.settings
    now = mem.store.clock()  # (tests move it)

    def skip(reason: str) -> None:
        report.skipped.append((relative, reason))
        log.info("notes: skipped %s: %s", relative, reason)  # the report carries it

    try:
        stat = path.stat()
    except OSError as exc:
        return skip(f"cannot read: {exc.strerror or exc}")
    fresh = current is not None and not current.is_expired(now)
    recorded = current.attributes if current is not None else {}
    if (
        fresh
        and recorded.get("size") == stat.st_size
        and recorded.get("mtime_ns") == stat.st_mtime_ns
    ):
        report.unchanged += 1
        return None
    if stat.st_size > settings.notes_max_file_bytes:
        return skip(
            f"{stat.st_size} bytes is over the limit of {settings.notes_max_file_bytes} "
            "(setting notes_max_file_bytes)"
        )
    try:
        data = path.read_bytes()
    except OSError as exc:
        return skip(f"cannot read: {exc.strerror or exc}")
    sha = hashlib.sha256(data).hexdigest()
    if fresh and recorded.get("sha256") == sha:
        report.unchanged += 1  # touched, not changed
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        return skip(f"not UTF-8 text (byte {exc.start})")
    if not text.strip():
        return skip("empty")
    attributes = {
        "folder": str(root),
        "path": relative,
        "sha256": sha,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
    }
    try:
        mem.save(
            text,
            key=key,
            kind=Kind.NOTE,
            type=current.type if current is not None else NOTE_TYPE,
            source=Source.FILE_INDEX,
            attributes=attributes,
            supersede_reason=(
                None
                if current is None
                else "file changed"
                if recorded.get("sha256") != sha
                else "expired, file unchanged"
            ),
            updated_by="file_index",
        )
    except HiveMemError as exc:
        return skip(str(exc))
    if current is None:
        report.added += 1
    else:
        report.updated += 1
    return None


def require_watchfiles() -> Any:
    """The ``watchfiles`` module, or ``MissingDependency`` with the install command (the
    CLI asks before it says it is watching)."""
    try:
        import watchfiles
    except ImportError:
        raise MissingDependency("watching a notes folder", "pip install 'hivemem[watch]'") from None
    return watchfiles


def watch_folder(
    mem: ScopedHandle,
    folder: str | os.PathLike[str],
    *,
    on_report: Callable[[IndexReport], None] | None = None,
    stop_event: threading.Event | None = None,
    debounce_ms: int = 300,
) -> int:
    """Index ``folder``, then again after every change under it, until ``stop_event``
    is set (or Ctrl-C). ``on_report`` gets each pass's report. Returns the number of
    passes. Needs ``hivemem[watch]``."""
    on_report = arguments.callback(on_report, "on_report")
    watchfiles = require_watchfiles()
    root = resolve_folder(folder)
    passes = 0

    def run_pass() -> None:
        nonlocal passes
        report = index_folder(mem, root)
        passes += 1
        if on_report is not None:
            on_report(report)

    run_pass()
    for _changes in watchfiles.watch(
        root,
        stop_event=stop_event,
        debounce=debounce_ms,
        raise_interrupt=False,
        yield_on_timeout=False,
        rust_timeout=500,
    ):
        run_pass()
    return passes
