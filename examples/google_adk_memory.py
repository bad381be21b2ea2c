"""Google ADK with HiveMem as its memory service: a finished session goes in, and a later
search (what ADK's load_memory tool calls) finds it.

    pip install 'hivemem[google-adk]'
    python examples/google_adk_memory.py [DB_PATH]

In an app: ``Runner(agent=..., app_name="shop", session_service=...,
memory_service=HiveMemMemoryService(store))``; here ADK's own session service makes the
session, so no model is needed.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from google.adk.events import Event
from google.adk.sessions import InMemorySessionService
from google.genai import types

import hivemem
from hivemem.integrations.google_adk import HiveMemMemoryService


async def remember(service: HiveMemMemoryService) -> list[str]:
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="shop", user_id="ada")
    for author, text in [("user", "My shoe size is 38"), ("model", "Noted: size 38.")]:
        part = types.Part(text=text)
        event = Event(author=author, content=types.Content(role=author, parts=[part]))
        await sessions.append_event(session, event)
    await service.add_session_to_memory(session)
    found = await service.search_memory(app_name="shop", user_id="ada", query="shoe size")
    return [f"{m.author}: {m.content.parts[0].text}" for m in found.memories]


def main(argv: list[str]) -> list[str]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(argv[0]) if argv else Path(folder) / "memory.db"
        with hivemem.open(path) as store:
            lines = asyncio.run(remember(HiveMemMemoryService(store)))[:1]
    print(*lines, sep="\n")
    return lines


if __name__ == "__main__":
    main(sys.argv[1:])
