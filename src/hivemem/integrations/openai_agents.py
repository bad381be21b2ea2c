"""HiveMem in the OpenAI Agents SDK: the tool table as function tools, and a ``Session``
whose items are episodes.

    import hivemem
    from agents import Agent, Runner
    from hivemem.integrations.openai_agents import HiveMemSession, function_tools

    memory = hivemem.open("memory.db").scope("agent-1")
    agent = Agent(name="assistant", tools=function_tools(memory, "core"))
    session = HiveMemSession(memory, "chat-1")
    Runner.run_sync(agent, "Remember: staging is db-stage-2", session=session)

The mapping (a translation; nothing here decides anything):

- ``function_tools(memory, profile)`` turns each tool of ``hivemem.tools`` (the table the
  MCP server and the HTTP API serve, ``docs/tools.md``) into a ``FunctionTool`` with the
  same name, description and JSON schema; a call runs ``hivemem.tools.call`` on the bound
  scope (a model never names a scope) and returns its JSON. A library error is returned
  to the model as ``{"error": {"type", "message"}}`` so it can correct its call.
- ``HiveMemSession(memory, session_id)`` keeps the conversation as episodes of
  ``session_id``: ``add_items`` stores each item (the item whole in ``attributes``, its
  text as the episode's content, so it is searchable and consolidated like any turn),
  ``get_items`` returns them oldest first, ``pop_item`` soft-deletes the newest,
  ``clear_session`` soft-deletes them all.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from . import require

require("agents", "openai-agents")

from agents import FunctionTool, RunContextWrapper  # noqa: E402 - after the dependency check

from .. import tools  # noqa: E402
from ..errors import HiveMemError  # noqa: E402
from ..facade.memory import ScopedMemory  # noqa: E402
from ..types import Memory  # noqa: E402

__all__ = ["HiveMemSession", "function_tools"]

_ITEM = "agents_item"
_PAGE = 1000


def _invoker(memory: ScopedMemory, name: str) -> Any:
    def run(arguments: str) -> str:
        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
            return json.dumps(tools.call(memory, name, parsed), ensure_ascii=False, default=str)
        except json.JSONDecodeError as exc:
            error = {"type": "InvalidInput", "message": f"arguments: not JSON ({exc.msg})"}
        except HiveMemError as exc:
            error = {"type": type(exc).__name__, "message": exc.message}
        return json.dumps({"error": error}, ensure_ascii=False)

    async def invoke(context: RunContextWrapper[Any], arguments: str) -> str:
        return await asyncio.to_thread(run, arguments)

    return invoke


def function_tools(memory: ScopedMemory, profile: str | None = None) -> list[FunctionTool]:
    """The tools of ``profile`` (``hivemem.tools.select``: ``None`` for all, ``core``,
    ``assistant`` …, or a comma-separated list of names) bound to ``memory``'s scope."""
    out = []
    for name in tools.select(profile):
        tool = tools.NAMED[name]
        out.append(
            FunctionTool(
                name=name,
                description=tool.description,
                params_json_schema=tools.tool_schema(name),
                on_invoke_tool=_invoker(memory, name),
                strict_json_schema=False,  # the table's schemas have optional arguments
            )
        )
    return out


def _text(item: dict[str, Any]) -> str:
    """What an item says, for search and consolidation: a message's text, else the item
    as JSON (a tool call, its output, a reasoning item)."""
    content = item.get("content")
    if isinstance(content, str) and content.strip():
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, dict)]
        text = "\n".join(p for p in parts if isinstance(p, str) and p.strip())
        if text:
            return text
    return json.dumps(item, ensure_ascii=False, sort_keys=True, default=str)


class HiveMemSession:
    """An Agents SDK ``Session`` (the protocol: ``get_items``, ``add_items``,
    ``pop_item``, ``clear_session``) over the episodes of one session of a scope."""

    session_settings = None

    def __init__(self, memory: ScopedMemory, session_id: str) -> None:
        self.memory = memory
        self.session_id = session_id

    def _episodes(self, limit: int | None = None) -> list[Memory]:
        """The session's episodes, newest first (``limit`` of them, or all)."""
        found: list[Memory] = []
        while limit is None or len(found) < limit:
            size = _PAGE if limit is None else min(_PAGE, limit - len(found))
            page = self.memory.list(
                kind="episode", session_id=self.session_id, limit=size, offset=len(found)
            )
            found += page
            if len(page) < size:
                break
        return found

    @staticmethod
    def _item(memory: Memory) -> Any:
        item = memory.attributes.get(_ITEM)
        return item if isinstance(item, dict) else {"role": memory.role, "content": memory.content}

    def _add(self, items: list[Any]) -> None:
        self.memory.add_episodes(
            {
                "content": _text(item),
                "session_id": self.session_id,
                "role": str(item.get("role") or item.get("type") or "item"),
                "attributes": {_ITEM: item},
            }
            for item in (dict(i) for i in items)
        )

    def _pop(self) -> Any:
        newest = self._episodes(1)
        if not newest:
            return None
        self.memory.delete(newest[0].id)
        return self._item(newest[0])

    def _clear(self) -> None:
        with self.memory.store.atomic():
            for memory in self._episodes():
                self.memory.delete(memory.id)

    async def get_items(self, limit: int | None = None) -> list[Any]:
        episodes = await asyncio.to_thread(self._episodes, limit)
        return [self._item(m) for m in reversed(episodes)]

    async def add_items(self, items: list[Any]) -> None:
        if items:
            await asyncio.to_thread(self._add, list(items))

    async def pop_item(self) -> Any:
        return await asyncio.to_thread(self._pop)

    async def clear_session(self) -> None:
        await asyncio.to_thread(self._clear)
