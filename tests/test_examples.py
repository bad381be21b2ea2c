"""The examples run: examples/agent_loop.py wires the ContextProvider into a chat loop."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hivemem

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture
def agent_loop(monkeypatch):
    spec = importlib.util.spec_from_file_location("agent_loop", EXAMPLES / "agent_loop.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "agent_loop", module)  # dataclasses look it up
    spec.loader.exec_module(module)
    return module


def test_agent_loop_remembers_across_sessions(agent_loop, db_path, capsys):
    turns = agent_loop.main([str(db_path)], model=agent_loop.fake_model, embedder="hash")
    first, second, later = turns
    assert (first.session_id, later.session_id) == ("monday", "thursday")
    # every turn's system message: the instructions, then the memory block
    for turn in turns:
        assert turn.system.startswith(agent_loop.INSTRUCTIONS + "\n\n## Memory\n")
        assert "- **who**: You are Ada, the release assistant of the payments team." in turn.system
    # what turn 1 said is in the system prompt of a turn in a NEW session, dated
    assert first.user not in first.system and first.user not in second.system
    assert f"user: {first.user}" in later.system
    assert "Relevant from earlier sessions" in later.system
    assert later.reply.startswith("From an earlier conversation I remember:")
    assert later.system in capsys.readouterr().out
    # and every turn was recorded as an episode
    with hivemem.open(db_path, embedder="hash") as store:
        mem = store.scope("payments-assistant")
        episodes = mem.list(kind="episode")
        assert len(episodes) == 2 * len(turns)
        assert {m.session_id for m in episodes} == {"monday", "thursday"}


def test_agent_loop_is_repeatable_on_the_same_store(agent_loop, db_path):
    agent_loop.main([str(db_path)], model=agent_loop.fake_model, embedder="hash")
    again = agent_loop.main([str(db_path)], model=agent_loop.fake_model, embedder="hash")
    assert again[0].system.count("You are Ada") == 1  # the identity save was a no-op


def _run_example(name: str, tmp_path: Path) -> list[str]:
    """Run an example as a reader would: its own process, this install's Python."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HIVEMEM_")}
    env["HIVEMEM_EMBEDDER"] = "hash"  # the served store; the examples' own stores use the model
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), str(tmp_path / "example.db")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_openai_tool_loop_saves_then_finds_through_the_tools(tmp_path):
    lines = _run_example("openai_tool_loop.py", tmp_path)
    assert lines == ["Saved.", "I found: Our staging database is Postgres 16 on db-stage-2."]
    with hivemem.open(tmp_path / "example.db", embedder="none") as store:
        [saved] = store.scope("agent-1").list()
        assert saved.content.startswith("Our staging database")


def test_mem0_switch_keeps_the_calls_and_the_history(tmp_path):
    assert _run_example("mem0_switch.py", tmp_path) == [
        "add: ADD, again: NONE",
        "search: I live in Berlin",
        "history: [('ADD', 'I live in Berlin'), ('UPDATE', 'I live in Munich')]",
        "after delete_all: 0 memories",
    ]


def test_mcp_client_config_starts_the_server_as_a_client_does(tmp_path):
    pytest.importorskip("mcp")
    lines = _run_example("mcp_client_config.py", tmp_path)
    config = json.loads("\n".join(lines[:-2]))
    server = config["mcpServers"]["memory"]
    assert Path(server["command"]).is_absolute()
    assert server["args"][:2] == ["--db", str((tmp_path / "example.db").resolve())]
    assert lines[-2].startswith("tools: memory_save, memory_search")
    assert lines[-1] == "search: Never deploy on Fridays"


def test_langgraph_store_recalls_across_threads(tmp_path):
    assert _run_example("langgraph_store.py", tmp_path) == [
        "Noted.",
        "I recall: I drink oat milk in my coffee",
        "Nothing yet.",
        "namespaces: [('users', 'ada')]",
    ]
    with hivemem.open(tmp_path / "example.db", embedder="none") as store:
        [fact] = store.scope("users.ada").list()
        assert fact.attributes["value"] == {"text": "I drink oat milk in my coffee"}


def test_claude_memory_tool_keeps_every_edit(tmp_path):
    assert _run_example("claude_memory_tool.py", tmp_path) == [
        "Here're the files and directories up to 2 levels deep in /memories, "
        "excluding hidden items:",
        "File created successfully at: /memories/coffee.md",
        "The memory file has been edited. Here is the snippet showing the change "
        "(with line numbers):",
        "versions: ['Takes coffee black', 'Takes coffee with oat milk']",
    ]


def test_openai_agents_session_keeps_turns_and_tools_find_facts(tmp_path):
    items, found = _run_example("openai_agents_session.py", tmp_path)
    assert items == "session items: 1"
    # the saved fact or the turn that said it: both hold the answer, equally by keyword
    assert found.lower() in (
        "found: staging is postgres 16 on db-stage-2",
        "found: remember: staging is postgres 16 on db-stage-2",
    )
    with hivemem.open(tmp_path / "example.db", embedder="none") as store:
        [turn] = store.scope("agent-1").list(kind="episode")
        assert (turn.session_id, turn.role) == ("chat-1", "user")


def test_llamaindex_memory_brings_monday_into_thursday(tmp_path):
    [line] = _run_example("llamaindex_memory.py", tmp_path)
    assert line.endswith("user: I take my coffee with oat milk, never cow milk.")
    with hivemem.open(tmp_path / "example.db", embedder="none") as store:
        episodes = store.scope("assistant").list(kind="episode")
        assert episodes and {e.session_id for e in episodes} == {"monday"}


def test_google_adk_memory_finds_the_session(tmp_path):
    assert _run_example("google_adk_memory.py", tmp_path) == ["user: My shoe size is 38"]
    with hivemem.open(tmp_path / "example.db", embedder="none") as store:
        assert len(store.scope("adk:shop:ada").list(kind="episode")) == 2


def test_every_example_is_run_by_a_test():
    source = Path(__file__).read_text()
    for example in EXAMPLES.glob("*.py"):
        assert example.name in source, f"{example.name} has no test"
