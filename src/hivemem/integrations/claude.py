"""Claude's memory tool (``memory_20250818``) over HiveMem: ``HiveMemMemoryTool``, a
handler for the anthropic SDK's memory-tool helper (``BetaAbstractMemoryTool``).

    import anthropic, hivemem
    from hivemem.integrations.claude import HiveMemMemoryTool

    tool = HiveMemMemoryTool(hivemem.open("memory.db").scope("claude"))
    runner = anthropic.Anthropic().beta.messages.tool_runner(
        model="claude-sonnet-4-5", max_tokens=1024, tools=[tool],
        messages=[{"role": "user", "content": "Remember that I take my coffee black"}],
    )

The mapping (a translation; every write goes through the facade):

- A file is the active memory keyed by its path (``/memories/notes/coffee.md``) in the
  handle's scope; its text is the memory's content, kept byte for byte. Directories are
  the paths' folders: they exist while a file is under them.
- ``create`` saves a new key; ``str_replace`` and ``insert`` correct the memory (a new
  version superseding the old: ``mem.history(path)`` keeps every edit); ``delete`` is
  HiveMem's soft delete (of a file, or of every file under a directory); ``rename``
  saves the text under the new path with ``source_ids`` naming the old version, then
  deletes the old path, in one transaction.
- Paths are confined to ``/memories``: a path must be ``/memories`` or start with
  ``/memories/``; ``.`` and ``..`` segments are resolved first and a path that leaves
  the root is refused. Nothing touches a file system, so there are no links to follow;
  an encoded ``%2e%2e`` or a backslash is an ordinary character of a name.
- Results and error texts are those of the SDK's own ``BetaLocalFilesystemMemoryTool``
  (the texts the tool's documentation gives); an error is a ``ToolError``, which the
  SDK's tool runner returns to Claude as an error result. A ``HiveMemError`` (an empty
  file, a vault secret under ``credential_policy="reject"``) becomes one too.
- What differs from files: a file cannot be empty (HiveMem keeps no empty memory), and
  a directory cannot exist without a file in it.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from . import require

require("anthropic.lib.tools", "anthropic")

from anthropic.lib.tools import (  # noqa: E402 - after the dependency check
    BetaAbstractMemoryTool,
    BetaAsyncAbstractMemoryTool,
    ToolError,
)
from anthropic.types.beta import (  # noqa: E402
    BetaMemoryTool20250818Command,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)
from anyio import to_thread  # noqa: E402

from ..errors import HiveMemError  # noqa: E402
from ..facade.memory import ScopedMemory  # noqa: E402
from ..types import Memory  # noqa: E402

__all__ = ["HiveMemAsyncMemoryTool", "HiveMemMemoryTool"]

ROOT = "/memories"
_WIDTH = 6  # line numbers, right-aligned: as the SDK's file tool prints them
_MAX_LINES = 999_999
_T = TypeVar("_T")
# What each command needs (the SDK builds commands without validating them).
_PARAMETERS: dict[str, dict[str, type]] = {
    "view": {"path": str},
    "create": {"path": str, "file_text": str},
    "str_replace": {"path": str, "old_str": str, "new_str": str},
    "insert": {"path": str, "insert_line": int, "insert_text": str},
    "delete": {"path": str},
    "rename": {"old_path": str, "new_path": str},
}


def _size(count: int) -> str:
    """A size as the SDK's file tool prints it: 0B, 512B, 1.5K, 2M."""
    if count == 0:
        return "0B"
    unit = min((count.bit_length() - 1) // 10, 3)
    value = count / (1024**unit)
    shown = f"{int(value)}" if value == int(value) else f"{value:.1f}"
    return shown + "BKMG"[unit]


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(f"{str(n).rjust(_WIDTH)}\t{line}" for n, line in enumerate(lines, first))


class HiveMemMemoryTool(BetaAbstractMemoryTool):
    """The memory tool's six commands over the files of one ``ScopedMemory``."""

    def __init__(self, memory: ScopedMemory, **options: Any) -> None:
        super().__init__(**options)
        self.memory = memory

    # ------------------------------------------------------------------ paths and files

    @staticmethod
    def _path(path: str) -> str:
        """The normalised path of a command, confined to the root (or a ToolError)."""
        if not isinstance(path, str) or not (path == ROOT or path.startswith(ROOT + "/")):
            raise ToolError(f"Path must start with {ROOT}, got: {path}")
        clean = posixpath.normpath(path)
        if clean.startswith("//"):
            clean = clean[1:]  # POSIX keeps a leading double slash; a path has one root
        if not (clean == ROOT or clean.startswith(ROOT + "/")):
            raise ToolError(f"Path {path} would escape {ROOT} directory")
        return clean

    def _files(self, under: str = ROOT) -> dict[str, Memory]:
        """Every file below the directory ``under``, by path."""
        prefix = under.rstrip("/") + "/"
        files: dict[str, Memory] = {}
        offset, page = 0, 1000
        while True:
            batch = self.memory.list(limit=page, offset=offset)
            for memory in batch:
                if memory.key and memory.key.startswith(prefix):
                    files[memory.key] = memory
            if len(batch) < page:
                return files
            offset += page

    def _file(self, path: str) -> Memory | None:
        found = self.memory.list(key=path, limit=1)
        return found[0] if found else None

    def _read(self, path: str, shown: str) -> Memory:
        memory = self._file(path)
        if memory is None:
            if self._files(path):
                raise ToolError(f"The path {shown} is not a file.")
            raise ToolError(f"The path {shown} does not exist. Please provide a valid path.")
        return memory

    def _refuse_file_above(self, path: str, shown: str) -> None:
        parent = posixpath.dirname(path)
        while parent != ROOT:
            if self._file(parent) is not None:
                raise ToolError(f"The path {shown} is below the file {parent}")
            parent = posixpath.dirname(parent)

    @contextmanager
    def _translated(self) -> Iterator[None]:
        """A ``HiveMemError`` reaches Claude as the tool's error, with its message."""
        try:
            yield
        except HiveMemError as exc:
            raise ToolError(str(exc)) from exc

    def run(self, command: BetaMemoryTool20250818Command) -> Any:
        """Check the command's parameters, then run it; what the SDK's ``call`` runs."""
        which = getattr(command, "command", None)
        if which not in _PARAMETERS:
            raise ToolError(f"Unknown command: {which}")
        for name, kind in _PARAMETERS[which].items():
            value = getattr(command, name, None)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise ToolError(f"Parameter `{name}` is required for command: {which}")
        with self._translated():
            return getattr(self, which)(command)

    execute = run  # the SDK dispatches through ``execute``

    # ------------------------------------------------------------------ the six commands

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        path = self._path(command.path)
        memory = self._file(path)
        if memory is not None:
            lines = memory.content.split("\n")
            if len(lines) > _MAX_LINES:
                raise ToolError(f"File {command.path} exceeds maximum line limit of 999,999 lines.")
            first = 1
            if command.view_range and len(command.view_range) == 2:
                start, end = command.view_range
                first = max(1, start)
                lines = lines[first - 1 : len(lines) if end == -1 else end]
            header = f"Here's the content of {command.path} with line numbers:\n"
            return header + _numbered(lines, first)
        files = self._files(path)
        if not files and path != ROOT:
            raise ToolError(f"The path {command.path} does not exist. Please provide a valid path.")
        return self._listing(command.path, path, files)

    def _listing(self, shown: str, path: str, files: dict[str, Memory]) -> str:
        sizes: dict[str, int] = {}
        folders: set[str] = set()
        for key, memory in files.items():
            parts = key[len(path) + 1 :].split("/")
            if any(part.startswith(".") for part in parts[:2]):
                continue  # hidden items are left out, as the file tool leaves them out
            size = len(memory.content.encode("utf-8"))
            for depth in range(1, min(len(parts), 2) + 1):
                entry = "/".join(parts[:depth])
                sizes[entry] = sizes.get(entry, 0) + size
                if depth < len(parts):
                    folders.add(entry)
        header = (
            f"Here're the files and directories up to 2 levels deep in {shown}, "
            "excluding hidden items:"
        )
        lines = [f"{_size(sum(len(m.content.encode()) for m in files.values()))}\t{shown}"]
        for entry in sorted(sizes, key=lambda e: e.split("/")):
            name = entry + "/" if entry in folders else entry
            lines.append(f"{_size(sizes[entry])}\t{shown}/{name}")
        return header + "\n" + "\n".join(lines)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        path = self._path(command.path)
        if path == ROOT or self._file(path) is not None or self._files(path):
            raise ToolError(f"File {command.path} already exists")
        self._refuse_file_above(path, command.path)
        self.memory.save(command.file_text, key=path)
        return f"File created successfully at: {command.path}"

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        path = self._path(command.path)
        memory = self._read(path, command.path)
        content, old = memory.content, command.old_str
        count = content.count(old)
        if count == 0:
            raise ToolError(
                f"No replacement was performed, old_str `{old}` did not appear verbatim "
                f"in {command.path}."
            )
        if count > 1:
            at: list[int] = []
            start = 0
            while (found := content.find(old, start)) != -1:
                at.append(content[:found].count("\n") + 1)
                start = found + 1
            raise ToolError(
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in "
                f"lines: {', '.join(map(str, at))}. Please ensure it is unique"
            )
        changed = content[: content.find(old)].count("\n")
        new = self.memory.correct(memory.id, content.replace(old, command.new_str), reason="edit")
        lines = new.content.split("\n")
        first = max(0, changed - 2)
        return (
            "The memory file has been edited. Here is the snippet showing the change "
            "(with line numbers):\n"
            + _numbered(lines[first : min(len(lines), changed + 3)], first + 1)
        )

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        path = self._path(command.path)
        memory = self._read(path, command.path)
        lines = memory.content.split("\n")
        if lines[-1] == "":
            lines.pop()
        if command.insert_line < 0 or command.insert_line > len(lines):
            raise ToolError(
                f"Invalid `insert_line` parameter: {command.insert_line}. "
                f"It should be within the range [0, {len(lines)}]."
            )
        lines.insert(command.insert_line, command.insert_text.rstrip("\n"))
        content = "\n".join(lines)
        self.memory.correct(memory.id, content if content.endswith("\n") else content + "\n")
        return f"The file {command.path} has been edited."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        path = self._path(command.path)
        if path == ROOT:
            raise ToolError(f"Cannot delete the {ROOT} directory itself")
        memory = self._file(path)
        doomed = [memory] if memory is not None else list(self._files(path).values())
        if not doomed:
            raise ToolError(f"The path {command.path} does not exist")
        with self.memory.store.atomic():
            for each in doomed:
                self.memory.delete(each.id)
        return f"Successfully deleted {command.path}"

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        old, new = self._path(command.old_path), self._path(command.new_path)
        if old == ROOT:
            raise ToolError(f"Cannot rename the {ROOT} directory itself")
        if new == ROOT or self._file(new) is not None or self._files(new):
            raise ToolError(f"The destination {command.new_path} already exists")
        memory = self._file(old)
        moves = {old: memory} if memory is not None else self._files(old)
        if not moves:
            raise ToolError(f"The path {command.old_path} does not exist")
        if new == old or new.startswith(old + "/"):
            raise ToolError(f"Cannot move {command.old_path} into itself")
        self._refuse_file_above(new, command.new_path)
        with self.memory.store.atomic():
            for path, each in moves.items():
                self.memory.save(
                    each.content,
                    key=new + path[len(old) :],
                    source_ids=[each.id],
                    attributes={**each.attributes, "renamed_from": path},
                )
                self.memory.delete(each.id)
        return f"Successfully renamed {command.old_path} to {command.new_path}"

    def clear_all_memory(self) -> str:
        with self._translated(), self.memory.store.atomic():
            for memory in self._files().values():
                self.memory.delete(memory.id)
        return "All memory cleared"


class HiveMemAsyncMemoryTool(BetaAsyncAbstractMemoryTool):
    """The same tool for the SDK's async client: each command runs ``HiveMemMemoryTool``'s
    in a worker thread (the library is synchronous by design)."""

    def __init__(self, memory: ScopedMemory, **options: Any) -> None:
        super().__init__(**options)
        self.tool = HiveMemMemoryTool(memory)

    async def _run(self, method: Callable[[Any], _T], command: Any) -> _T:
        return await to_thread.run_sync(method, command)

    async def call(self, input: object) -> Any:  # noqa: A002 - the SDK's name
        return await to_thread.run_sync(self.tool.call, input)

    async def execute(self, command: BetaMemoryTool20250818Command) -> Any:
        return await self._run(self.tool.run, command)

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await self._run(self.tool.view, command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await self._run(self.tool.create, command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await self._run(self.tool.str_replace, command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await self._run(self.tool.insert, command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await self._run(self.tool.delete, command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await self._run(self.tool.rename, command)

    async def clear_all_memory(self) -> str:
        return await to_thread.run_sync(self.tool.clear_all_memory)
