"""HiveMemMemoryBlock inside the real LlamaIndex ``Memory`` (llama-index-core, pinned in
requirements-dev.lock): the turns LlamaIndex flushes out of its short-term memory become
episodes, and a later session's prompt carries HiveMem's context for its question."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest
from llama_index.core.base.llms.types import ChatMessage
from llama_index.core.memory import Memory

from hivemem.integrations.llamaindex import HiveMemMemoryBlock


@pytest.fixture
def block(mem):
    return HiveMemMemoryBlock(memory=mem)


def _chat(block, session, turns, token_limit=60):
    memory = Memory.from_defaults(
        session_id=session, memory_blocks=[block], token_limit=token_limit, token_flush_size=20
    )
    for role, text in turns:
        memory.put(ChatMessage(role=role, content=text))
    return memory


MONDAY = [
    ("user", "I take my coffee with oat milk, never cow milk."),
    ("assistant", "Noted: oat milk in your coffee."),
    ("user", "Our staging database is Postgres 16 on db-stage-2."),
    ("assistant", "Got it, staging runs Postgres 16."),
    ("user", "The release train leaves every second Tuesday."),
    ("assistant", "Thanks, releases every second Tuesday."),
]


def test_flushed_turns_become_episodes_of_their_session(mem, block):
    memory = _chat(block, "monday", MONDAY)
    kept = memory.get()  # the short-term memory still holds the latest turns
    episodes = mem.list(kind="episode", session_id="monday", limit=100)
    assert episodes, "LlamaIndex flushed nothing into the block"
    assert {e.role for e in episodes} <= {"user", "assistant"}
    flushed = {e.content for e in episodes}
    assert MONDAY[0][1] in flushed
    assert all(m.content not in flushed for m in kept if m.role.value != "system")


def test_a_later_session_gets_hivemem_context_for_its_question(mem, block, store):
    _chat(block, "monday", MONDAY)
    store.flush()
    later = _chat(block, "thursday", [("user", "hello again")], token_limit=3000)
    messages = later.get(input="what milk do I take in my coffee?")
    system = messages[0]
    assert system.role.value == "system"
    assert "oat milk" in system.content and "<HiveMem>" in system.content
    direct = asyncio.run(block.aget([ChatMessage(role="user", content="coffee milk")]))
    assert direct == mem.context(query="coffee milk")


def test_the_current_session_is_left_to_the_short_term_memory(mem, block):
    mem.add_episode("I moved to Lisbon", session_id="today", role="user")
    mem.add_episode("I lived in Berlin", session_id="last-year", role="user")
    asked = [ChatMessage(role="user", content="where do I live?")]
    text = asyncio.run(block.aget(asked, session_id="today"))
    assert "Berlin" in text and "Lisbon" not in text


def test_a_vault_secret_never_comes_back(store, mem, block):
    secret = "hunter2-Zq8v-very-secret"
    store.vault(mem.name).set("db", secret, secret=True)
    said = [ChatMessage(role="user", content=f"the db password is {secret}")]
    asyncio.run(block.aput(said, session_id="s1"))
    text = asyncio.run(block.aget([ChatMessage(role="user", content="db password")]))
    assert "password" in text and secret not in text


def test_without_llamaindex_the_import_names_the_extra():
    code = (
        "import sys; sys.modules['llama_index'] = None\n"
        "import hivemem\n"
        "try:\n"
        "    import hivemem.integrations.llamaindex\n"
        "except hivemem.MissingDependency as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'hivemem[llamaindex]'" in done.stdout, done.stderr
