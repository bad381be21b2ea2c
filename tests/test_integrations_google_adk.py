"""HiveMemMemoryService through the real google-adk package (pinned in
requirements-dev.lock): sessions made by ADK's own session service go in, and a search
finds what ADK's InMemoryMemoryService finds (its keyword match is the reference) and
more (HiveMem's search ranks, and keeps across sessions and restarts)."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from google.adk.events import Event
from google.adk.memory import InMemoryMemoryService
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions import InMemorySessionService
from google.genai import types

import hivemem
from hivemem.integrations.google_adk import HiveMemMemoryService

TURNS = [
    ("user", "I take my coffee with oat milk"),
    ("assistant", "Noted, oat milk."),
    ("user", "Our staging database is Postgres 16"),
]


async def _session(turns, session_id="s1", start=1767268800.0):
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name="shop", user_id="ada", session_id=session_id)
    for n, (author, text) in enumerate(turns):
        event = Event(
            author=author,
            content=types.Content(
                role="user" if author == "user" else "model", parts=[types.Part(text=text)]
            ),
            timestamp=start + n,
        )
        await sessions.append_event(session, event)
    return await sessions.get_session(app_name="shop", user_id="ada", session_id=session_id)


@pytest.fixture
def service(store):
    return HiveMemMemoryService(store)


def test_a_session_goes_in_once_and_is_found_as_adk_finds_it(service, store):
    async def run():
        session = await _session(TURNS)
        reference = InMemoryMemoryService()
        for target in (service, reference):
            await target.add_session_to_memory(session)
        await service.add_session_to_memory(session)  # again: nothing doubles
        ours = await service.search_memory(app_name="shop", user_id="ada", query="oat milk coffee")
        theirs = await reference.search_memory(
            app_name="shop", user_id="ada", query="oat milk coffee"
        )
        return session, ours, theirs

    session, ours, theirs = asyncio.run(run())
    episodes = store.scope("adk:shop:ada").list(kind="episode", limit=100)
    assert len(episodes) == 3 and {e.session_id for e in episodes} == {session.id}
    assert {m.id for m in theirs.memories} <= {e.attributes["adk_event_id"] for e in episodes}
    found = [_text(m) for m in ours.memories]
    assert found[0] == "I take my coffee with oat milk"
    assert {_text(m) for m in theirs.memories} <= set(found)
    first = ours.memories[0]
    assert first.author == "user" and first.content.role == "user"
    assert first.timestamp.startswith("2026-01-01T12:00:00")


def _text(entry: MemoryEntry) -> str:
    return "".join(p.text for p in entry.content.parts)


def test_events_and_explicit_memories_and_scopes_apart(service, store):
    async def run():
        session = await _session(TURNS[:1])
        await service.add_events_to_memory(
            app_name="shop", user_id="ada", events=session.events, session_id="s9"
        )
        entry = MemoryEntry(content=types.Content(parts=[types.Part(text="Ada's size is 38")]))
        await service.add_memory(app_name="shop", user_id="ada", memories=[entry])
        mine = await service.search_memory(app_name="shop", user_id="ada", query="size")
        other = await service.search_memory(app_name="shop", user_id="bob", query="size")
        return mine, other

    mine, other = asyncio.run(run())
    assert [_text(m) for m in mine.memories] == ["Ada's size is 38"] and other.memories == []
    assert store.scope("adk:shop:ada").list(kind="episode")[0].session_id == "s9"


def test_a_vault_secret_never_comes_back(service, store):
    secret = "hunter2-Zq8v-very-secret"
    store.vault("adk:shop:ada").set("db", secret, secret=True)

    async def run():
        session = await _session([("user", f"the db password is {secret}")])
        await service.add_session_to_memory(session)
        return await service.search_memory(app_name="shop", user_id="ada", query="db password")

    found = asyncio.run(run())
    assert found.memories and all(secret not in _text(m) for m in found.memories)


def test_memory_survives_a_restart(db_path):
    with hivemem.open(db_path, embedder="hash") as store:
        asyncio.run(HiveMemMemoryService(store).add_session_to_memory(asyncio.run(_session(TURNS))))
    with hivemem.open(db_path, embedder="hash") as store:
        found = asyncio.run(
            HiveMemMemoryService(store).search_memory(
                app_name="shop", user_id="ada", query="Postgres"
            )
        )
        assert _text(found.memories[0]) == "Our staging database is Postgres 16"


def test_without_adk_the_import_names_the_extra():
    code = (
        "import sys; sys.modules['google.adk'] = None\n"
        "import hivemem\n"
        "try:\n"
        "    import hivemem.integrations.google_adk\n"
        "except hivemem.MissingDependency as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'hivemem[google-adk]'" in done.stdout, done.stderr
