"""HiveMem as Google ADK's memory: ``HiveMemMemoryService``, a
``google.adk.memory.BaseMemoryService``.

    import hivemem
    from google.adk.runners import Runner
    from hivemem.integrations.google_adk import HiveMemMemoryService

    memories = HiveMemMemoryService(hivemem.open("memory.db"))
    runner = Runner(agent=agent, app_name="shop", session_service=..., memory_service=memories)

The mapping (a translation; the library searches and keeps):

- ``(app_name, user_id)`` is scope ``adk:<app_name>:<user_id>``.
- ``add_session_to_memory`` and ``add_events_to_memory`` store each event with text as
  an episode of its session (author as role, the event's time as ``event_time``, its id
  in ``attributes``); an event already stored is skipped, so a session may be added
  again as it grows.
- ``add_memory`` saves each ``MemoryEntry``'s text as a fact.
- ``search_memory`` is HiveMem's hybrid search over the scope (current versions), each
  hit a ``MemoryEntry`` (its id, text, author, ISO time).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from . import require

require("google.adk.memory", "google-adk")

from google.adk.memory import BaseMemoryService  # noqa: E402 - after the dependency check
from google.adk.memory.base_memory_service import SearchMemoryResponse  # noqa: E402
from google.adk.memory.memory_entry import MemoryEntry  # noqa: E402
from google.genai import types  # noqa: E402

from ..facade.database import Store  # noqa: E402
from ..facade.memory import ScopedMemory  # noqa: E402
from ..types import Memory  # noqa: E402

__all__ = ["HiveMemMemoryService"]

_EVENT = "adk_event_id"
_NO_SESSION = "adk-events"


def _text(content: Any) -> str:
    parts = getattr(content, "parts", None) or []
    return "\n".join(p.text for p in parts if getattr(p, "text", None))


class HiveMemMemoryService(BaseMemoryService):
    """ADK's memory service over a HiveMem ``Store`` (one scope per app and user)."""

    def __init__(self, store: Store, *, limit: int = 10) -> None:
        self.store = store
        self.limit = limit

    def _scope(self, app_name: str, user_id: str) -> ScopedMemory:
        return self.store.scope(f"adk:{app_name}:{user_id}")

    def _add_events(self, memory: ScopedMemory, session_id: str, events: Sequence[Any]) -> None:
        stored = {
            m.attributes.get(_EVENT)
            for m in memory.list(kind="episode", session_id=session_id, limit=10_000)
        }
        items = []
        for event in events:
            text = _text(event.content)
            if not text or event.id in stored:
                continue
            stored.add(event.id)
            when = datetime.fromtimestamp(event.timestamp, UTC) if event.timestamp else None
            items.append(
                {
                    "content": text,
                    "session_id": session_id,
                    "role": event.author or "user",
                    "event_time": when,
                    "attributes": {_EVENT: event.id},
                }
            )
        if items:
            memory.add_episodes(items)

    async def add_session_to_memory(self, session: Any) -> None:
        memory = self._scope(session.app_name, session.user_id)
        await asyncio.to_thread(self._add_events, memory, session.id, list(session.events))

    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Any],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        memory = self._scope(app_name, user_id)
        await asyncio.to_thread(self._add_events, memory, session_id or _NO_SESSION, list(events))

    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        memory = self._scope(app_name, user_id)

        def save() -> None:
            with self.store.atomic():
                for entry in memories:
                    memory.save(_text(entry.content), attributes=dict(entry.custom_metadata))

        await asyncio.to_thread(save)

    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        memory = self._scope(app_name, user_id)
        hits = await asyncio.to_thread(memory.search, query, self.limit, status="active")
        return SearchMemoryResponse(memories=[self._entry(h.memory) for h in hits])

    @staticmethod
    def _entry(memory: Memory) -> MemoryEntry:
        author = memory.role or "memory"
        role = "user" if author == "user" else "model"
        when = memory.event_time or memory.created_at
        return MemoryEntry(
            id=memory.id,
            content=types.Content(role=role, parts=[types.Part(text=memory.content)]),
            author=author,
            timestamp=when.isoformat(),
        )
